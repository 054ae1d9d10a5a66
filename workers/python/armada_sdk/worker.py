"""The worker runtime: run a family's jobs for a coordinator.

    python -m armada_sdk.worker MODULE:FAMILY --coordinator URL [--slots N] [--token T] [--tls-ca PEM]

It registers a session that declares the family and does what the session's state machine
(``session.py``, the same as armada's Rust worker's) says: leases jobs (one per slot, and
about 100 ms of work more per slot while a sweep's jobs prove short), runs them in N
processes side by side (short jobs in batches), heartbeats every
attempt it holds (on its one connection: grpcio cannot open the heartbeat connection with
the bytes the Rust worker's begins with, so a coordinator busy with a round of commits
answers these later), commits each finished trajectory (inline, or uploaded in batches when
long), reports a job's exception with FailAttempt (the job's fault; a slot process that
died is the worker's), retries a lost connection with backoff (saying where it tries),
registers again when the coordinator forgot its session, and on SIGTERM or Ctrl-C stops
leasing, hands back the jobs it has not started, finishes the running ones and exits 0.
A URL that reaches something other than a coordinator (the dashboard's port, TLS spoken to
a plain port or the reverse) or a coordinator that refuses the worker (its token) makes it
exit 1 at once, saying why.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import logging
import multiprocessing
import os
import platform
import signal
import queue
import random
import socket
import sys
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, TypeVar

import grpc

from . import __version__, connection, errors
from ._proto import job_pb2, service_pb2
from .episode import MAX_ERROR, Ran, Record, run_in_slot
from .family import Extension, load_family
from .keys import Job, ParamValue
from .session import (
    Action,
    Cancel,
    Commit,
    Committed,
    Drain,
    Drained,
    Ended,
    Event,
    Heartbeat,
    HeartbeatAnswered,
    HeartbeatDue,
    Lease,
    Leased,
    LeasedJob,
    Lost,
    Ready,
    Release,
    Session,
    Start,
    TaskEnded,
    Wake,
)
from .session import Ran as SessionRan

log = logging.getLogger("armada_sdk.worker")
T = TypeVar("T")

#: Trajectories longer than this are uploaded in batches of this many records before the
#: commit; shorter ones ride on the commit (a batch of commits in one CompleteAttempts).
UPLOAD_BATCH = 4096
#: CompleteAttempts calls in flight at most. The coordinator answers each after its commit
#: linger (200 ms by default): one at a time capped a worker at one batch per linger. The
#: session machine bounds the attempts they carry (MAX_PENDING_COMMITS).
COMMITS_IN_FLIGHT = 16
JOB = service_pb2.FAILURE_CAUSE_JOB
WORKER = service_pb2.FAILURE_CAUSE_WORKER


def _slot_init(worker_pid: int) -> None:
    """In each slot process: ignore SIGINT (Ctrl-C reaches the whole process group, and the
    running jobs must finish while the worker drains), and exit once the worker is gone (a
    worker killed with SIGKILL cannot stop its slots)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == worker_pid:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name="watch-worker", daemon=True).start()


def _slot_warm(family_spec: str) -> None:
    """Sent to each slot as its pool is made, so that the slot's process starts and imports
    the family while the worker registers and waits for jobs (about half a second for a
    spawned interpreter), not when the first job comes."""
    load_family(family_spec)


def job_of(spec: job_pb2.JobSpec) -> Job:
    """A lease's spec as a Job."""

    def params(m: Mapping[str, job_pb2.ParamValue]) -> dict[str, ParamValue]:
        return {name: getattr(v, v.WhichOneof("kind")) for name, v in m.items()}

    return Job(
        family=spec.family,
        benchmark=spec.benchmark,
        algorithm=spec.algorithm,
        seed=spec.seed,
        horizon=spec.horizon,
        sweep_seed=spec.sweep_seed,
        benchmark_params=params(spec.benchmark_params),
        algorithm_params=params(spec.algorithm_params),
    )


def _wire(records: list[Record]) -> dict[str, Any]:
    """Records as a commit or an upload batch carries them: as columns (one packed field per
    column), or as rows when they differ in width (the coordinator names the one at fault)."""
    if not records:
        return {}
    width = len(records[0].values)
    if any(len(r.values) != width for r in records):
        return {"records": [job_pb2.StepRecord(step=r.step, elapsed_ms=r.elapsed_ms, metrics=r.values) for r in records]}
    columns = job_pb2.RecordColumns(
        steps=[r.step for r in records],
        elapsed_ms=[r.elapsed_ms for r in records],
        metrics=[job_pb2.MetricColumn(values=column) for column in zip(*(r.values for r in records))] if width else [],
    )
    return {"columns": columns}


class SessionLost(Exception):
    """The coordinator no longer knows this session (it restarted, or forgot a silent worker)."""


class Unreachable(Exception):
    """The coordinator is out of reach while the worker drains: it stops waiting for it, as
    armada's Rust worker does (the leases it holds expire and their jobs are queued again)."""



def describe_processor() -> str:
    """The processor's model and x86-64 feature level, as armada's Rust worker says it
    (`Intel(R) Xeon(R) ... (x86-64-v4)`): recorded with every trajectory this worker commits."""
    model = ""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    has = flags.issuperset
    if platform.machine() not in ("x86_64", "AMD64"):
        level = platform.machine()
    elif has({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma", "bmi2", "movbe"}):
        level = "x86-64-v4"
    elif has({"avx2", "fma", "bmi1", "bmi2", "f16c", "lzcnt" if "lzcnt" in flags else "abm", "movbe"}):
        level = "x86-64-v3"
    elif has({"sse4_2", "sse4_1", "ssse3", "popcnt", "cx16"}):
        level = "x86-64-v2"
    else:
        level = "x86-64-v1"
    return f"{model or platform.machine()} ({level})"

@dataclass
class Held:
    """A leased attempt sent to a slot: its job runs in a slot process, alone or in a batch
    of short jobs (``future`` gives the batch's outcomes, this one's at ``index``)."""

    #: The lease, as the coordinator granted it.
    lease: service_pb2.JobLease
    #: The outcomes of the batch the job runs in.
    future: cf.Future[list[Ran]]
    #: The job's place in that batch.
    index: int


#: A leased job as the session machine carries it: the lease, and the job it names.
LeaseAndJob = tuple[service_pb2.JobLease, Job]


class Worker:
    """A worker of one family (or extension) for the coordinator at ``coordinator``, running
    ``slots`` jobs side by side: ``run()`` until drained (``drain()``, SIGTERM).
    ``family_spec`` names the family as ``MODULE:ATTRIBUTE``; ``token`` is the bearer token
    sent with every call, ``tls_ca`` the PEM certificate that signed an ``https://``
    coordinator's, and ``name`` the worker's name in the coordinator's messages (default:
    host:pid)."""

    def __init__(
        self,
        family_spec: str,
        coordinator: str,
        slots: int,
        token: Optional[str] = None,
        tls_ca: Optional[str] = None,
        name: Optional[str] = None,
    ):
        self.family_spec = family_spec
        self.family = load_family(family_spec)
        self.coordinator = coordinator
        self.slots = max(1, slots)
        self.metadata = connection.metadata(token)
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        _, self.workers = connection.stubs(connection.channel(coordinator, tls_ca))
        self.draining = False
        self.session = ""
        self.key_salt = ""
        self.described = b""
        self.heartbeat_every = 1.0
        #: What the session's state machine says to do (a new one per session).
        self.machine: Session[LeaseAndJob] = Session(self.slots)
        self.epoch = time.monotonic_ns()
        #: Events for the machine, in order.
        self.events: collections.deque[Event[LeaseAndJob]] = collections.deque()
        #: Attempts sent to the slots, and the batches (futures) running, with their attempts.
        self.held: dict[int, Held] = {}
        self.tasks: dict[cf.Future[list[Ran]], list[int]] = {}
        #: Attempts the coordinator said to stop.
        self.cancelled: set[int] = set()
        #: Finished attempts' records, until their commit is sent.
        self.ready: dict[int, list[Record]] = {}
        #: Whether a Register was ever answered: until then an odd answer is a wrong URL.
        self.registered = False
        self.pool: Optional[cf.ProcessPoolExecutor] = None
        #: The threads that send commit batches (``run`` starts them)...
        self.committer: Optional[cf.ThreadPoolExecutor] = None
        #: The thread that sends Lease requests, and the one in flight (the machine asks for
        #: one at a time): the loop sees tasks end and commits answered while it travels.
        self.leaser: Optional[cf.ThreadPoolExecutor] = None
        self.lease_call: Optional[cf.Future[service_pb2.LeaseResponse]] = None
        #: ...and the attempts of those answered (a thread-safe queue back to the loop).
        self.settled: queue.Queue[list[int]] = queue.Queue()
        #: Done once something was put in ``settled`` since the loop last looked, so that the
        #: loop's wait for its slots also ends when a commit is answered (the machine may be
        #: waiting for that to lease again), not at its next 50 ms turn.
        self.settled_signal: cf.Future[None] = cf.Future()
        self.done = 0
        self.done_lock = threading.Lock()

    # ---- calls, retried while the coordinator is out of reach

    def _call(self, what: str, call: Callable[[], T], cap: float = 5.0) -> T:
        """``call``, retried while the coordinator is out of reach, waiting 0.1 s doubling
        to ``cap`` between tries. Any other error is raised as an ArmadaError; so is a
        wrong server (errors.WrongServer) before the first Register was answered: later,
        an odd answer is a connection going wrong, and retried."""
        backoff = 0.1
        while True:
            try:
                return call()
            except grpc.RpcError as e:
                code, details = e.code(), e.details() or ""
                if code == grpc.StatusCode.NOT_FOUND and "session" in details:
                    raise SessionLost(details) from e
                kind, why = errors.diagnose(self.coordinator, code, details, probe=not self.registered)
                if kind is errors.WrongServer and not self.registered:
                    raise errors.WrongServer(f"coordinator {self.coordinator}: {why}", code.name, details) from e
                if kind not in (errors.Unavailable, errors.WrongServer):
                    raise kind(why, code.name, details) from e
                if self.draining:
                    raise Unreachable(f"coordinator {self.coordinator}: {code.name} ({why}) while draining") from e
                log.warning("coordinator %s: %s (%s); retrying %s in %.1f s", self.coordinator, code.name, why, what, backoff)
                time.sleep(backoff)
                # Only a coordinator that answered may be waited for long: one not reached
                # (not up yet, restarting) is tried again every 5 s at most.
                reached = "failed to connect to all addresses" not in details
                backoff = min(backoff * 2, cap if reached else 5.0)

    def register(self) -> None:
        """Open a session that declares the family (retried while the coordinator is out of
        reach); the coordinator answers with the key salt and how it describes the family."""
        request = service_pb2.RegisterRequest(
            name=self.name,
            slots=self.slots,
            families=[self.family.name],
            declarations=[self.family.to_proto()],
            host=socket.gethostname(),
            software=f"armada-sdk {__version__} (Python {platform.python_version()})",
            processor=describe_processor(),
        )
        # UNAVAILABLE here may be the coordinator's own trouble (its store cannot record the
        # declaration: a full disk), which seconds rarely mend: waits grow to a minute.
        reply = self._call("Register", lambda: self.workers.Register(request, metadata=self.metadata, timeout=30), cap=60.0)
        self.session, self.key_salt = reply.session, reply.key_salts[self.family.name]
        self.registered = True
        # How the coordinator knows the family (an extension's metrics are its family's).
        self.described = reply.families[0].SerializeToString()
        self.family.contract(reply.families[0])  # a mismatch shows here, not in every job
        self.heartbeat_every = max(reply.heartbeat_interval_ms, 20) / 1000
        extends = f" extending {self.family.extends}" if isinstance(self.family, Extension) else ""
        log.info("registered with %s as %s (%d slots, family %s%s, key salt %s)", self.coordinator, reply.worker_id, self.slots, self.family.name, extends, self.key_salt)

    # ---- the loop

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        context = multiprocessing.get_context("spawn")
        pool = cf.ProcessPoolExecutor(self.slots, context, initializer=_slot_init, initargs=(os.getpid(),))
        # A pool starts a process per task submitted while none is idle, up to its slots.
        for _ in range(self.slots):
            pool.submit(_slot_warm, self.family_spec)
        return pool

    def run(self) -> None:
        """Register, then carry out what the session machine asks (lease, run, heartbeat,
        commit) until drained. Raises an ArmadaError when the coordinator refuses the
        worker or the URL reaches another server."""
        self.committer = cf.ThreadPoolExecutor(COMMITS_IN_FLIGHT, thread_name_prefix="commit")
        self.leaser = cf.ThreadPoolExecutor(1, thread_name_prefix="lease")
        gave_up = False
        self.pool = self._new_pool()
        try:
            next_heartbeat = 0
            drain_told = False
            while not (self.draining and not self.session):
                try:
                    if not self.session:
                        self.register()
                        self.machine, self.epoch = Session(self.slots, self.draining), time.monotonic_ns()
                        drain_told = self.draining
                        self.events = collections.deque([Wake()])
                        # A phase of its own: workers started together do not heartbeat together.
                        next_heartbeat = time.monotonic_ns() + int(random.random() * self.heartbeat_every * 1e9)
                    # A drain is told once no lease is in flight: the jobs it brings are held.
                    if self.draining and not drain_told and self.lease_call is None:
                        drain_told = True
                        self.events.append(Drain())
                    if time.monotonic_ns() >= next_heartbeat:
                        self.events.append(HeartbeatDue())
                        next_heartbeat = time.monotonic_ns() + int(self.heartbeat_every * 1e9)
                    # A fresh signal before the queue is read: whatever is put after this
                    # read ends the next wait.
                    if self.settled_signal.done():
                        self.settled_signal = cf.Future()
                    while not self.settled.empty():
                        self.events.append(Committed(self.settled.get()))
                    if self._carry_out():
                        break
                    # Up to 50 ms (a drain or a heartbeat waits no longer), less when the
                    # machine wants to act sooner (a commit batch's wait).
                    wake = self.machine.wake_at()
                    until = 0.05 if wake is None else min(max(wake - self._now(), 0) / 1e9, 0.05)
                    self._settle(timeout=until)
                    self.events.append(Wake())
                except (SessionLost, Unreachable) as e:
                    lost_while_draining = self.draining
                    self._stop(self.machine.handle(self._now(), Lost()))
                    # What the lost session held is void: its tasks' outcomes are not this
                    # session's (their slots finish them; nothing is sent).
                    self.tasks.clear()
                    self.held.clear()
                    self.ready.clear()
                    self.cancelled.clear()
                    self.lease_call = None
                    if lost_while_draining:
                        held = len(self.held)
                        log.warning("%s: giving up the %d job(s) it held (queued again when their leases expire)", e, held)
                        gave_up = True
                        break
                    log.warning("%s; registering again (the jobs it held are void)", e)
                    self.session = ""
        except BaseException:
            # Refused, or a wrong server: nothing to finish (the slots exit with the worker).
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.committer.shutdown(wait=False, cancel_futures=True)
            self.leaser.shutdown(wait=False, cancel_futures=True)
            raise
        self.committer.shutdown()
        self.leaser.shutdown()
        self.pool.shutdown()
        if gave_up:
            log.info("exiting after %d jobs, without reaching the coordinator", self.done)
        else:
            log.info("drained after %d jobs: every leased job finished and was committed; exiting", self.done)

    def _now(self) -> int:
        return time.monotonic_ns() - self.epoch

    def _carry_out(self) -> bool:
        """Feed the machine its events and do what it asks; True once drained."""
        while self.events:
            for action in self.machine.handle(self._now(), self.events.popleft()):
                if isinstance(action, Lease):
                    self._lease(action)
                elif isinstance(action, Start):
                    self._start(action)
                elif isinstance(action, Heartbeat):
                    request = service_pb2.HeartbeatRequest(session=self.session, attempt_ids=action.attempts, started_ids=action.started)
                    reply = self._call("Heartbeat", lambda: self.workers.Heartbeat(request, metadata=self.metadata, timeout=30))
                    self.events.append(HeartbeatAnswered(list(reply.abandon)))
                elif isinstance(action, Cancel):
                    self._stop([action])
                elif isinstance(action, Commit):
                    assert self.committer is not None, "run() starts the committer"
                    self.committer.submit(self._commit_and_settle, [(attempt, self.ready.pop(attempt)) for attempt in action.attempts])
                elif isinstance(action, Release):
                    release = service_pb2.ReleaseAttemptsRequest(session=self.session, attempt_ids=action.attempts)
                    reply = self._call("ReleaseAttempts", lambda: self.workers.ReleaseAttempts(release, metadata=self.metadata, timeout=30))
                    log.info("handed back %d job(s) not started", reply.released)
                elif isinstance(action, Drained):
                    return True
        return False

    def _stop(self, actions: list[Action[LeaseAndJob]]) -> None:
        """Cancel what the actions say to: a batch not started yet is cancelled once all its
        attempts are (a running one finishes: a slot process is not interrupted)."""
        for action in actions:
            if not isinstance(action, Cancel):
                continue
            for attempt in action.attempts:
                log.info("attempt %d: the coordinator says stop (cancelled, or its job no longer held)", attempt)
                self.cancelled.add(attempt)
        for future, attempts in self.tasks.items():
            if all(a in self.cancelled for a in attempts):
                future.cancel()

    def _lease(self, action: Lease) -> None:
        """Send the Lease request on the leasing thread; ``_settle`` takes its answer."""
        request = service_pb2.LeaseRequest(session=self.session, max_jobs=action.max_jobs, wait_ms=action.wait_ms)
        assert self.leaser is not None and self.lease_call is None, "run() starts the leaser; one lease at a time"
        self.lease_call = self.leaser.submit(self._call, "Lease", lambda: self.workers.Lease(request, metadata=self.metadata, timeout=30))

    def _leased(self, reply: service_pb2.LeaseResponse) -> None:
        """Tell the machine what a Lease brought (a job whose key this worker computes
        otherwise fails as its trouble, and is not held)."""
        jobs = []
        for lease in reply.leases:
            job = job_of(lease.spec)
            key = job.key(self.key_salt)
            if key != lease.job_key:
                why = f"this worker computes key {key} for job {lease.job_key}: its family is not the one the sweep was keyed by"
                self._fail(lease.attempt_id, why, WORKER)
                continue
            jobs.append(LeasedJob(lease.attempt_id, lease.sweep_id, (lease, job)))
        self.events.append(Leased(jobs, reply.retry_after_ms))

    def _start(self, action: Start[LeaseAndJob]) -> None:
        """Send a task's jobs to a slot: one process hop for a batch of short jobs."""
        assert self.pool is not None, "run() starts the slots' pool"
        future = self.pool.submit(run_in_slot, self.family_spec, self.described, [job for _, job in (j.job for j in action.jobs)])
        self.tasks[future] = [j.attempt for j in action.jobs]
        for index, leased in enumerate(action.jobs):
            self.held[leased.attempt] = Held(leased.job[0], future, index)

    def _settle(self, timeout: float) -> None:
        """Wait for a task to end, a lease or a commit to be answered (at most ``timeout``
        seconds), and tell the machine what each ended task's jobs came to and what the
        lease brought."""
        waited: list[cf.Future[Any]] = [*self.tasks, self.settled_signal]
        if self.lease_call is not None:
            waited.append(self.lease_call)
        done, _ = cf.wait(waited, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        broken = False
        for future in done:
            if future is self.settled_signal:
                continue  # the loop reads ``settled`` next
            if future is self.lease_call:
                self.lease_call = None
                self._leased(future.result())  # a lost session or a refusal raises here
                continue
            ran = []
            for attempt in self.tasks.pop(future):
                held = self.held.pop(attempt)
                self.cancelled.discard(attempt)
                ran.append(self._outcome(attempt, held))
                trouble = None if future.cancelled() else future.exception()
                broken = broken or isinstance(trouble, BrokenProcessPool)
            self.events.append(TaskEnded(ran))
        if broken:
            log.warning("a slot process died: starting the slots again")
            assert self.pool is not None, "run() starts the slots' pool"
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool()

    def _outcome(self, attempt: int, held: Held) -> SessionRan[LeaseAndJob]:
        """What the job of ``attempt`` came to: its records kept for its commit when it ran
        to its end; a failure reported."""
        if held.future.cancelled():
            return SessionRan(attempt, Ended(), 0)
        trouble = held.future.exception()
        if trouble is not None:
            # The slot process died (killed, out of memory) or could not run the family:
            # the worker's trouble, not the job's (the coordinator runs it again).
            self._fail(attempt, f"this worker's slot could not run the job: {trouble!r}", WORKER)
            return SessionRan(attempt, Ended(), 0)
        ran = held.future.result()[held.index]
        if isinstance(ran.outcome, str):
            self._fail(attempt, ran.outcome, JOB)  # the job's own exception, with its traceback
            return SessionRan(attempt, Ended(), round(ran.seconds * 1e9))
        records = ran.outcome
        self.ready[attempt] = records
        # Long trajectories are uploaded before their commit, not carried inline.
        n_values = 0 if len(records) > UPLOAD_BATCH else sum(len(r.values) + 2 for r in records)
        return SessionRan(attempt, Ready(n_values), round(ran.seconds * 1e9))

    def _commit_and_settle(self, batch: list[tuple[int, list[Record]]]) -> None:
        """On a committer thread: one batch the machine made in one CompleteAttempts call
        (long trajectories uploaded first), so that the loop keeps leasing and running while
        the coordinator groups commits into parts (it answers after its commit linger); the
        batch's attempts are then settled, committed or not."""
        try:
            self._commit(batch)
        except (errors.ArmadaError, SessionLost, Unreachable) as e:
            # The jobs were cancelled or failed meanwhile, the records refused, or the
            # session is gone: the coordinator decides; this worker goes on.
            log.warning("%d attempt(s) not committed: %s", len(batch), e)
        self.settled.put([attempt for attempt, _ in batch])
        try:
            self.settled_signal.set_result(None)
        except cf.InvalidStateError:
            pass  # already done: the loop has not looked since

    def _commit(self, finished: list[tuple[int, list[Record]]]) -> None:
        if not finished:
            return
        requests = []
        for attempt, records in finished:
            inline = _wire(records)
            if len(records) > UPLOAD_BATCH:
                batches = [
                    service_pb2.RecordBatch(attempt_id=attempt, session=self.session, **_wire(records[i : i + UPLOAD_BATCH]))
                    for i in range(0, len(records), UPLOAD_BATCH)
                ]
                self._call("UploadRecords", lambda: self.workers.UploadRecords(iter(batches), metadata=self.metadata, timeout=600))
                inline = {}
            requests.append(service_pb2.CompleteAttemptRequest(attempt_id=attempt, n_records=len(records), **inline))
        request = service_pb2.CompleteAttemptsRequest(attempts=requests, session=self.session)
        reply = self._call("CompleteAttempts", lambda: self.workers.CompleteAttempts(request, metadata=self.metadata, timeout=600))
        for outcome in reply.outcomes:
            if outcome.code != 0:
                log.warning("attempt %d not committed: %s", outcome.attempt_id, outcome.message)
            elif not outcome.committed:
                log.info("attempt %d: another attempt had committed its job first", outcome.attempt_id)
            else:
                with self.done_lock:
                    self.done += 1

    def _fail(self, attempt: int, error: str, cause: int) -> None:
        """Report a failed attempt: ``cause`` JOB when the job's own code raised (it fails
        at once: it would raise again), WORKER for this worker's trouble (run again)."""
        log.warning("attempt %d failed: %s", attempt, error.strip().splitlines()[-1] if error.strip() else error)
        request = service_pb2.FailAttemptRequest(attempt_id=attempt, error=error[-MAX_ERROR:], session=self.session, cause=cause)
        try:
            self._call("FailAttempt", lambda: self.workers.FailAttempt(request, metadata=self.metadata, timeout=30))
        except errors.ArmadaError as e:
            log.warning("attempt %d: the failure was not recorded: %s: %s", attempt, e.code, e)

    def drain(self, *_: object) -> None:
        """Stop leasing, hand back the jobs not started, finish the running ones (SIGTERM)."""
        if not self.draining:
            log.info("draining: no more leases; finishing the running jobs")
        self.draining = True


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m armada_sdk.worker`` with the arguments ``argv`` (default: the command
    line's): its exit code (0 once drained, 1 when refused or pointed at the wrong server)."""
    parser = argparse.ArgumentParser(prog="python -m armada_sdk.worker", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", help="the family to run, as MODULE:ATTRIBUTE (e.g. armada_sdk.examples.noisy:FAMILY)")
    parser.add_argument("--coordinator", default=os.environ.get("ARMADA_COORDINATOR", "http://127.0.0.1:7070"), help="the coordinator's URL")
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 1, help="jobs run side by side, each in its own process (default: the cores)")
    parser.add_argument("--token", default=os.environ.get("ARMADA_TOKEN"), help="bearer token (default: $ARMADA_TOKEN)")
    parser.add_argument("--tls-ca", default=None, help="CA certificate (PEM) for an https:// coordinator")
    parser.add_argument("--name", default=None, help="a name for the coordinator's messages (default: host:pid)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        worker = Worker(args.family, args.coordinator, args.slots, args.token, args.tls_ca, args.name)
    except (ValueError, TypeError, ImportError) as e:
        parser.error(str(e))
    signal.signal(signal.SIGTERM, worker.drain)
    signal.signal(signal.SIGINT, worker.drain)
    try:
        worker.run()
    except errors.WrongServer as e:
        log.error("%s", e)
        return 1
    except errors.ArmadaError as e:
        log.error("the coordinator %s refused this worker: %s: %s", args.coordinator, e.code, e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
