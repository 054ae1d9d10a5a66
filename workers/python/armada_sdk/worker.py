"""The worker runtime: run a family's jobs for a coordinator.

    python -m armada_sdk.worker MODULE:FAMILY --coordinator URL [--slots N] [--token T] [--tls-ca PEM]

It registers a session that declares the family, leases jobs (one per slot, and about
100 ms of work more per slot while a sweep's jobs prove short, as armada's Rust worker
does), runs them in N processes side by side (short jobs in batches), heartbeats every
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

log = logging.getLogger("armada_sdk.worker")
T = TypeVar("T")

#: Trajectories longer than this are uploaded in batches of this many records before the
#: commit; shorter ones ride on the commit (a batch of commits in one CompleteAttempts).
UPLOAD_BATCH = 4096
#: The lease-depth rule both workers obey (armada-proto's lease.rs, whose test holds these
#: three numbers to it). A sweep whose jobs take less than this on average (nanoseconds) has
#: short jobs: each slot holds some leased ahead, and runs them as a batch (one process hop
#: for several).
SHORT_JOB_NS = 250_000_000
#: The work a slot holds leased ahead while its sweep's jobs are short...
AHEAD_WORK_NS = 100_000_000
#: ...in this many jobs at most.
PREFETCH_PER_SLOT = 64

#: Finished attempts awaiting their commit at most; past this nothing is leased.
MAX_PENDING_COMMITS = 4096
#: An idle worker lets the coordinator hold a lease that finds nothing this long, to be
#: answered as soon as jobs are queued.
IDLE_LEASE_WAIT_MS = 500

JOB = service_pb2.FAILURE_CAUSE_JOB
WORKER = service_pb2.FAILURE_CAUSE_WORKER


class JobLengths:
    """How long each sweep's jobs take on this worker: a running mean per sweep (the last
    eight jobs weigh most), as armada's Rust worker keeps it (``JobLengths`` in
    workers/runtime/src/worker.rs). Leasing ahead follows the sweep being leased, so that
    after a sweep of short jobs the long jobs of the next are not leased many per slot,
    starving the other workers; a sweep not measured yet counts as long."""

    #: Sweeps remembered at most (the measures are dropped past it).
    MAX_SWEEPS = 1024

    def __init__(self) -> None:
        self.mean: dict[str, int] = {}  # nanoseconds, as the Rust worker's Durations

    def record(self, sweep: str, took: float) -> None:
        """A job of ``sweep`` ran to its end in ``took`` seconds."""
        if sweep not in self.mean and len(self.mean) >= self.MAX_SWEEPS:
            self.mean.clear()
        ns = round(took * 1e9)
        mean = self.mean.get(sweep, ns)
        self.mean[sweep] = (mean * 7 + ns) // 8

    def ahead(self, sweep: str) -> int:
        """How many of ``sweep``'s jobs a slot holds leased ahead: about 100 ms of them when
        they are short (1 to PREFETCH_PER_SLOT), else none."""
        mean = self.mean.get(sweep)
        if mean is None or mean >= SHORT_JOB_NS:
            return 0
        return min(max(AHEAD_WORK_NS // max(mean, 1), 1), PREFETCH_PER_SLOT)

    def batch(self, sweep: str) -> Optional[int]:
        """How many of ``sweep``'s jobs go to a slot at once (what it holds ahead); None: one
        at a time (a long job, or one not measured yet)."""
        return self.ahead(sweep) or None

    def depth(self, sweep: str, slots: int) -> int:
        """Jobs of ``sweep`` worth holding on ``slots`` slots: one per slot, and what each
        holds ahead."""
        return slots * (1 + self.ahead(sweep))


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
        #: Attempts sent to the slots (at most one future a slot)...
        self.held: dict[int, Held] = {}
        #: ...and those leased ahead, waiting for a slot.
        self.backlog: collections.deque[tuple[service_pb2.JobLease, Job]] = collections.deque()
        self.lengths = JobLengths()
        #: The sweep whose jobs were leased last: the next lease is sized for it.
        self.leasing = ""
        self.next_lease = 0.0
        #: Whether a Register was ever answered: until then an odd answer is a wrong URL.
        self.registered = False
        self.pool: Optional[cf.ProcessPoolExecutor] = None
        #: Finished attempts for the committer thread (None: stop)...
        self.outbox: queue.Queue[Optional[tuple[int, list[Record]]]] = queue.Queue()
        #: ...heartbeated until their commit is answered, as the Rust worker does.
        self.committing: set[int] = set()
        self.lock = threading.Lock()
        self.done = 0

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
        return cf.ProcessPoolExecutor(self.slots, context, initializer=_slot_init, initargs=(os.getpid(),))

    def run(self) -> None:
        """Register, then lease, run, heartbeat and commit until drained. Raises an
        ArmadaError when the coordinator refuses the worker or the URL reaches another
        server."""
        committer = threading.Thread(target=self._commits, name="committer", daemon=True)
        committer.start()
        gave_up = False
        self.pool = self._new_pool()
        try:
            next_heartbeat = 0.0
            while not (self.draining and not self.held and not self.backlog):
                try:
                    if not self.session:
                        self.register()
                        # A phase of its own: workers started together do not heartbeat together.
                        next_heartbeat = time.monotonic() + random.random() * self.heartbeat_every
                    if self.draining:
                        self._release_unstarted()
                    else:
                        self._lease()
                    self._start()
                    if time.monotonic() >= next_heartbeat:
                        self._heartbeat()
                        next_heartbeat = time.monotonic() + self.heartbeat_every
                    self._settle(timeout=0.05)
                except SessionLost as e:
                    log.warning("%s; registering again (the jobs it held are void)", e)
                    self._drop_held()
                    self.session = ""
                except Unreachable as e:
                    held = len(self.held) + len(self.backlog)
                    log.warning("%s: giving up the %d job(s) it held (queued again when their leases expire)", e, held)
                    self._drop_held()
                    gave_up = True
        except BaseException:
            # Refused, or a wrong server: nothing to finish (the slots exit with the worker).
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.outbox.put(None)
        committer.join()
        self.pool.shutdown()
        if gave_up:
            log.info("exiting after %d jobs, without reaching the coordinator", self.done)
        else:
            log.info("drained after %d jobs: every leased job finished and was committed; exiting", self.done)

    def _drop_held(self) -> None:
        for held in self.held.values():
            held.future.cancel()  # only what has not started
        self.held.clear()
        self.backlog.clear()

    def _tasks(self) -> int:
        """Futures in the slots' pool (a batch counts once)."""
        return len({id(h.future) for h in self.held.values()})

    def _lease(self) -> None:
        # As the Rust worker: one job per slot, and what a slot holds ahead of the sweep
        # leased last; leased when a slot is idle or the backlog is down to half, so that
        # one Lease call serves many short jobs.
        if time.monotonic() < self.next_lease or len(self.committing) >= MAX_PENDING_COMMITS:
            return
        tasks, waiting = self._tasks(), len(self.backlog)
        prefetch = self.lengths.depth(self.leasing, self.slots) - self.slots
        wanted = 0 if tasks == self.slots and waiting > prefetch // 2 else self.slots + prefetch - tasks - waiting
        if wanted <= 0:
            return
        idle = tasks == 0 and waiting == 0 and not self.committing
        wait_ms = IDLE_LEASE_WAIT_MS if idle else 0
        request = service_pb2.LeaseRequest(session=self.session, max_jobs=wanted, wait_ms=wait_ms)
        reply = self._call("Lease", lambda: self.workers.Lease(request, metadata=self.metadata, timeout=30))
        if not reply.leases:
            self.next_lease = time.monotonic() + min(max(reply.retry_after_ms, 10), 5000) / 1000
        surplus = []
        for lease in reply.leases:
            self.leasing = lease.sweep_id
            # The lease was sized for the sweep leased before: jobs of one not known to be
            # short, beyond one per slot, go back at once (uncounted).
            if self._tasks() + len(self.backlog) >= self.lengths.depth(lease.sweep_id, self.slots):
                surplus.append(lease.attempt_id)
                continue
            job = job_of(lease.spec)
            key = job.key(self.key_salt)
            if key != lease.job_key:
                why = f"this worker computes key {key} for job {lease.job_key}: its family is not the one the sweep was keyed by"
                self._fail(lease.attempt_id, why, WORKER)
                continue
            self.backlog.append((lease, job))
        if surplus:
            release = service_pb2.ReleaseAttemptsRequest(session=self.session, attempt_ids=surplus)
            self._call("ReleaseAttempts", lambda: self.workers.ReleaseAttempts(release, metadata=self.metadata, timeout=30))
            log.info("handed back %d job(s) of a sweep whose jobs are not known to be short", len(surplus))

    def _start(self) -> None:
        """Send what the backlog holds to the free slots (draining too: those leases are
        ours): short jobs as a batch of what a slot holds ahead, one process hop for
        several; others one at a time."""
        while self.backlog and self._tasks() < self.slots:
            sweep = self.backlog[0][0].sweep_id
            n = self.lengths.batch(sweep) or 1
            batch = [self.backlog.popleft()]
            while len(batch) < n and self.backlog and self.backlog[0][0].sweep_id == sweep:
                batch.append(self.backlog.popleft())
            assert self.pool is not None, "run() starts the slots' pool"
            future = self.pool.submit(run_in_slot, self.family_spec, self.described, [job for _, job in batch])
            for index, (lease, _) in enumerate(batch):
                self.held[lease.attempt_id] = Held(lease, future, index)

    def _heartbeat(self) -> None:
        # What is in the slots or awaits its commit has started; the backlog waits.
        with self.lock:
            committing = set(self.committing)
        started = list(self.held) + list(committing)
        attempts = started + [lease.attempt_id for lease, _ in self.backlog]
        request = service_pb2.HeartbeatRequest(session=self.session, attempt_ids=attempts, started_ids=started)
        reply = self._call("Heartbeat", lambda: self.workers.Heartbeat(request, metadata=self.metadata, timeout=30))
        abandon = set(reply.abandon) - committing  # the coordinator settles those with their commit
        if not abandon:
            return
        self.backlog = collections.deque(item for item in self.backlog if item[0].attempt_id not in abandon)
        for attempt in abandon:
            held = self.held.pop(attempt, None)
            if held is not None:
                # A batch runs on while another of its attempts is held.
                if not any(h.future is held.future for h in self.held.values()):
                    held.future.cancel()
            log.info("attempt %d abandoned (cancelled, or its job no longer held)", attempt)

    def _settle(self, timeout: float) -> None:
        running = {id(h.future): h.future for h in self.held.values()}
        if not running:
            time.sleep(timeout)
            return
        done, _ = cf.wait(list(running.values()), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        if not done:
            return
        self.next_lease = time.monotonic()  # a slot is free
        broken = False
        for attempt, held in list(self.held.items()):
            if held.future not in done:
                continue
            del self.held[attempt]
            if held.future.cancelled():
                continue
            trouble = held.future.exception()
            if trouble is not None:
                # The slot process died (killed, out of memory) or could not run the family:
                # the worker's trouble, not the job's (the coordinator runs it again).
                self._fail(attempt, f"this worker's slot could not run the job: {trouble!r}", WORKER)
                broken = broken or isinstance(trouble, BrokenProcessPool)
                continue
            ran = held.future.result()[held.index]
            if isinstance(ran.outcome, str):
                self._fail(attempt, ran.outcome, JOB)  # the job's own exception, with its traceback
            else:
                # Only a job that ran to its end measures its sweep.
                self.lengths.record(held.lease.sweep_id, ran.seconds)
                with self.lock:
                    self.committing.add(attempt)
                self.outbox.put((attempt, ran.outcome))
        if broken:
            log.warning("a slot process died: starting the slots again")
            assert self.pool is not None, "run() starts the slots' pool"
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = self._new_pool()

    def _commits(self) -> None:
        """The committer thread: finished attempts go in one CompleteAttempts call per batch
        (long trajectories uploaded first), so that the loop keeps leasing and running while
        the coordinator groups commits into parts (it answers after its commit linger)."""
        while True:
            batch = [self.outbox.get()]
            while len(batch) < 512 and not self.outbox.empty():
                batch.append(self.outbox.get())
            stop = None in batch
            finished = [item for item in batch if item is not None]
            try:
                self._commit(finished)
            except (errors.ArmadaError, SessionLost, Unreachable) as e:
                # The jobs were cancelled or failed meanwhile, the records refused, or the
                # session is gone: the coordinator decides; this worker goes on.
                log.warning("%d attempt(s) not committed: %s", len(finished), e)
            with self.lock:
                self.committing.difference_update(attempt for attempt, _ in finished)
            if stop:
                return

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

    def _release_unstarted(self) -> None:
        """Hand back the jobs leased ahead (uncounted): a drain lasts as long as the running
        jobs, not the backlog."""
        if not self.backlog:
            return
        unstarted = [lease.attempt_id for lease, _ in self.backlog]
        self.backlog.clear()
        request = service_pb2.ReleaseAttemptsRequest(session=self.session, attempt_ids=unstarted)
        reply = self._call("ReleaseAttempts", lambda: self.workers.ReleaseAttempts(request, metadata=self.metadata, timeout=30))
        log.info("draining: handed back %d job(s) not started", reply.released)

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
