"""The worker's parts around its session machine: how long it waits between tries of a
call the coordinator cannot answer yet, when it stops instead, what it tells the machine of
leases and tasks, and the cause it gives for a failed attempt."""

import collections
import concurrent.futures as cf
import queue
import threading
import time
import types
from concurrent.futures.process import BrokenProcessPool

import grpc
import pytest

from armada_sdk import WrongServer, errors, session, worker
from armada_sdk._proto import job_pb2, service_pb2
from armada_sdk.episode import Ran
from conftest import Answer


def unavailable():
    return Answer(grpc.StatusCode.UNAVAILABLE, "the coordinator cannot record the declaration of `mine` in its store")


def waits_until_answered(monkeypatch, tries: int, error=unavailable, registered=False, **cap) -> list[float]:
    """The waits of `_call` for a call that fails `tries` times, then answers."""
    waits = []
    monkeypatch.setattr(worker.time, "sleep", waits.append)
    left = [tries]

    def call():
        if left[0]:
            left[0] -= 1
            raise error()
        return "answered"

    this = types.SimpleNamespace(draining=False, coordinator="http://coordinator:7070", registered=registered)
    assert worker.Worker._call(this, "Register", call, **cap) == "answered"
    return waits


def test_a_lost_coordinator_is_tried_again_every_5_s_at_most(monkeypatch):
    waits = waits_until_answered(monkeypatch, 9)
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]


def test_a_register_answered_unavailable_backs_off_to_a_minute(monkeypatch):
    waits = waits_until_answered(monkeypatch, 12, cap=60.0)
    assert [round(w, 1) for w in waits] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 60.0, 60.0]


def test_a_refused_connection_is_retried_every_5_s_at_most_saying_why(monkeypatch, caplog):
    refused = lambda: Answer(  # noqa: E731
        grpc.StatusCode.UNAVAILABLE,
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Failed to connect to remote host: Connection refused",
    )
    # Register's waits grow to a minute only when the coordinator answered.
    assert waits_until_answered(monkeypatch, 8, refused, cap=60.0) == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert "coordinator http://coordinator:7070: UNAVAILABLE (connection refused: nothing listens at coordinator:7070" in caplog.text


DASHBOARD = lambda: Answer(grpc.StatusCode.UNIMPLEMENTED, "Received http2 header with status: 404")  # noqa: E731


def test_the_dashboards_port_stops_the_worker_before_it_registers(monkeypatch):
    with pytest.raises(WrongServer, match=r"^coordinator http://coordinator:7070: the server answered plain HTTP, not gRPC: is this the dashboard's port\?"):
        waits_until_answered(monkeypatch, 1, DASHBOARD)


def test_once_registered_an_odd_answer_is_a_connection_going_wrong_and_retried(monkeypatch):
    assert waits_until_answered(monkeypatch, 2, DASHBOARD, registered=True) == [0.1, 0.2]


def test_a_refusal_is_raised_as_its_kind(monkeypatch):
    denied = lambda: Answer(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")  # noqa: E731
    with pytest.raises(errors.PermissionDenied, match="missing or wrong token"):
        waits_until_answered(monkeypatch, 1, denied)


class Workers:
    """A Workers stub that records the failures reported to it."""

    def __init__(self):
        self.failed: list[service_pb2.FailAttemptRequest] = []

    def FailAttempt(self, request, **_):
        self.failed.append(request)
        return service_pb2.FailAttemptResponse()


def bare_worker(stub, slots: int = 1) -> worker.Worker:
    """A worker (no process, no coordinator) registered as session "s"."""
    w = worker.Worker.__new__(worker.Worker)
    w.__dict__.update(
        workers=stub, metadata=(), session="s", coordinator="http://c:1", draining=False, registered=True, key_salt="salt",
        machine=session.Session(slots), epoch=0, events=collections.deque(), held={}, tasks={}, cancelled=set(), ready={},
        slots=slots, pool=types.SimpleNamespace(shutdown=lambda **_: None),
        settled=queue.Queue(), settled_signal=cf.Future(), done=0, done_lock=threading.Lock(),
        leaser=cf.ThreadPoolExecutor(1), lease_call=None,
    )
    return w


def settled(outcome) -> tuple[worker.Worker, Workers, session.Ran]:
    """A worker after its slot answered ``outcome`` for attempt 7: a result list, or an
    exception; and what it tells its session machine of the job."""
    stub = Workers()
    w = bare_worker(stub)
    w._new_pool = lambda: "a new pool"
    future = cf.Future()
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
    lease = service_pb2.JobLease(attempt_id=7, sweep_id="sweep")
    w.held[7] = worker.Held(lease, future, 0)
    w.tasks[future] = [7]
    w._settle(timeout=0.01)
    [ended] = w.events
    [ran] = ended.ran
    assert w.held == {} and w.tasks == {}
    return w, stub, ran


def test_a_job_that_raised_fails_as_the_jobs_fault_with_its_traceback():
    traceback = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: broken on purpose'
    w, stub, ran = settled([Ran(traceback, 0.001)])
    [failed] = stub.failed
    assert (failed.attempt_id, failed.cause, failed.error) == (7, service_pb2.FAILURE_CAUSE_JOB, traceback)
    assert ran == session.Ran(7, session.Ended(), 1_000_000), "ended: no commit, no measure"


def test_a_slot_that_died_fails_as_the_workers_trouble_and_the_slots_start_again():
    w, stub, ran = settled(BrokenProcessPool("A process in the process pool was terminated abruptly"))
    [failed] = stub.failed
    assert failed.cause == service_pb2.FAILURE_CAUSE_WORKER
    assert "terminated abruptly" in failed.error
    assert ran.outcome == session.Ended()
    assert w.pool == "a new pool"


def test_a_finished_job_is_ready_with_its_records_kept_for_its_commit():
    records = [worker.Record(0, 4.0, (1.0,)), worker.Record(1, 6.0, (2.0,))]
    w, stub, ran = settled([Ran(records, 0.012)])
    assert stub.failed == []
    # A record's step and time count as two values, as the Rust worker counts them.
    assert ran == session.Ran(7, session.Ready(6), 12_000_000)
    assert w.ready == {7: records}


class Leasing(Workers):
    """A Workers stub that leases ``leases``."""

    def __init__(self, leases):
        super().__init__()
        self.leases, self.asked = leases, []

    def Lease(self, request, **_):
        self.asked.append((request.max_jobs, request.wait_ms))
        return service_pb2.LeaseResponse(leases=self.leases[: request.max_jobs], retry_after_ms=0 if self.leases else 70)


def leases(sweep: str, n: int, first: int = 1, salt: str = "salt") -> list[service_pb2.JobLease]:
    out = []
    for i in range(first, first + n):
        spec = job_pb2.JobSpec(family="echo", benchmark="constant", algorithm="echo", seed=i, horizon=2)
        out.append(service_pb2.JobLease(attempt_id=i, sweep_id=sweep, spec=spec, job_key=worker.job_of(spec).key(salt)))
    return out


def test_a_lease_is_asked_as_the_machine_says_and_its_jobs_told_to_it():
    stub = Leasing(leases("short", 3))
    w = bare_worker(stub)
    w._lease(session.Lease(2, 500))
    assert w.events == collections.deque(), "answered on the leasing thread"
    w._settle(timeout=30)
    [leased] = w.events
    assert w.lease_call is None
    assert stub.asked == [(2, 500)]
    assert [(j.attempt, j.sweep, j.job[0].attempt_id) for j in leased.jobs] == [(1, "short", 1), (2, "short", 2)]
    assert leased.jobs[0].job[1] == worker.job_of(stub.leases[0].spec), "with the job it names"


def test_a_lease_whose_key_this_worker_computes_otherwise_fails_as_its_trouble_and_is_not_held():
    stub = Leasing(leases("s", 1, salt="another family's") + leases("s", 1, first=2))
    w = bare_worker(stub)
    w._lease(session.Lease(2, 0))
    w._settle(timeout=30)
    [failed] = stub.failed
    assert (failed.attempt_id, failed.cause) == (1, service_pb2.FAILURE_CAUSE_WORKER)
    assert "its family is not the one the sweep was keyed by" in failed.error
    assert [j.attempt for j in w.events[0].jobs] == [2]


def test_a_task_goes_to_one_slot_process_whatever_its_jobs():
    w = bare_worker(Leasing([]), slots=2)
    w.family_spec, w.described = "armada_sdk.examples.echo:FAMILY", b""
    sent = []
    w.pool = types.SimpleNamespace(submit=lambda fn, spec, described, jobs: sent.append([j.seed for j in jobs]) or cf.Future())
    jobs = [session.LeasedJob(lease.attempt_id, "short", (lease, worker.job_of(lease.spec))) for lease in leases("short", 3)]
    w._start(session.Start(jobs, True))
    assert sent == [[1, 2, 3]] and sorted(w.held) == [1, 2, 3] and list(w.tasks.values()) == [[1, 2, 3]]


def test_a_batch_is_cancelled_before_it_starts_only_when_all_its_attempts_are():
    w = bare_worker(Leasing([]))
    future = cf.Future()
    w.tasks[future] = [1, 2]
    w._stop([session.Cancel([1])])
    assert not future.cancelled(), "attempt 2 of the batch still runs"
    w._stop([session.Cancel([2])])
    assert future.cancelled()


class Committing(Workers):
    """A Workers stub whose CompleteAttempts answers only once `together` calls are in
    flight at once (as a coordinator answers each after its commit linger)."""

    def __init__(self, together: int):
        super().__init__()
        self.barrier = threading.Barrier(together, timeout=20)

    def CompleteAttempts(self, request, **_):
        self.barrier.wait()
        outcomes = [service_pb2.AttemptOutcome(attempt_id=a.attempt_id, committed=True) for a in request.attempts]
        return service_pb2.CompleteAttemptsResponse(outcomes=outcomes)


def test_commit_batches_are_in_flight_together_and_each_answer_wakes_the_loop():
    """Each CompleteAttempts waits for the coordinator's commit linger: the batches go
    side by side (one at a time, the stub's barrier would break), and an answered batch
    ends the loop's wait for its slots at once, not at its next turn."""
    batches = 4
    stub = Committing(together=batches)
    w = bare_worker(stub)
    committer = cf.ThreadPoolExecutor(worker.COMMITS_IN_FLIGHT)
    running: cf.Future[list[Ran]] = cf.Future()  # a slot's task that does not end
    w.tasks[running] = [99]
    futures = [committer.submit(w._commit_and_settle, [(attempt, [])]) for attempt in range(batches)]
    started = time.monotonic()
    w._settle(timeout=60)
    assert time.monotonic() - started < 30, "woken by the first answer, not the timeout"
    for f in futures:
        f.result(timeout=30)
    committer.shutdown()
    assert not stub.barrier.broken
    assert sorted(w.settled.get_nowait()[0] for _ in range(batches)) == list(range(batches))
    assert w.done == batches and w.events == collections.deque() and running in w.tasks


def test_a_new_pool_starts_every_slot_before_any_job():
    """The slots' processes start (and import the family) as the pool is made, not when
    the first job comes."""
    w = bare_worker(Workers(), slots=2)
    w.family_spec = "armada_sdk.examples.echo:FAMILY"
    pool = worker.Worker._new_pool(w)
    try:
        assert len(pool._processes) == 2
    finally:
        pool.shutdown()


class Holding(Leasing):
    """A Leasing stub whose Lease answers only once ``release`` is set."""

    def __init__(self, leases):
        super().__init__(leases)
        self.release = threading.Event()

    def Lease(self, request, **kwargs):
        assert self.release.wait(20)
        return super().Lease(request, **kwargs)


def test_a_task_that_ends_while_a_lease_travels_is_seen_before_its_answer():
    """The loop does not wait for a Lease's answer: a slot's task that ends meanwhile is
    told to the machine at once, and the lease's jobs when it is answered."""
    stub = Holding(leases("short", 2))
    w = bare_worker(stub)
    running: cf.Future[list[Ran]] = cf.Future()
    lease = service_pb2.JobLease(attempt_id=7, sweep_id="sweep")
    w.held[7] = worker.Held(lease, running, 0)
    w.tasks[running] = [7]
    w._lease(session.Lease(2, 0))
    running.set_result([Ran([], 0.001)])
    w._settle(timeout=30)
    [ended] = w.events
    assert [r.attempt for r in ended.ran] == [7] and w.lease_call is not None
    w.events.clear()
    stub.release.set()
    w._settle(timeout=30)
    [leased] = w.events
    assert [j.attempt for j in leased.jobs] == [1, 2] and w.lease_call is None
