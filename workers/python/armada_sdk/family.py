"""A family declared once, in Python: its benchmarks and algorithms with typed parameters,
its metrics, and the function that starts an episode of a job.

The declaration travels to the coordinator as a ``FamilyInfo`` (service.proto), which
checks it rule by rule and keeps it under its name, version and digest. The digest covers
the code that computes the trajectories (``armada_sdk.code``): edit the code and the
family's jobs get new keys, so they run again rather than serve the old code's results.
Docs and headline metrics can change freely; any other change of the declaration needs a
new ``version``. The checks here are the quick ones, so that a mistake shows before a
worker starts; the coordinator's are authoritative.
"""

from __future__ import annotations

import importlib
import math
import re
import types
from dataclasses import dataclass, field
from typing import Callable, NoReturn, Optional, Protocol, Sequence, Union

from ._proto import job_pb2, service_pb2
from .code import CodeModule, code_digest
from .keys import Job, JobStreams, unusable_text


@dataclass(frozen=True)
class Float:
    """A float parameter of a benchmark or an algorithm, in [``min``, ``max``]."""

    #: Its name in a sweep's ``params`` and in the job's ``benchmark_params`` or ``algorithm_params``.
    name: str
    #: The least value a sweep may give (finite).
    min: float
    #: The greatest value a sweep may give (finite).
    max: float
    #: The value a job takes when its sweep gives none.
    default: float
    #: What it means (presentation: not part of the code digest).
    doc: str = ""


@dataclass(frozen=True)
class Int:
    """An integer parameter of a benchmark or an algorithm, in [``min``, ``max``] (within +-2^53)."""

    #: Its name in a sweep's ``params`` and in the job's ``benchmark_params`` or ``algorithm_params``.
    name: str
    #: The least value a sweep may give.
    min: int
    #: The greatest value a sweep may give.
    max: int
    #: The value a job takes when its sweep gives none.
    default: int
    #: What it means (presentation: not part of the code digest).
    doc: str = ""


@dataclass(frozen=True)
class Bool:
    """A true-or-false parameter of a benchmark or an algorithm."""

    #: Its name in a sweep's ``params`` and in the job's ``benchmark_params`` or ``algorithm_params``.
    name: str
    #: The value a job takes when its sweep gives none.
    default: bool
    #: What it means (presentation: not part of the code digest).
    doc: str = ""


@dataclass(frozen=True)
class Choice:
    """A parameter that takes one of the texts ``choices``."""

    #: Its name in a sweep's ``params`` and in the job's ``benchmark_params`` or ``algorithm_params``.
    name: str
    #: The texts it may take (1 to 256, each 1 to 64 bytes, no quotes, backslashes or control characters).
    choices: Sequence[str]
    #: The choice a job takes when its sweep gives none (one of ``choices``).
    default: str
    #: What it means (presentation: not part of the code digest).
    doc: str = ""


Param = Union[Float, Int, Bool, Choice]


@dataclass(frozen=True)
class Benchmark:
    """A benchmark of a family: the problem its jobs' episodes run on, with its parameters."""

    #: Its name in sweeps (a job's ``benchmark``).
    name: str
    #: What it is (presentation: not part of the code digest).
    doc: str = ""
    #: Its typed parameters (Float, Int, Bool, Choice), each with a default.
    params: Sequence[Param] = ()


@dataclass(frozen=True)
class Algorithm:
    """An algorithm of a family (or of an extension), with its parameters."""

    #: Its name in sweeps (a job's ``algorithm``).
    name: str
    #: What it does (presentation: not part of the code digest).
    doc: str = ""
    #: Its typed parameters (Float, Int, Bool, Choice), each with a default.
    params: Sequence[Param] = ()
    #: The benchmarks of its family it can run, when not all of them: a sweep that pairs
    #: it with another is refused at submission, naming both fields.
    benchmarks: Sequence[str] = ()


@dataclass(frozen=True)
class Metric:
    """A metric of a family's records: one value per step of every trajectory."""

    #: Its column in the trajectories (not one of ``TRAJECTORY_COLUMNS``).
    name: str
    #: What it measures (presentation: not part of the code digest).
    doc: str = ""
    #: "float" (stored as Float64 and summarized) or "int" (Int64; NaN stored as null).
    kind: str = "float"


class Episode(Protocol):
    """A running job, as in armada's Rust families: ``initial()`` gives the metrics of step
    0 (after the initial design), ``step(t)`` performs acquisition ``t`` (1-based) and gives
    the metrics after it, or None when the episode ended before it (only for a family
    declared with ``ends_early``). Metrics are a dict with one value per declared metric."""

    def initial(self) -> dict[str, float]:
        """The metrics of step 0, after the initial design."""

    def step(self, t: int) -> Optional[dict[str, float]]:
        """Perform acquisition ``t`` (1-based); the metrics after it, or None when the
        episode ended before it (``ends_early`` families only)."""


#: Starts a job's episode; randomness must come from ``streams`` only.
Start = Callable[[Job, JobStreams], Episode]


@dataclass(frozen=True)
class Family:
    """A family of your own, declared in Python: its benchmarks, algorithms and metrics, and
    ``start``, which starts a job's episode. Checked on construction (a ValueError names the
    field at fault); ``python -m armada_sdk.worker MODULE:ATTRIBUTE`` runs its jobs."""

    #: The name sweeps give as their ``family`` (a-z, 0-9, '_' and '-', starting with a letter).
    name: str
    #: Its version, from 1: any change of the declaration but its code, docs and headline
    #: metrics needs a new one.
    version: int
    #: Its benchmarks (1 to 256, uniquely named).
    benchmarks: Sequence[Benchmark]
    #: Its algorithms (1 to 256, uniquely named).
    algorithms: Sequence[Algorithm]
    #: Its metrics, in the order of a record's values (1 to 256).
    metrics: Sequence[Metric]
    #: Called with a job and its random streams, gives the job's Episode.
    start: Start
    #: What the family is (presentation: not part of the code digest).
    doc: str = ""
    #: Whether an episode may end before its horizon (``step`` giving None).
    ends_early: bool = False
    #: The metrics a summary table shows first (all float metrics when empty).
    headline_metrics: Sequence[str] = ()
    #: Monotone float metrics the summaries also aggregate along (a cumulative cost, say).
    summary_axes: Sequence[str] = field(default=())
    #: Modules (or their names) whose code computes the trajectories besides the module
    #: that defines ``start``: their code is part of the family's identity too.
    code_modules: Sequence[CodeModule] = ()

    def __post_init__(self) -> None:
        check(self)

    def to_proto(self) -> service_pb2.FamilyInfo:
        """The declaration as the wire carries it, with the digest of its code."""
        return service_pb2.FamilyInfo(
            name=self.name,
            version=self.version,
            doc=self.doc,
            code=code_digest(self.start, self.code_modules, _docs(self)),
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
        """The metrics' names, in declared order."""
        return [m.name for m in self.metrics]

    def contract(self, described: Optional[service_pb2.FamilyInfo] = None) -> Contract:
        """What its episodes' records must hold (its own declaration says it)."""
        return Contract(self.name, self.metrics, self.ends_early, self.start)


_METRIC_KINDS = {"float": service_pb2.MetricInfo.FLOAT, "int": service_pb2.MetricInfo.INT}


@dataclass(frozen=True)
class Contract:
    """What an episode's records must hold: the family's metrics in order, and whether a
    run may end before its horizon. A Family is its own; an Extension's is its family's,
    as the coordinator describes it."""

    #: The name of the family (or extension) whose jobs these are.
    name: str
    #: The metrics every record holds, in order.
    metrics: Sequence[Metric]
    #: Whether an episode may end before its horizon.
    ends_early: bool
    #: What starts a job's episode.
    start: Start

    def metric_names(self) -> list[str]:
        """The metrics' names, in order."""
        return [m.name for m in self.metrics]


@dataclass(frozen=True)
class Extension:
    """Algorithms of your own for a family built into armada (``lse``, ``cvs``, ``safe``,
    ``bandits``): a sweep of that family names them beside its own algorithms, and their
    jobs run on its benchmarks with its metrics and its environment streams (the same
    instances, noise and costs as its algorithms meet: common random numbers). An episode
    builds the benchmark with ``armada_bindings`` (``LseEnvironment(armada_bindings.Job.of(job))``,
    say) and reports the family's metrics. Only the sessions that declared the extension
    run its jobs; their keys carry its digest, which covers its code (see ``code_modules``)
    but not its docs."""

    #: Its own name (a-z, 0-9, '_' and '-', starting with a letter): sweeps name its algorithms, not it.
    name: str
    #: Its version, from 1, as a Family's.
    version: int
    #: The built-in family it extends (``lse``, ``cvs``, ``safe``, ``bandits``).
    extends: str
    #: Its algorithms (1 to 256), none named like one of the extended family's.
    algorithms: Sequence[Algorithm]
    #: Called with a job and its random streams, gives the job's Episode.
    start: Start
    #: What the extension is (presentation: not part of the code digest).
    doc: str = ""
    #: As Family's: modules besides ``start``'s whose code computes the trajectories.
    code_modules: Sequence[CodeModule] = ()

    def __post_init__(self) -> None:
        check_extension(self)

    def to_proto(self) -> service_pb2.FamilyInfo:
        """The declaration as the wire carries it, with the digest of its code."""
        return service_pb2.FamilyInfo(
            name=self.name,
            version=self.version,
            doc=self.doc,
            code=code_digest(self.start, self.code_modules, _docs(self)),
            extends=self.extends,
            algorithms=[_component(c) for c in self.algorithms],
        )

    def contract(self, described: service_pb2.FamilyInfo) -> Contract:
        """The contract of its jobs, from the family as the coordinator describes the
        extension (RegisterResponse.families): the family's metrics."""
        if described.extends != self.extends:
            raise ValueError(f"the coordinator describes {self.name} as extending {described.extends!r}, not {self.extends!r}")
        kinds = {v: k for k, v in _METRIC_KINDS.items()}
        unknown = [m.name for m in described.metrics if m.kind not in kinds]
        if unknown:
            raise ValueError(f"the coordinator describes metrics {unknown} of {self.extends} with a kind this SDK does not know")
        metrics = [Metric(m.name, m.doc, kinds[m.kind]) for m in described.metrics]
        return Contract(self.name, metrics, described.ends_early, self.start)


def _docs(family: Union[Family, Extension]) -> list[str]:
    """The declaration's docs: presentation, not code (see ``armada_sdk.code``)."""
    components = [*getattr(family, "benchmarks", ()), *family.algorithms]
    params = [p.doc for c in components for p in c.params]
    return [family.doc, *(c.doc for c in components), *params, *(m.doc for m in getattr(family, "metrics", ()))]


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
    supported = list(c.benchmarks) if isinstance(c, Algorithm) else []
    return service_pb2.ComponentInfo(name=c.name, doc=c.doc, params=[_param(p) for p in c.params], benchmarks=supported)


#: The declaration rules' limits (service.proto, above ``ComponentInfo``).
MAX_NAME_LEN = 64
MAX_DOC_LEN = 4096
MAX_ITEMS = 256
MAX_DECLARATION_BYTES = 256 * 1024
#: Integer parameter ranges travel as doubles: beyond 2^53 they would not be exact.
MAX_EXACT_INT = 2**53
#: A trajectory's columns besides the metrics: no metric may take these names.
TRAJECTORY_COLUMNS = frozenset(
    "job_key family benchmark benchmark_params algorithm algorithm_params seed sweep_seed horizon step elapsed_ms".split()
)
_FAMILY_NAME = re.compile(r"[a-z][a-z0-9_-]*")
_ITEM_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _check_common(family: Union[Family, Extension]) -> None:
    if not (len(family.name) <= MAX_NAME_LEN and _FAMILY_NAME.fullmatch(family.name)):
        _fail("name", f"{family.name!r} is not a family name; use 1 to {MAX_NAME_LEN} of a-z, 0-9, '_' and '-', starting with a letter")
    if not (isinstance(family.version, int) and not isinstance(family.version, bool) and family.version >= 1):
        _fail("version", f"{family.version!r} is not a version; versions start at 1")
    if not callable(family.start):
        _fail("start", f"{family.start!r} is not callable; give the function (or class) that starts an episode")
    _check_doc(family.doc, "doc")
    if isinstance(family.code_modules, (str, bytes)):
        _fail("code_modules", f"{family.code_modules!r}: list the modules, e.g. [\"mypackage.acquisition\"]")
    for i, m in enumerate(family.code_modules):
        if not isinstance(m, (str, types.ModuleType)):
            _fail(f"code_modules[{i}]", f"{m!r} is neither a module nor a module's name")


def _check_components(what: str, components: Sequence[Union[Benchmark, Algorithm]]) -> None:
    _check_count(len(components), what)
    _check_names([c.name for c in components], what)
    for i, c in enumerate(components):
        _check_doc(c.doc, f"{what}[{i}].doc")
        if len(c.params) > MAX_ITEMS:
            _fail(f"{what}[{i}].params", f"{len(c.params)} parameters, over {MAX_ITEMS}")
        _check_names([p.name for p in c.params], f"{what}[{i}].params")
        for j, p in enumerate(c.params):
            _check_doc(p.doc, f"{what}[{i}].params[{j}].doc")
            _check_param(p, f"{what}[{i}].params[{j}]")


def check_extension(extension: Extension) -> None:
    """The rules of an extension (service.proto): those of a family's name, version and
    algorithms, and a family to extend; the coordinator checks that it is built in and
    that no algorithm is named like one of its own."""
    _check_common(extension)
    if not (isinstance(extension.extends, str) and _FAMILY_NAME.fullmatch(extension.extends)):
        _fail("extends", f"{extension.extends!r} is not a family name; name the built-in family extended (lse, cvs, safe, bandits)")
    _check_components("algorithms", extension.algorithms)
    size = extension.to_proto().ByteSize()
    if size > MAX_DECLARATION_BYTES:
        _fail("declaration", f"it takes {size} bytes encoded, over {MAX_DECLARATION_BYTES}")


def check(family: Family) -> None:
    """The declaration rules of service.proto, checked before anything reaches the
    coordinator; a ValueError names the field (``algorithms[1].params[0].default: ...``)."""
    _check_common(family)
    for what, components in (("benchmarks", family.benchmarks), ("algorithms", family.algorithms)):
        _check_components(what, components)
    _check_count(len(family.metrics), "metrics")
    _check_names(family.metric_names(), "metrics")
    for i, m in enumerate(family.metrics):
        if m.name in TRAJECTORY_COLUMNS:
            _fail(f"metrics[{i}].name", f"{m.name!r} is a trajectory column; name the metric otherwise")
        _check_doc(m.doc, f"metrics[{i}].doc")
        if m.kind not in _METRIC_KINDS:
            _fail(f"metrics[{i}].kind", f"{m.kind!r} is not a metric kind; expected float or int")
    floats = {m.name for m in family.metrics if m.kind == "float"}
    for i, n in enumerate(family.headline_metrics):
        if n not in family.metric_names():
            _fail(f"headline_metrics[{i}]", f"{n!r} is not a metric of the family")
    for i, n in enumerate(family.summary_axes):
        if n not in floats:
            _fail(f"summary_axes[{i}]", f"{n!r} is not a float metric of the family")
    size = family.to_proto().ByteSize()
    if size > MAX_DECLARATION_BYTES:
        _fail("declaration", f"it takes {size} bytes encoded, over {MAX_DECLARATION_BYTES}")


def _fail(field_path: str, message: str) -> NoReturn:
    raise ValueError(f"{field_path}: {message}")


def _check_count(n: int, where: str) -> None:
    if n == 0:
        _fail(where, "declare at least one")
    if n > MAX_ITEMS:
        _fail(where, f"{n} declared, over {MAX_ITEMS}")


def _check_doc(doc: str, where: str) -> None:
    if len(doc) > MAX_DOC_LEN:
        _fail(where, f"{len(doc)} characters, over {MAX_DOC_LEN}")


def _check_names(names: list[str], where: str) -> None:
    """Names of components, parameters or metrics: usable, and unique where they stand."""
    for i, n in enumerate(names):
        if not (isinstance(n, str) and len(n) <= MAX_NAME_LEN and _ITEM_NAME.fullmatch(n)):
            _fail(f"{where}[{i}].name", f"{n!r} is not a usable name; use 1 to {MAX_NAME_LEN} of A-Z, a-z, 0-9, '_', '.' and '-'")
        if n in names[:i]:
            _fail(f"{where}[{i}].name", f"{n!r} is declared twice")


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_param(p: Param, at: str) -> None:
    if isinstance(p, Float):
        finite = all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (p.min, p.max))
        if not (finite and p.min <= p.max):
            _fail(f"{at}.min", f"[{p.min}, {p.max}] is not a finite range of floats")
        if not (isinstance(p.default, (int, float)) and not isinstance(p.default, bool) and p.min <= p.default <= p.max):
            _fail(f"{at}.default", f"{p.default!r} is not a float in [{p.min}, {p.max}]")
    elif isinstance(p, Int):
        if not (_is_int(p.min) and _is_int(p.max) and -MAX_EXACT_INT <= p.min <= p.max <= MAX_EXACT_INT):
            _fail(f"{at}.min", f"[{p.min}, {p.max}] is not an integral range within +-2^53")
        if not (_is_int(p.default) and p.min <= p.default <= p.max):
            _fail(f"{at}.default", f"{p.default!r} is not an integer in [{p.min}, {p.max}]")
    elif isinstance(p, Bool):
        if not isinstance(p.default, bool):
            _fail(f"{at}.default", f"{p.default!r} is not a bool")
    elif isinstance(p, Choice):
        if isinstance(p.choices, str) or not 1 <= len(p.choices) <= MAX_ITEMS:
            _fail(f"{at}.choices", f"{p.choices!r}: declare 1 to {MAX_ITEMS} choices (a list of strings)")
        for i, c in enumerate(p.choices):
            if not (isinstance(c, str) and 1 <= len(c.encode()) <= MAX_NAME_LEN and unusable_text(c) is None):
                _fail(f"{at}.choices[{i}]", f"{c!r} is not a usable choice; use 1 to {MAX_NAME_LEN} bytes, no quotes, backslashes or control characters")
            if c in p.choices[:i]:
                _fail(f"{at}.choices[{i}]", f"{c!r} is declared twice")
        if p.default not in p.choices:
            _fail(f"{at}.default", f"{p.default!r} is not one of {list(p.choices)}")
    else:
        _fail(at, f"{p!r} is not a Float, Int, Bool or Choice")


def load_family(spec: str) -> Union[Family, Extension]:
    """``MODULE:ATTRIBUTE``, e.g. ``armada_sdk.examples.noisy:FAMILY``: a Family or an Extension."""
    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise ValueError(f"{spec!r}: name the family as MODULE:ATTRIBUTE, e.g. armada_sdk.examples.noisy:FAMILY")
    family = getattr(importlib.import_module(module), attribute)
    if not isinstance(family, (Family, Extension)):
        raise TypeError(f"{spec} is a {type(family).__name__}, not an armada_sdk.Family or armada_sdk.Extension")
    return family
