"""Running one job of a family: its episode driven step by step into records, each
checked against the family's metrics as the coordinator will check it."""

from __future__ import annotations

import functools
import math
import time
import traceback
from dataclasses import dataclass
from typing import Mapping, NamedTuple, Union

from .family import Contract, Family, load_family
from ._proto import service_pb2
from .keys import Job, JobStreams


@dataclass(frozen=True)
class Record:
    """One step of a trajectory: the family's metrics in declared order."""

    #: The step: 0 after the initial design, then 1..=horizon.
    step: int
    #: The wall time the step took (milliseconds).
    elapsed_ms: float
    #: The metrics' values, in the family's declared order (an int metric's as a float).
    values: tuple[float, ...]


class EpisodeError(Exception):
    """The episode broke the family's contract (a metric missing, a step past the end)."""


def _values(family: Union[Family, Contract], metrics: Mapping[str, float], step: int) -> tuple[float, ...]:
    names = family.metric_names()
    missing = [n for n in names if n not in metrics]
    extra = [n for n in metrics if n not in names]
    if missing or extra:
        raise EpisodeError(f"step {step}: metrics missing {missing}, not declared {extra}")
    values = []
    for m in family.metrics:
        v = float(metrics[m.name])
        if m.kind == "int" and not (math.isnan(v) or v == int(v)):
            raise EpisodeError(f"step {step}: metric {m.name} is an int metric, got {v}")
        values.append(v)
    return tuple(values)


def run_episode(family: Union[Family, Contract], job: Job) -> list[Record]:
    """Every record of ``job``: steps 0..=horizon, or 0..=last for a family that ends early."""
    started = time.perf_counter()
    episode = family.start(job, JobStreams(job))
    records = [Record(0, (time.perf_counter() - started) * 1e3, _values(family, episode.initial(), 0))]
    for t in range(1, job.horizon + 1):
        started = time.perf_counter()
        metrics = episode.step(t)
        if metrics is None:
            if not family.ends_early:
                raise EpisodeError(f"step {t}: the episode ended, but family {family.name} does not end early")
            break
        records.append(Record(t, (time.perf_counter() - started) * 1e3, _values(family, metrics, t)))
    return records


#: An error's text sent to the coordinator is cut to this many characters (it keeps 4 KiB).
MAX_ERROR = 4000


@functools.lru_cache(maxsize=None)
def _contract(spec: str, described: bytes) -> Contract:
    family = load_family(spec)
    return family.contract(service_pb2.FamilyInfo.FromString(described))


class Ran(NamedTuple):
    """A job run in a slot: its records, or the text of the error its own code raised; and
    how long it took (seconds of wall time), which tells its sweep's job length."""

    #: The job's records, or the text of the error its own code raised.
    outcome: Union[list[Record], str]
    #: The wall time it took (seconds).
    seconds: float


def run_in_slot(family_spec: str, described: bytes, jobs: list[Job]) -> list[Ran]:
    """What a worker's slot process runs: each job, one after the other (the family is
    imported once per process; ``described`` is how the coordinator describes it, an
    encoded FamilyInfo: an extension's metrics are its family's). A family that cannot be
    loaded here raises: that is the worker's trouble, not the jobs'."""
    contract = _contract(family_spec, described)
    ran = []
    for job in jobs:
        started = time.perf_counter()
        try:
            outcome: Union[list[Record], str] = run_episode(contract, job)
        except Exception:  # noqa: BLE001 (the job's own error is reported, not raised)
            outcome = traceback.format_exc()[-MAX_ERROR:]
        ran.append(Ran(outcome, time.perf_counter() - started))
    return ran
