"""The coordinator's answers as plain Python values (dataclasses, enums, lists and dicts),
so that a caller of the Client never handles protobuf messages. Field names are the
.proto's (proto/armada/v1/service.proto): ``status.n_done`` reads as it always did."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Union

from ._proto import job_pb2, service_pb2


class SweepState(enum.IntEnum):
    """Where a sweep stands (an int, equal to the .proto's SweepState values)."""

    UNSPECIFIED = 0
    #: Some jobs are queued or running.
    RUNNING = 1
    #: Every job is done or failed.
    FINISHED = 2
    #: Cancelled by a client.
    CANCELLED = 3


def _state(value: int) -> SweepState:
    try:
        return SweepState(value)
    except ValueError:  # a state a newer coordinator added
        return SweepState.UNSPECIFIED


@dataclass(frozen=True)
class JobFailed:
    """A failed job and its last error (at most 4 KiB)."""

    #: The job's key (32 hex digits).
    job_key: str
    #: The job's cell, seed and key, in words.
    description: str
    #: The text of its last attempt's error.
    error: str
    #: How many attempts it has had (the error is the last one's).
    attempt: int
    #: True when no retry is left: the job is marked failed.
    final: bool

    @classmethod
    def from_proto(cls, m: service_pb2.JobFailed) -> "JobFailed":
        """The JobFailed a ``JobFailed`` message holds."""
        return cls(m.job_key, m.description, m.error, m.attempt, m.final)


@dataclass(frozen=True)
class WriteTrouble:
    """Writes the coordinator cannot make at one place (a full disk...), since when."""

    #: What cannot be written: the store, or a sweep's trajectory parts.
    place: str
    #: The latest failure's error.
    error: str
    #: The first failure since a write there last succeeded (Unix milliseconds).
    since_unix_ms: int
    #: The latest failure (Unix milliseconds).
    last_unix_ms: int
    #: The failures since a write there last succeeded.
    failures: int

    @classmethod
    def from_proto(cls, m: service_pb2.WriteTrouble) -> "WriteTrouble":
        """The WriteTrouble a ``WriteTrouble`` message holds."""
        return cls(m.place, m.error, m.since_unix_ms, m.last_unix_ms, m.failures)


@dataclass(frozen=True)
class SweepStatus:
    """A sweep's state and job counts (GetSweep, ListSweeps, CancelSweep). ``failures``
    lists the first failed jobs (none from ``list_sweeps``), ``n_failures_omitted`` how
    many more there are."""

    #: The sweep's id (its name).
    sweep_id: str
    #: The family as the sweep refers to it, then the extensions it runs.
    family: str
    #: Where it stands: running, finished or cancelled.
    state: SweepState
    #: Its jobs, all told.
    n_jobs: int
    #: Jobs waiting for a worker.
    n_queued: int
    #: Jobs running on a worker (``n_leased`` more wait there for a slot).
    n_running: int
    #: Jobs whose trajectory is committed.
    n_done: int
    #: Jobs failed for good (no retry left).
    n_failed: int
    #: Jobs cancelled before they finished.
    n_cancelled: int
    #: The coordinator's directory of the sweep's results.
    results_dir: str
    #: A page of its failed jobs, with their last errors.
    failures: list[JobFailed] = field(default_factory=list)
    #: Failed jobs beyond that page.
    n_failures_omitted: int = 0
    #: Failing writes that hold the sweep up now: the store's, and its parts'.
    write_troubles: list[WriteTrouble] = field(default_factory=list)
    #: Jobs leased ahead to a worker that has not started them.
    n_leased: int = 0

    @property
    def finished(self) -> bool:
        """Whether the sweep has ended (finished or cancelled)."""
        return self.state in (SweepState.FINISHED, SweepState.CANCELLED)

    @classmethod
    def from_proto(cls, m: service_pb2.SweepStatus) -> "SweepStatus":
        """The SweepStatus a ``SweepStatus`` message holds."""
        return cls(
            sweep_id=m.sweep_id,
            family=m.family,
            state=_state(m.state),
            n_jobs=m.n_jobs,
            n_queued=m.n_queued,
            n_running=m.n_running,
            n_done=m.n_done,
            n_failed=m.n_failed,
            n_cancelled=m.n_cancelled,
            results_dir=m.results_dir,
            failures=[JobFailed.from_proto(f) for f in m.failures],
            n_failures_omitted=m.n_failures_omitted,
            write_troubles=[WriteTrouble.from_proto(t) for t in m.write_troubles],
            n_leased=m.n_leased,
        )


@dataclass(frozen=True)
class RevisedFamily:
    """A declared family of a resubmitted sweep whose declaration changed since its last
    submission (a new revision of its code, or a new version): its jobs have new keys and
    run; those of the old declaration left the sweep."""

    #: The family's name.
    name: str
    #: The digest of the declaration its last submission took.
    was_digest: str
    #: The digest of the declaration it takes now.
    digest: str
    #: The version its last submission took.
    was_version: int
    #: The version it takes now.
    version: int

    @classmethod
    def from_proto(cls, m: service_pb2.RevisedFamily) -> "RevisedFamily":
        """The RevisedFamily a ``RevisedFamily`` message holds."""
        return cls(m.name, m.was_digest, m.digest, m.was_version, m.version)


@dataclass(frozen=True)
class Submitted:
    """What a submission did: the sweep's id, its jobs, those new to it, those whose results
    exist already, and its declared families whose declaration changed."""

    #: The sweep's id (its name).
    sweep_id: str
    #: Its jobs, all told.
    n_jobs: int
    #: Jobs new to it (queued by this submission).
    n_added: int
    #: Jobs whose results existed already (not run again).
    n_already_done: int
    #: Its declared families whose declaration changed since its last submission.
    revised: list[RevisedFamily]

    @classmethod
    def from_proto(cls, m: service_pb2.SubmitSweepResponse) -> "Submitted":
        """The Submitted a ``SubmitSweepResponse`` message holds."""
        revised = [RevisedFamily.from_proto(r) for r in m.revised]
        return cls(m.sweep_id, m.n_jobs, m.n_added, m.n_already_done, revised)


@dataclass(frozen=True)
class DeleteResult:
    """What DeleteSweep removed: the jobs from the store, and the results directory."""

    #: The jobs removed from the store.
    n_jobs: int
    #: Whether the results directory was removed too (not with ``keep_results``).
    results_removed: bool


_PARAM_KINDS = {1: "float", 2: "int", 3: "bool", 4: "choice"}
_METRIC_KINDS = {1: "float", 2: "int"}

Value = Union[float, int, bool, str, None]


def param_value(m: job_pb2.ParamValue) -> Value:
    """A ParamValue message as the Python value it holds (None when unset)."""
    kind = m.WhichOneof("kind")
    value: Value = getattr(m, kind) if kind else None
    return value


@dataclass(frozen=True)
class ParamInfo:
    """A typed parameter: ``kind`` is ``float``, ``int``, ``bool`` or ``choice``; ``min`` and
    ``max`` bound a number, ``choices`` list a choice's texts, ``default`` is what an
    omitted parameter takes."""

    #: Its name in a sweep's ``params``.
    name: str
    #: What it means.
    doc: str
    #: ``float``, ``int``, ``bool`` or ``choice`` (``unspecified`` for a kind this SDK does not know).
    kind: str
    #: The least value of a number.
    min: float
    #: The greatest value of a number.
    max: float
    #: The texts a choice may take.
    choices: list[str]
    #: The value a job takes when its sweep gives none.
    default: Value

    @classmethod
    def from_proto(cls, m: service_pb2.ParamInfo) -> "ParamInfo":
        """The ParamInfo a ``ParamInfo`` message holds."""
        kind = _PARAM_KINDS.get(m.kind, "unspecified")
        return cls(m.name, m.doc, kind, m.min, m.max, list(m.choices), param_value(m.default))


@dataclass(frozen=True)
class ComponentInfo:
    """A benchmark or an algorithm, with its parameters; an algorithm of a declared family
    may name the only ``benchmarks`` it runs (empty: all)."""

    #: Its name in sweeps.
    name: str
    #: What it is.
    doc: str
    #: Its parameters.
    params: list[ParamInfo]
    #: An algorithm's only benchmarks (empty: all).
    benchmarks: list[str] = field(default_factory=list)

    @classmethod
    def from_proto(cls, m: service_pb2.ComponentInfo) -> "ComponentInfo":
        """The ComponentInfo a ``ComponentInfo`` message holds."""
        return cls(m.name, m.doc, [ParamInfo.from_proto(p) for p in m.params], list(m.benchmarks))


@dataclass(frozen=True)
class MetricInfo:
    """A metric of the family's records: ``kind`` is ``float`` or ``int``."""

    #: Its column in the trajectories.
    name: str
    #: What it measures.
    doc: str
    #: ``float`` or ``int`` (``unspecified`` for a kind this SDK does not know).
    kind: str

    @classmethod
    def from_proto(cls, m: service_pb2.MetricInfo) -> "MetricInfo":
        """The MetricInfo a ``MetricInfo`` message holds."""
        return cls(m.name, m.doc, _METRIC_KINDS.get(m.kind, "unspecified"))


@dataclass(frozen=True)
class FamilyInfo:
    """A family as the coordinator knows it: built in, or declared (``declared``, with its
    declaration's ``digest``); an extension names the family it ``extends``."""

    #: Its name.
    name: str
    #: What it is.
    doc: str
    #: The version of what its jobs compute.
    version: int
    #: What starts its jobs' canonical text (``Job.key``): ``armada-job-v<version>``, then
    #: ``+<digest>`` for a declared family.
    key_salt: str
    #: Its benchmarks.
    benchmarks: list[ComponentInfo]
    #: Its algorithms.
    algorithms: list[ComponentInfo]
    #: A record's values, in this order.
    metrics: list[MetricInfo]
    #: Whether an episode may end before its horizon.
    ends_early: bool
    #: The metrics a summary table shows first.
    headline_metrics: list[str]
    #: Monotone float metrics the summaries also aggregate along.
    summary_axes: list[str]
    #: True for a family declared by a worker or a client rather than built in.
    declared: bool
    #: A declared family's declaration digest, which salts its jobs' keys.
    digest: str
    #: The built-in family an extension extends (empty otherwise).
    extends: str
    #: A declared family's code digest, as its SDK computed it (``armada_sdk.code``).
    code: str
    #: ServerInfo abridges declared families beyond 2 MiB of them (no benchmarks,
    #: algorithms or metrics): ``Client.describe_family`` gives one whole.
    abridged: bool = False

    @classmethod
    def from_proto(cls, m: service_pb2.FamilyInfo) -> "FamilyInfo":
        """The FamilyInfo a ``FamilyInfo`` message holds."""
        return cls(
            name=m.name,
            doc=m.doc,
            version=m.version,
            key_salt=m.key_salt,
            benchmarks=[ComponentInfo.from_proto(c) for c in m.benchmarks],
            algorithms=[ComponentInfo.from_proto(c) for c in m.algorithms],
            metrics=[MetricInfo.from_proto(x) for x in m.metrics],
            ends_early=m.ends_early,
            headline_metrics=list(m.headline_metrics),
            summary_axes=list(m.summary_axes),
            declared=m.declared,
            digest=m.digest,
            extends=m.extends,
            code=m.code,
            abridged=m.abridged,
        )


@dataclass(frozen=True)
class ServerInfo:
    """What a coordinator runs: armada's version, its build digest, the random streams'
    salt, and every family it knows (``family(name)`` finds one)."""

    #: armada's version.
    version: str
    #: The digest of the coordinator's family registry (a worker registers with the same).
    build: str
    #: The salt of every random stream's root (``keys.STREAM_SALT``).
    stream_salt: str
    #: Every family it knows, built in and declared.
    families: list[FamilyInfo]

    def family(self, name: str) -> FamilyInfo:
        """The family called ``name`` as a sweep of it takes it now: of a declared name, its
        newest version, and of that version's revisions the one declared last (KeyError
        when the coordinator knows none)."""
        named = [f for f in self.families if f.name == name]
        if named:
            newest = max(f.version for f in named)
            return [f for f in named if f.version == newest][-1]
        raise KeyError(f"the coordinator knows no family {name!r}; it knows {[f.name for f in self.families]}")

    @classmethod
    def from_proto(cls, m: service_pb2.ServerInfoResponse) -> "ServerInfo":
        """The ServerInfo a ``ServerInfoResponse`` message holds."""
        return cls(m.version, m.build, m.stream_salt, [FamilyInfo.from_proto(f) for f in m.families])


__all__ = [
    "ComponentInfo",
    "DeleteResult",
    "FamilyInfo",
    "JobFailed",
    "MetricInfo",
    "ParamInfo",
    "ServerInfo",
    "SweepState",
    "SweepStatus",
    "WriteTrouble",
]
