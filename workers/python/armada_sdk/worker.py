"""The worker runtime: run a family's jobs for a coordinator.

    python -m armada_sdk.worker MODULE:FAMILY --coordinator URL [--slots N] [--token T] [--tls-ca PEM]

It registers a session that declares the family, leases jobs ahead (up to 16 per slot),
runs them in N processes side by side, heartbeats every attempt it holds, commits each
finished trajectory (inline, or uploaded in batches when long), reports a job's exception
with FailAttempt, retries a lost connection with backoff (saying where it tries), registers
again when the coordinator forgot its session, and on SIGTERM or Ctrl-C stops leasing,
hands back the jobs it has not started, finishes the running ones and exits 0.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import logging
import multiprocessing
import os
import platform
import signal
import queue
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

import grpc

from . import __version__, connection
from ._proto import job_pb2, service_pb2
from .episode import MAX_ERROR, Record, run_in_slot
from .family import load_family
from .keys import Job

log = logging.getLogger("armada_sdk.worker")
T = TypeVar("T")

#: Trajectories longer than this are uploaded in batches of this many records before the
#: commit; shorter ones ride on the commit (a batch of commits in one CompleteAttempts).
UPLOAD_BATCH = 4096
#: Jobs leased per slot at most (queued in the slot processes' pool).
LEASE_AHEAD = 16
#: Jobs shorter than this on average (milliseconds) run in chunks of CHUNK per process hop.
SHORT_JOB_MS = 5.0
CHUNK = 8


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

    def params(m) -> dict:
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


def _wire(records: list[Record]) -> dict:
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
    model, flags = "", set()
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
    """A leased attempt: its job runs in a slot process, alone or in a chunk of short jobs
    (``future`` gives the chunk's outcomes, this one's at ``index``)."""

    lease: service_pb2.JobLease
    future: cf.Future
    index: int


class Worker:
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
        self.held: dict[int, Held] = {}
        #: Jobs per slot task: 1 until jobs prove short.
        self.chunk = 1
        #: Finished attempts for the committer thread (None: stop).
        self.outbox: queue.Queue = queue.Queue()
        self.done = 0

    # ---- calls, retried while the coordinator is out of reach

    def _call(self, what: str, call: Callable[[], T], cap: float = 5.0) -> T:
        """``call``, retried while the coordinator is out of reach, waiting 0.1 s doubling
        to ``cap`` between tries."""
        backoff = 0.1
        while True:
            try:
                return call()
            except grpc.RpcError as e:
                code = e.code()
                if code == grpc.StatusCode.NOT_FOUND and "session" in (e.details() or ""):
                    raise SessionLost(e.details()) from e
                if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise
                if self.draining:
                    raise Unreachable(f"coordinator {self.coordinator}: {code.name} ({e.details()}) while draining") from e
                log.warning("coordinator %s: %s (%s); retrying %s in %.1f s", self.coordinator, code.name, e.details(), what, backoff)
                time.sleep(backoff)
                backoff = min(backoff * 2, cap)

    def register(self) -> None:
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
        # How the coordinator knows the family (an extension's metrics are its family's).
        self.described = reply.families[0].SerializeToString()
        self.family.contract(reply.families[0])  # a mismatch shows here, not in every job
        self.heartbeat_every = max(reply.heartbeat_interval_ms, 20) / 1000
        extends = f" extending {self.family.extends}" if getattr(self.family, "extends", "") else ""
        log.info("registered with %s as %s (%d slots, family %s%s, key salt %s)", self.coordinator, reply.worker_id, self.slots, self.family.name, extends, self.key_salt)

    # ---- the loop

    def run(self) -> None:
        context = multiprocessing.get_context("spawn")
        committer = threading.Thread(target=self._commits, name="committer", daemon=True)
        committer.start()
        gave_up = False
        slot = dict(initializer=_slot_init, initargs=(os.getpid(),))
        with cf.ProcessPoolExecutor(max_workers=self.slots, mp_context=context, **slot) as pool:
            next_heartbeat = 0.0
            while not (self.draining and not self.held):
                try:
                    if not self.session:
                        self.register()
                        next_heartbeat = time.monotonic() + self.heartbeat_every
                    if self.draining:
                        self._release_unstarted()
                    else:
                        self._lease(pool)
                    if time.monotonic() >= next_heartbeat:
                        self._heartbeat()
                        next_heartbeat = time.monotonic() + self.heartbeat_every
                    self._settle(timeout=0.05)
                except SessionLost as e:
                    log.warning("%s; registering again (the jobs it held are void)", e)
                    self._drop_held()
                    self.session = ""
                except Unreachable as e:
                    log.warning("%s: giving up the %d job(s) it held (queued again when their leases expire)", e, len(self.held))
                    self._drop_held()
                    gave_up = True
            self.outbox.put(None)
            committer.join()
        if gave_up:
            log.info("exiting after %d jobs, without reaching the coordinator", self.done)
        else:
            log.info("drained after %d jobs: every leased job finished and was committed; exiting", self.done)

    def _drop_held(self) -> None:
        for held in self.held.values():
            held.future.cancel()  # only what has not started
        self.held.clear()

    def _lease(self, pool: cf.ProcessPoolExecutor) -> None:
        # Up to LEASE_AHEAD jobs per slot, asked for in chunks of half that: a short job
        # then costs a share of a lease call, not one of its own.
        room = LEASE_AHEAD * self.slots - len(self.held)
        if room < LEASE_AHEAD * self.slots // 2:
            return
        request = service_pb2.LeaseRequest(session=self.session, max_jobs=room)
        reply = self._call("Lease", lambda: self.workers.Lease(request, metadata=self.metadata, timeout=30))
        valid = []
        for lease in reply.leases:
            job = job_of(lease.spec)
            key = job.key(self.key_salt)
            if key != lease.job_key:
                self._fail(lease.attempt_id, f"this worker computes key {key} for job {lease.job_key}: its family is not the one the sweep was keyed by")
                continue
            valid.append((lease, job))
        for start in range(0, len(valid), self.chunk):
            chunk = valid[start : start + self.chunk]
            future = pool.submit(run_in_slot, self.family_spec, self.described, [job for _, job in chunk])
            for index, (lease, _) in enumerate(chunk):
                self.held[lease.attempt_id] = Held(lease, future, index)

    def _heartbeat(self) -> None:
        started = [a for a, h in self.held.items() if h.future.running() or h.future.done()]
        request = service_pb2.HeartbeatRequest(session=self.session, attempt_ids=list(self.held), started_ids=started)
        reply = self._call("Heartbeat", lambda: self.workers.Heartbeat(request, metadata=self.metadata, timeout=30))
        for attempt in reply.abandon:
            held = self.held.pop(attempt, None)
            if held is not None:
                # A chunk runs on while another of its attempts is held.
                if not any(h.future is held.future for h in self.held.values()):
                    held.future.cancel()
                log.info("attempt %d abandoned (cancelled, or its job no longer held)", attempt)

    def _settle(self, timeout: float) -> None:
        running = {id(h.future): h.future for h in self.held.values()}
        if not running:
            time.sleep(timeout)
            return
        done, _ = cf.wait(list(running.values()), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        finished_ms = []
        for attempt, held in list(self.held.items()):
            if held.future in done:
                del self.held[attempt]
                if held.future.cancelled():
                    continue
                outcome = held.future.result()[held.index]
                if isinstance(outcome, str):
                    self._fail(attempt, outcome)
                else:
                    finished_ms.append(sum(r.elapsed_ms for r in outcome))
                    self.outbox.put((attempt, outcome))
        if finished_ms:
            # Short jobs go to the slots in chunks (one process hop for several); a long one
            # alone, so that no slot idles while another works through a chunk.
            short = sum(finished_ms) / len(finished_ms) < SHORT_JOB_MS
            self.chunk = CHUNK if short else 1

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
            except (grpc.RpcError, SessionLost, Unreachable) as e:
                # The jobs were cancelled or failed meanwhile, the records refused, or the
                # session is gone: the coordinator decides; this worker goes on.
                log.warning("%d attempt(s) not committed: %s", len(finished), e)
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

    def _fail(self, attempt: int, error: str) -> None:
        log.warning("attempt %d failed: %s", attempt, error.strip().splitlines()[-1] if error.strip() else error)
        request = service_pb2.FailAttemptRequest(attempt_id=attempt, error=error[-MAX_ERROR:], session=self.session)
        try:
            self._call("FailAttempt", lambda: self.workers.FailAttempt(request, metadata=self.metadata, timeout=30))
        except grpc.RpcError as e:
            log.warning("attempt %d: the failure was not recorded: %s: %s", attempt, e.code().name, e.details())

    def _release_unstarted(self) -> None:
        for held in self.held.values():
            held.future.cancel()  # only what has not started
        unstarted = [a for a, h in self.held.items() if h.future.cancelled()]
        if not unstarted:
            return
        for attempt in unstarted:
            del self.held[attempt]
        request = service_pb2.ReleaseAttemptsRequest(session=self.session, attempt_ids=unstarted)
        reply = self._call("ReleaseAttempts", lambda: self.workers.ReleaseAttempts(request, metadata=self.metadata, timeout=30))
        log.info("draining: handed back %d job(s) not started", reply.released)

    def drain(self, *_: object) -> None:
        if not self.draining:
            log.info("draining: no more leases; finishing the running jobs")
        self.draining = True


def main(argv: Optional[list[str]] = None) -> int:
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
    except grpc.RpcError as e:
        log.error("the coordinator %s refused this worker: %s: %s", args.coordinator, e.code().name, e.details())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
