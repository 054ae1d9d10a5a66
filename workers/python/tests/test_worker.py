"""The worker's pure parts: how long it waits between tries of a call the coordinator
cannot answer yet, when it stops instead, how many jobs it leases ahead, and the cause it
gives for a failed attempt."""

import collections
import concurrent.futures as cf
import queue
import threading
import types
from concurrent.futures.process import BrokenProcessPool

import grpc
import pytest

from armada_sdk import WrongServer, errors, worker
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


def test_a_slot_holds_about_100_ms_of_short_jobs_ahead_and_runs_them_as_a_batch():
    # The numbers of the Rust worker's test of the same name (workers/runtime/src/worker.rs);
    # this worker has no streamed records, hence no `record_streaming`.
    lengths = worker.JobLengths()
    assert (lengths.batch("s"), lengths.depth("s", 2)) == (None, 2), "not measured: one a slot"
    lengths.record("s", 0.010)
    assert (lengths.batch("s"), lengths.depth("s", 2)) == (10, 22)
    lengths.record("t", 10e-6)
    assert lengths.batch("t") == worker.PREFETCH_PER_SLOT, "at most the prefetch depth"
    assert lengths.depth("t", 3) == 3 * (1 + worker.PREFETCH_PER_SLOT)
    lengths.record("v", 0.040)
    assert (lengths.batch("v"), lengths.depth("v", 1)) == (2, 3), "100 ms is two 40 ms jobs"
    lengths.record("w", 0.200)
    assert (lengths.batch("w"), lengths.depth("w", 1)) == (1, 2), "short: one ahead"
    lengths.record("u", 0.300)
    assert (lengths.batch("u"), lengths.depth("u", 2)) == (None, 2), "long: one a slot"


def test_the_mean_follows_the_last_eight_jobs_or_so():
    lengths = worker.JobLengths()
    lengths.record("s", 0.400)
    assert lengths.depth("s", 1) == 1
    for _ in range(8):
        lengths.record("s", 0.010)
    # 400 ms weighs (7/8)^8 = 34% after eight jobs of 10 ms: 143 ms, short.
    assert lengths.mean["s"] == pytest.approx(143e6, rel=0.01)
    assert lengths.depth("s", 1) == 2, "short: one ahead"


class Workers:
    """A Workers stub that records the failures reported to it."""

    def __init__(self):
        self.failed: list[service_pb2.FailAttemptRequest] = []

    def FailAttempt(self, request, **_):
        self.failed.append(request)
        return service_pb2.FailAttemptResponse()


def settled(outcome) -> tuple[worker.Worker, Workers]:
    """A worker (no process, no coordinator) after its slot answered ``outcome`` for one
    attempt: a result list, or an exception."""
    w = worker.Worker.__new__(worker.Worker)
    stub = Workers()
    w.__dict__.update(
        workers=stub, metadata=(), session="s", coordinator="http://c:1", draining=False, registered=True,
        held={}, backlog=collections.deque(), lengths=worker.JobLengths(), next_lease=0.0, outbox=queue.Queue(),
        committing=set(), lock=threading.Lock(),
        slots=1, pool=types.SimpleNamespace(shutdown=lambda **_: None),
    )
    w._new_pool = lambda: "a new pool"
    future = cf.Future()
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
    lease = service_pb2.JobLease(attempt_id=7, sweep_id="sweep")
    w.held[7] = worker.Held(lease, future, 0)
    w._settle(timeout=0.01)
    return w, stub


def test_a_job_that_raised_fails_as_the_jobs_fault_with_its_traceback():
    traceback = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: broken on purpose'
    w, stub = settled([Ran(traceback, 0.001)])
    [failed] = stub.failed
    assert (failed.attempt_id, failed.cause, failed.error) == (7, service_pb2.FAILURE_CAUSE_JOB, traceback)
    assert w.held == {} and w.lengths.mean == {}, "a failed job does not measure its sweep"


def test_a_slot_that_died_fails_as_the_workers_trouble_and_the_slots_start_again():
    w, stub = settled(BrokenProcessPool("A process in the process pool was terminated abruptly"))
    [failed] = stub.failed
    assert failed.cause == service_pb2.FAILURE_CAUSE_WORKER
    assert "terminated abruptly" in failed.error
    assert w.pool == "a new pool"


def test_a_finished_job_measures_its_sweep_and_goes_to_the_committer():
    records = [worker.Record(0, 4.0, (1.0,)), worker.Record(1, 6.0, (2.0,))]
    w, stub = settled([Ran(records, 0.012)])
    assert stub.failed == []
    assert w.lengths.mean == {"sweep": 12_000_000}
    assert w.outbox.get_nowait() == (7, records)
    assert w.committing == {7}, "heartbeated until its commit is answered"


class Leasing(Workers):
    """A Workers stub that leases ``leases`` and records what is handed back."""

    def __init__(self, leases):
        super().__init__()
        self.leases, self.asked, self.released = leases, [], []

    def Lease(self, request, **_):
        self.asked.append(request.max_jobs)
        return service_pb2.LeaseResponse(leases=self.leases[: request.max_jobs])

    def ReleaseAttempts(self, request, **_):
        self.released.extend(request.attempt_ids)
        return service_pb2.ReleaseAttemptsResponse(released=len(request.attempt_ids))


def leases(sweep: str, n: int, first: int = 1) -> list[service_pb2.JobLease]:
    out = []
    for i in range(first, first + n):
        spec = job_pb2.JobSpec(family="echo", benchmark="constant", algorithm="echo", seed=i, horizon=2)
        out.append(service_pb2.JobLease(attempt_id=i, sweep_id=sweep, spec=spec, job_key=worker.job_of(spec).key("salt")))
    return out


def leasing_worker(stub, slots: int) -> worker.Worker:
    w = worker.Worker.__new__(worker.Worker)
    w.__dict__.update(
        workers=stub, metadata=(), session="s", coordinator="http://c:1", draining=False, registered=True, key_salt="salt",
        held={}, backlog=collections.deque(), lengths=worker.JobLengths(), next_lease=0.0, leasing="", committing=set(),
        slots=slots,
    )
    return w


def test_a_sweep_of_short_jobs_is_leased_about_100_ms_ahead_a_slot():
    stub = Leasing(leases("short", 100))
    w = leasing_worker(stub, slots=2)
    w.lengths.record("short", 0.010)
    w.leasing = "short"
    w._lease()
    assert stub.asked == [22] and len(w.backlog) == 22 and stub.released == []


def test_after_short_jobs_the_jobs_of_a_sweep_not_measured_yet_beyond_one_a_slot_go_back():
    # Sized for the short sweep leased before; the next sweep's jobs count as long.
    stub = Leasing(leases("long", 22))
    w = leasing_worker(stub, slots=2)
    w.lengths.record("short", 0.010)
    w.leasing = "short"
    w._lease()
    assert [lease.sweep_id for lease, _ in w.backlog] == ["long", "long"]
    assert stub.released == list(range(3, 23))
    # The next lease is sized for the long sweep: one a slot, and the slots are full.
    assert w.lengths.depth(w.leasing, 2) == 2


def test_short_jobs_go_to_a_slot_as_a_batch_of_what_it_holds_ahead():
    w = leasing_worker(Leasing([]), slots=2)
    w.lengths.record("short", 0.010)
    w.family_spec, w.described = "armada_sdk.examples.echo:FAMILY", b""
    sent = []
    w.pool = types.SimpleNamespace(submit=lambda fn, spec, described, jobs: sent.append(len(jobs)) or cf.Future())
    w.backlog.extend((lease, worker.job_of(lease.spec)) for lease in leases("short", 22) + leases("long", 1, first=23))
    w._start()
    assert sent == [10, 10] and len(w.held) == 20 and len(w.backlog) == 3, "a batch a slot"
    w.held.clear()
    w._start()
    assert sent[2:] == [2, 1], "a batch holds one sweep's jobs; an unmeasured sweep's go one at a time"
