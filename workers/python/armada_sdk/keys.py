"""Job keys and random streams, exactly as proto/armada/v1/job.proto documents them.

A job's key is the first 128 bits of BLAKE3 over its canonical text, whose parameters are
written as armada's Rust code writes them (floats in Rust's shortest round-trip form).
The worker checks every lease's key against its own computation, so a family that does
not compute what the coordinator keyed is refused before it runs.

Random streams: the seeds are armada's (a 32-byte BLAKE3 digest per stream, from the
job's environment root for streams every algorithm of a seed shares, from its algorithm
root for the algorithm's own), and the generator is numpy's: ``PCG64`` seeded with those
32 bytes read as a little-endian integer. That convention is this SDK's; Rust families use
ChaCha8 on the same seeds.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

import blake3
import numpy as np

#: The salt of every random stream's root (ServerInfo's ``stream_salt``); fixed for good.
STREAM_SALT = "armada-job-v2"

ParamValue = Union[bool, int, float, str]


def rust_float(x: float) -> str:
    """``x`` as Rust's ``{:?}`` writes an f64: shortest round trip, always with a ``.`` or
    an exponent, exponents without ``+`` or leading zeros (Python's ``repr`` switches to an
    exponent at the same magnitudes: below 1e-4 and from 1e16)."""
    if not math.isfinite(x):
        raise ValueError(f"{x} is not a finite float")
    text = repr(float(x))
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


def unusable_text(text: str) -> Optional[str]:
    """The first character a choice may not hold (a quote, a backslash, or a control
    character as Rust's ``char::is_control`` knows them: C0, DEL and C1), or None."""
    for c in text:
        if c in '"\\' or unicodedata.category(c) == "Cc":
            return c
    return None


def param_text(value: ParamValue) -> str:
    """One parameter value as the canonical text writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return rust_float(value)
    if isinstance(value, str):
        bad = unusable_text(value)
        if bad is not None:
            raise ValueError(f"{value!r}: a choice holds no quotes, backslashes or control characters (it has {bad!r})")
        return f'"{value}"'
    raise TypeError(f"{value!r} is not a parameter value")


def params_text(params: Mapping[str, ParamValue]) -> str:
    """``{name=value,...}`` sorted by name (empty parameters: ``{}``)."""
    return "{" + ",".join(f"{k}={param_text(params[k])}" for k in sorted(params)) + "}"


@dataclass(frozen=True)
class Job:
    """One cell of a sweep with its seed, as a lease carries it (defaults filled in)."""

    #: The family's name (for an extension's job, the extended family's).
    family: str
    #: The benchmark's name within the family.
    benchmark: str
    #: The algorithm's name within the family (or its extension).
    algorithm: str
    #: The seed index: every algorithm of a seed meets the same environment streams.
    seed: int
    #: The steps after the initial design.
    horizon: int
    #: The sweep's seed, from which every random stream derives.
    sweep_seed: int = 0
    #: The benchmark's parameters by name (defaults filled in).
    benchmark_params: Mapping[str, ParamValue] = field(default_factory=dict)
    #: The algorithm's parameters by name (defaults filled in).
    algorithm_params: Mapping[str, ParamValue] = field(default_factory=dict)

    def canonical(self, key_salt: str) -> str:
        """The canonical text under the family's key salt (RegisterResponse.key_salts)."""
        return (
            f"{key_salt};family={self.family};benchmark={self.benchmark}{params_text(self.benchmark_params)};"
            f"algorithm={self.algorithm}{params_text(self.algorithm_params)};seed={self.seed};"
            f"horizon={self.horizon};sweep_seed={self.sweep_seed}"
        )

    def key(self, key_salt: str) -> str:
        """The job's key: 32 lowercase hex digits."""
        return blake3.blake3(self.canonical(key_salt).encode()).digest()[:16].hex()


class JobStreams:
    """The named random streams of ``job``."""

    def __init__(self, job: Job):
        env_text = (
            f"{STREAM_SALT};streams;sweep_seed={job.sweep_seed};family={job.family};"
            f"benchmark={job.benchmark}{params_text(job.benchmark_params)};seed={job.seed}"
        )
        #: The root of the environment's streams (shared by every algorithm of the seed).
        self.environment_root = blake3.blake3(env_text.encode()).digest()
        algo_text = f"algorithm={job.algorithm}{params_text(job.algorithm_params)}"
        #: The root of the algorithm's own streams.
        self.algorithm_root = blake3.blake3(self.environment_root + algo_text.encode()).digest()

    @staticmethod
    def seed(root: bytes, purpose: str) -> bytes:
        """The 32-byte seed of the stream ``purpose`` under ``root``."""
        return blake3.blake3(root + purpose.encode()).digest()

    @staticmethod
    def _generator(seed: bytes) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(int.from_bytes(seed, "little")))

    def environment(self, purpose: str) -> np.random.Generator:
        """A stream of the environment (initial design, noise, sampled functions): the same
        for every algorithm of the seed, so that algorithms meet common random numbers."""
        return self._generator(self.seed(self.environment_root, purpose))

    def algorithm(self, purpose: str) -> np.random.Generator:
        """A stream private to the algorithm and its parameters."""
        return self._generator(self.seed(self.algorithm_root, purpose))
