"""A registered worker session as a state machine without I/O, the same machine as armada's
Rust worker (``workers/runtime/src/session``): events in (a lease answered, a heartbeat due
or answered, a task ended, a commit answered, a drain, the connection lost, time passing),
actions out (lease, start, heartbeat, cancel, commit, release, drained, register again,
exit). The worker's loop (``worker.py``) performs the actions and feeds back what comes of
them. ``workers/session_cases.json``, a table of histories with the actions each step must
give, is run against both machines.

Times are integer nanoseconds from any fixed instant (the session's start), as the Rust
machine's Durations.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Generic, Optional, TypeVar, Union

J = TypeVar("J")

#: The lease-depth rule both workers obey (armada-proto's lease.rs, whose test holds these
#: three numbers to it). A sweep whose jobs take less than this on average (nanoseconds) has
#: short jobs: each slot holds some leased ahead, and runs them as a batch.
SHORT_JOB_NS = 250_000_000
#: The work a slot holds leased ahead while its sweep's jobs are short...
AHEAD_WORK_NS = 100_000_000
#: ...in this many jobs at most...
PREFETCH_PER_SLOT = 512
#: ...run in batches of this many at most.
BATCH_MOST = 64

#: Finished attempts are committed in batches: sent when a batch holds this many attempts
#: (or COMMIT_BATCH_VALUES inline values), COMMIT_BATCH_WAIT_NS after its first finished,
#: or at once when no task runs.
COMMIT_BATCH = 256
COMMIT_BATCH_VALUES = 256 * 1024
COMMIT_BATCH_WAIT_NS = 20_000_000
#: An idle worker lets the coordinator hold a lease that finds nothing this long, to be
#: answered as soon as jobs are queued.
IDLE_LEASE_WAIT_MS = 500
#: Attempts awaiting their commit at most; past this nothing is leased.
MAX_PENDING_COMMITS = 4096

_MS = 1_000_000


class JobLengths:
    """How long each sweep's jobs take on this worker: a running mean per sweep (the last
    eight jobs weigh most). Leasing ahead follows the sweep being leased, so that after a
    sweep of short jobs the long jobs of the next are not leased many per slot, starving
    the other workers; a sweep not measured yet counts as long."""

    #: Sweeps remembered at most (the measures are dropped past it).
    MAX_SWEEPS = 1024

    def __init__(self) -> None:
        self.mean: dict[str, int] = {}
        #: Sweeps one of whose jobs had more records than a batch keeps: never batched.
        self.streaming: set[str] = set()

    def record(self, sweep: str, took_ns: int) -> None:
        """A job of ``sweep`` ran to its end in ``took_ns`` nanoseconds."""
        if sweep not in self.mean and len(self.mean) >= self.MAX_SWEEPS:
            self.mean.clear()
            self.streaming.clear()
        mean = self.mean.get(sweep, took_ns)
        self.mean[sweep] = (mean * 7 + took_ns) // 8

    def record_streaming(self, sweep: str) -> None:
        """A job of ``sweep`` had more records than a batch keeps."""
        self.streaming.add(sweep)

    def ahead(self, sweep: str) -> int:
        """How many of ``sweep``'s jobs a slot holds leased ahead: about 100 ms of them when
        they are short (1 to PREFETCH_PER_SLOT), else none."""
        mean = self.mean.get(sweep)
        if mean is None or mean >= SHORT_JOB_NS:
            return 0
        return min(max(AHEAD_WORK_NS // max(mean, 1), 1), PREFETCH_PER_SLOT)

    def batch(self, sweep: str) -> Optional[int]:
        """How many of ``sweep``'s jobs to run as one batch (what a slot holds ahead, at most
        BATCH_MOST); None: one at a time (a long job, one not measured yet, or a sweep that
        streams)."""
        ahead = self.ahead(sweep)
        if ahead == 0 or sweep in self.streaming:
            return None
        return min(ahead, BATCH_MOST)

    def depth(self, sweep: str, slots: int) -> int:
        """Jobs of ``sweep`` worth holding on ``slots`` slots: one per slot, and what each
        holds ahead."""
        return slots * (1 + self.ahead(sweep))


@dataclass(frozen=True)
class LeasedJob(Generic[J]):
    """A job the coordinator leased: its attempt, its sweep, and what the worker runs."""

    attempt: int
    sweep: str
    job: J


@dataclass(frozen=True)
class Ready:
    """The job ran to its end; its commit carries ``n_values`` inline values."""

    n_values: int


@dataclass(frozen=True)
class Ended:
    """The job failed (reported), was cancelled, or its attempt is void."""


@dataclass(frozen=True)
class RunAgainAlone(Generic[J]):
    """A job of a batch with more records than a batch keeps: to run again alone."""

    job: J


@dataclass(frozen=True)
class Ran(Generic[J]):
    """One job of an ended task, and how long it ran."""

    attempt: int
    outcome: Union[Ready, Ended, RunAgainAlone[J]]
    took_ns: int


# ---- events


@dataclass(frozen=True)
class Wake:
    """Time passed."""


@dataclass(frozen=True)
class Leased(Generic[J]):
    """The coordinator answered a lease: these jobs, or none and when to ask again."""

    jobs: list[LeasedJob[J]]
    retry_after_ms: int


@dataclass(frozen=True)
class HeartbeatDue:
    """A heartbeat is due."""


@dataclass(frozen=True)
class HeartbeatAnswered:
    """The coordinator answered a heartbeat: these attempts are void."""

    abandon: list[int]


@dataclass(frozen=True)
class TaskEnded(Generic[J]):
    """A task ended: every job it ran."""

    ran: list[Ran[J]]


@dataclass(frozen=True)
class Committed:
    """The coordinator answered a commit batch: these attempts are settled."""

    attempts: list[int]


@dataclass(frozen=True)
class Drain:
    """Shut down: stop leasing, hand back what has not started, finish the rest."""


@dataclass(frozen=True)
class Lost:
    """The connection failed, or the coordinator no longer knows the session."""


Event = Union[Wake, Leased[J], HeartbeatDue, HeartbeatAnswered, TaskEnded[J], Committed, Drain, Lost]

# ---- actions


@dataclass(frozen=True)
class Lease:
    """Ask for at most ``max_jobs`` jobs; the coordinator may hold the request ``wait_ms``."""

    max_jobs: int
    wait_ms: int


@dataclass(frozen=True)
class Start(Generic[J]):
    """Run these jobs as one task on one slot: alone, or ``batched`` (one sweep's short jobs
    one after the other)."""

    jobs: list[LeasedJob[J]]
    batched: bool


@dataclass(frozen=True)
class Heartbeat:
    """Heartbeat every attempt held, saying which have started."""

    attempts: list[int]
    started: list[int]


@dataclass(frozen=True)
class Cancel:
    """Stop these running jobs."""

    attempts: list[int]


@dataclass(frozen=True)
class Commit:
    """Commit these finished attempts, as one request."""

    attempts: list[int]


@dataclass(frozen=True)
class Release:
    """Hand these unstarted attempts back to the coordinator's queue."""

    attempts: list[int]


@dataclass(frozen=True)
class Drained:
    """Every leased job finished and was committed: the session ends."""


@dataclass(frozen=True)
class Register:
    """The session is gone: register a new one."""


@dataclass(frozen=True)
class Exit:
    """The session is gone while draining: exit (the leases held expire)."""


Action = Union[Lease, Start[J], Heartbeat, Cancel, Commit, Release, Drained, Register, Exit]

# Where a held attempt is.
_WAITING, _RUNNING, _CANCELLED, _READY, _COMMITTING = "waiting", "running", "cancelled", "ready", "committing"


class _Held(Generic[J]):
    __slots__ = ("sweep", "phase", "job")

    def __init__(self, sweep: str, job: J) -> None:
        self.sweep = sweep
        self.phase = _WAITING
        self.job = job


class Session(Generic[J]):
    """One registered session's state: ``handle(now_ns, event)`` gives the actions the
    event asks for, then what is due; ``wake_at()`` when it next has something to do
    without an event."""

    def __init__(self, slots: int, draining: bool = False) -> None:
        self.slots = max(1, slots)
        self.held: dict[int, _Held[J]] = {}
        #: The waiting attempts, in the order they start.
        self.backlog: collections.deque[int] = collections.deque()
        #: Tasks running (a batch counts once).
        self.tasks = 0
        self.lengths = JobLengths()
        #: The sweep whose jobs were leased last: the next lease is sized for it.
        self.leasing = ""
        #: Finished attempts whose commit is not sent, with their inline values, in order.
        self.ready: list[tuple[int, int]] = []
        self.ready_since = 0
        self.committing = 0
        self.next_lease = 0
        self.lease_unanswered = False
        self.draining = draining
        self.over = False

    def handle(self, now: int, event: Event[J]) -> list[Action[J]]:
        """What ``event``, at ``now`` (ns), comes to: the actions it asks for, then what is due."""
        if self.over:
            return []
        actions: list[Action[J]] = []
        if isinstance(event, Leased):
            self._leased(now, event, actions)
        elif isinstance(event, HeartbeatDue):
            attempts = sorted(self.held)
            actions.append(Heartbeat(attempts, [a for a in attempts if self.held[a].phase != _WAITING]))
        elif isinstance(event, HeartbeatAnswered):
            self._abandon(event.abandon, actions)
        elif isinstance(event, TaskEnded):
            self._task_ended(now, event.ran)
        elif isinstance(event, Committed):
            for attempt in event.attempts:
                held = self.held.get(attempt)
                if held is not None and held.phase == _COMMITTING:
                    del self.held[attempt]
                    self.committing -= 1
        elif isinstance(event, Drain):
            self.draining = True
            # Jobs leased ahead go back to the queue, uncounted: a drain lasts as long as
            # the running jobs, not the backlog.
            ahead = list(self.backlog)
            self.backlog.clear()
            for attempt in ahead:
                del self.held[attempt]
            if ahead:
                actions.append(Release(ahead))
        elif isinstance(event, Lost):
            running = sorted(a for a, h in self.held.items() if h.phase == _RUNNING)
            if running:
                actions.append(Cancel(running))
            actions.append(Exit() if self.draining else Register())
            self.over = True
            return actions
        self._due(now, actions)
        return actions

    def wake_at(self) -> Optional[int]:
        """When the session next has something to do without an event (ns), if ever."""
        if self.over:
            return None
        times = []
        if self.ready:
            times.append(self.ready_since + COMMIT_BATCH_WAIT_NS)
        if self._may_lease() and self._wanted() > 0:
            times.append(self.next_lease)
        return min(times) if times else None

    def _leased(self, now: int, event: Leased[J], actions: list[Action[J]]) -> None:
        self.lease_unanswered = False
        if not event.jobs:
            self.next_lease = now + min(max(event.retry_after_ms, 10), 5000) * _MS
        # Jobs of a sweep not known to be short beyond one per slot go back at once
        # (uncounted): the lease was sized for the sweep leased before.
        surplus = []
        for lease in event.jobs:
            self.leasing = lease.sweep
            if self.draining or self.tasks + len(self.backlog) >= self.lengths.depth(lease.sweep, self.slots):
                surplus.append(lease.attempt)
                continue
            if lease.attempt in self.held:
                continue
            self.backlog.append(lease.attempt)
            self.held[lease.attempt] = _Held(lease.sweep, lease.job)
        if surplus:
            actions.append(Release(surplus))

    def _abandon(self, abandon: list[int], actions: list[Action[J]]) -> None:
        cancel = []
        for attempt in abandon:
            held = self.held.get(attempt)
            if held is None or held.phase in (_READY, _COMMITTING, _CANCELLED):
                # A commit due or in flight settles it; a cancel is said once.
                continue
            if held.phase == _WAITING:
                del self.held[attempt]
                self.backlog.remove(attempt)
            else:
                held.phase = _CANCELLED
                cancel.append(attempt)
        if cancel:
            actions.append(Cancel(cancel))

    def _task_ended(self, now: int, ran: list[Ran[J]]) -> None:
        if not any(r.attempt in self.held and self.held[r.attempt].phase in (_RUNNING, _CANCELLED) for r in ran):
            return  # not a task of this session's
        self.tasks -= 1
        self.next_lease = now  # a slot is free
        again = []
        for r in ran:
            held = self.held.get(r.attempt)
            if held is None or held.phase not in (_RUNNING, _CANCELLED):
                continue
            outcome = r.outcome
            if isinstance(outcome, Ready):
                # Only a job that ran to its end measures its sweep.
                self.lengths.record(held.sweep, r.took_ns)
                held.phase = _READY
                if not self.ready:
                    self.ready_since = now
                self.ready.append((r.attempt, outcome.n_values))
            elif isinstance(outcome, Ended):
                del self.held[r.attempt]
            else:
                self.lengths.record_streaming(held.sweep)
                if held.phase == _CANCELLED:
                    del self.held[r.attempt]
                else:
                    held.phase = _WAITING
                    held.job = outcome.job
                    again.append(r.attempt)
        for attempt in reversed(again):
            self.backlog.appendleft(attempt)

    def _due(self, now: int, actions: list[Action[J]]) -> None:
        # Start what the backlog holds on the free slots (draining too: those leases are ours).
        while self.tasks < self.slots and self.backlog:
            first = self.backlog.popleft()
            sweep = self.held[first].sweep
            batch = self.lengths.batch(sweep)
            attempts = [first]
            while len(attempts) < (batch or 1) and self.backlog and self.held[self.backlog[0]].sweep == sweep:
                attempts.append(self.backlog.popleft())
            jobs = []
            for attempt in attempts:
                held = self.held[attempt]
                held.phase = _RUNNING
                jobs.append(LeasedJob(attempt, sweep, held.job))
            self.tasks += 1
            actions.append(Start(jobs, batch is not None))
        if self.draining and not self.held:
            self.over = True
            actions.append(Drained())
            return
        self._commit_due(now, actions)
        if self._may_lease() and now >= self.next_lease:
            wanted = self._wanted()
            if wanted > 0:
                # Idle, it lets the coordinator hold the request until jobs come.
                self.lease_unanswered = True
                actions.append(Lease(wanted, IDLE_LEASE_WAIT_MS if not self.held else 0))

    def _commit_due(self, now: int, actions: list[Action[J]]) -> None:
        while self.ready:
            values = sum(v for _, v in self.ready)
            due = (
                len(self.ready) >= COMMIT_BATCH
                or values >= COMMIT_BATCH_VALUES
                or self.tasks == 0
                or now >= self.ready_since + COMMIT_BATCH_WAIT_NS
            )
            if not due:
                return
            # At most COMMIT_BATCH attempts and COMMIT_BATCH_VALUES values a request.
            n = sent = 0
            for _, v in self.ready[:COMMIT_BATCH]:
                if n > 0 and sent + v > COMMIT_BATCH_VALUES:
                    break
                n, sent = n + 1, sent + v
            attempts = [attempt for attempt, _ in self.ready[:n]]
            del self.ready[:n]
            for attempt in attempts:
                self.held[attempt].phase = _COMMITTING
            self.committing += n
            actions.append(Commit(attempts))

    def _may_lease(self) -> bool:
        return not self.draining and not self.lease_unanswered

    def _wanted(self) -> int:
        """Jobs worth asking for: one per slot and what the slots hold ahead of the sweep
        leased last, less what is held; none while the backlog is more than half full with
        every slot busy, nor while too many commits wait."""
        prefetch = self.lengths.depth(self.leasing, self.slots) - self.slots
        if self.committing + len(self.ready) >= MAX_PENDING_COMMITS or (
            self.tasks == self.slots and len(self.backlog) > prefetch // 2
        ):
            return 0
        return max(self.slots + prefetch - self.tasks - len(self.backlog), 0)
