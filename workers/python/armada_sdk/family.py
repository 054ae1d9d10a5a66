"""A family declared once, in Python: its benchmarks and algorithms with typed parameters,
its metrics, and the function that starts an episode of a job.

The declaration travels to the coordinator as a ``FamilyInfo`` (service.proto), which
checks it rule by rule and keeps it under its name and version: change anything and bump
``version``. The checks here are the quick ones, so that a mistake shows before a worker
starts; the coordinator's are authoritative.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence, Union

from ._proto import job_pb2, service_pb2
from .keys import Job, JobStreams


@dataclass(frozen=True)
class Float:
    name: str
    min: float
    max: float
    default: float
    doc: str = ""


@dataclass(frozen=True)
class Int:
    name: str
    min: int
    max: int
    default: int
    doc: str = ""


@dataclass(frozen=True)
class Bool:
    name: str
    default: bool
    doc: str = ""


@dataclass(frozen=True)
class Choice:
    name: str
    choices: Sequence[str]
    default: str
    doc: str = ""


Param = Union[Float, Int, Bool, Choice]


@dataclass(frozen=True)
class Benchmark:
    name: str
    doc: str = ""
    params: Sequence[Param] = ()


@dataclass(frozen=True)
class Algorithm:
    name: str
    doc: str = ""
    params: Sequence[Param] = ()


@dataclass(frozen=True)
class Metric:
    name: str
    doc: str = ""
    #: "float" (stored as Float64 and summarized) or "int" (Int64; NaN stored as null).
    kind: str = "float"


class Episode(Protocol):
    """A running job, as in armada's Rust families: ``initial()`` gives the metrics of step
    0 (after the initial design), ``step(t)`` performs acquisition ``t`` (1-based) and gives
    the metrics after it, or None when the episode ended before it (only for a family
    declared with ``ends_early``). Metrics are a dict with one value per declared metric."""

    def initial(self) -> dict[str, float]: ...

    def step(self, t: int) -> Optional[dict[str, float]]: ...


#: Starts a job's episode; randomness must come from ``streams`` only.
Start = Callable[[Job, JobStreams], Episode]


@dataclass(frozen=True)
class Family:
    name: str
    version: int
    benchmarks: Sequence[Benchmark]
    algorithms: Sequence[Algorithm]
    metrics: Sequence[Metric]
    start: Start
    doc: str = ""
    ends_early: bool = False
    #: The metrics a summary table shows first (all float metrics when empty).
    headline_metrics: Sequence[str] = ()
    #: Monotone float metrics the summaries also aggregate along (a cumulative cost, say).
    summary_axes: Sequence[str] = field(default=())

    def __post_init__(self) -> None:
        check(self)

    def to_proto(self) -> service_pb2.FamilyInfo:
        """The declaration as the wire carries it."""
        return service_pb2.FamilyInfo(
            name=self.name,
            version=self.version,
            doc=self.doc,
            benchmarks=[_component(c) for c in self.benchmarks],
            algorithms=[_component(c) for c in self.algorithms],
            metrics=[
                service_pb2.MetricInfo(name=m.name, doc=m.doc, kind=_METRIC_KINDS[m.kind]) for m in self.metrics
            ],
            ends_early=self.ends_early,
            headline_metrics=list(self.headline_metrics),
            summary_axes=list(self.summary_axes),
        )

    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]


_METRIC_KINDS = {"float": service_pb2.MetricInfo.FLOAT, "int": service_pb2.MetricInfo.INT}


def _param(p: Param) -> service_pb2.ParamInfo:
    K = service_pb2.ParamInfo
    if isinstance(p, Float):
        return K(
            name=p.name, doc=p.doc, kind=K.FLOAT, min=p.min, max=p.max, default=job_pb2.ParamValue(float=float(p.default))
        )
    if isinstance(p, Int):
        return K(name=p.name, doc=p.doc, kind=K.INT, min=p.min, max=p.max, default=job_pb2.ParamValue(int=p.default))
    if isinstance(p, Bool):
        return K(name=p.name, doc=p.doc, kind=K.BOOL, default=job_pb2.ParamValue(flag=p.default))
    return K(name=p.name, doc=p.doc, kind=K.CHOICE, choices=list(p.choices), default=job_pb2.ParamValue(text=p.default))


def _component(c: Union[Benchmark, Algorithm]) -> service_pb2.ComponentInfo:
    return service_pb2.ComponentInfo(name=c.name, doc=c.doc, params=[_param(p) for p in c.params])


def check(family: Family) -> None:
    """The quick checks; a ValueError names the field (``algorithms[1].params[0].default``)."""

    def fail(field_path: str, message: str) -> None:
        raise ValueError(f"{field_path}: {message}")

    if not (isinstance(family.version, int) and family.version >= 1):
        fail("version", f"{family.version!r} is not a version; versions start at 1")
    for what, components in (("benchmarks", family.benchmarks), ("algorithms", family.algorithms)):
        if not components:
            fail(what, "declare at least one")
        _unique([c.name for c in components], what)
        for i, c in enumerate(components):
            _unique([p.name for p in c.params], f"{what}[{i}].params")
            for j, p in enumerate(c.params):
                at = f"{what}[{i}].params[{j}]"
                if isinstance(p, Float):
                    if not (math.isfinite(p.min) and math.isfinite(p.max) and p.min <= p.max):
                        fail(f"{at}.min", f"[{p.min}, {p.max}] is not a finite range")
                    number = isinstance(p.default, (int, float)) and not isinstance(p.default, bool)
                    if not (number and p.min <= p.default <= p.max):
                        fail(f"{at}.default", f"{p.default!r} is not a float in [{p.min}, {p.max}]")
                elif isinstance(p, Int):
                    if not (isinstance(p.default, int) and p.min <= p.default <= p.max):
                        fail(f"{at}.default", f"{p.default!r} is not an integer in [{p.min}, {p.max}]")
                elif isinstance(p, Choice):
                    if p.default not in p.choices:
                        fail(f"{at}.default", f"{p.default!r} is not one of {list(p.choices)}")
                elif not isinstance(p, Bool):
                    fail(at, f"{p!r} is not a Float, Int, Bool or Choice")
    if not family.metrics:
        fail("metrics", "declare at least one")
    _unique(family.metric_names(), "metrics")
    for i, m in enumerate(family.metrics):
        if m.kind not in _METRIC_KINDS:
            fail(f"metrics[{i}].kind", f"{m.kind!r} is not a metric kind; expected float or int")
    floats = {m.name for m in family.metrics if m.kind == "float"}
    for i, n in enumerate(family.headline_metrics):
        if n not in family.metric_names():
            fail(f"headline_metrics[{i}]", f"{n!r} is not a metric of the family")
    for i, n in enumerate(family.summary_axes):
        if n not in floats:
            fail(f"summary_axes[{i}]", f"{n!r} is not a float metric of the family")


def _unique(names: list[str], where: str) -> None:
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ValueError(f"{where}[{i}].name: {n!r} is declared twice")


def load_family(spec: str) -> Family:
    """``MODULE:ATTRIBUTE``, e.g. ``armada_sdk.examples.noisy:FAMILY``."""
    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise ValueError(f"{spec!r}: name the family as MODULE:ATTRIBUTE, e.g. armada_sdk.examples.noisy:FAMILY")
    family = getattr(importlib.import_module(module), attribute)
    if not isinstance(family, Family):
        raise TypeError(f"{spec} is a {type(family).__name__}, not an armada_sdk.Family")
    return family
