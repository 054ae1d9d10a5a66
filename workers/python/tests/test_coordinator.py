"""The client and the worker against a real coordinator (``armada serve`` of ARMADA_BIN):
typed errors naming what is wrong, Python values for answers, and a worker that stops at
once, saying why, when its URL reaches something other than the coordinator's gRPC port."""

import socket
import sys
import time

import pytest

from armada_sdk import (
    Client,
    DeleteResult,
    InvalidSweep,
    NotFound,
    PermissionDenied,
    ServerInfo,
    SweepState,
    SweepStatus,
    Unavailable,
    WrongServer,
)
from conftest import TLS_FIXTURES, run_worker, serve, worker

ECHO = {"family": "testkit", "seeds": 3, "horizon": 2, "benchmarks": [{"name": "constant"}], "algorithms": [{"name": "echo"}]}


def test_a_bad_sweep_is_refused_naming_the_field(coordinator):
    bad = dict(ECHO, name="bad", algorithms=[{"name": "no-such-algorithm"}])
    with pytest.raises(InvalidSweep) as refused:
        Client(coordinator.url).submit(bad)
    [(field, message)] = refused.value.errors
    assert field == "algorithms[0].name" and "no-such-algorithm" in message, refused.value.errors
    assert str(refused.value).startswith("algorithms[0].name: ")
    assert refused.value.__cause__ is not None, "the gRPC error is chained"


def test_an_algorithm_paired_with_a_benchmark_it_does_not_support_is_refused(coordinator):
    from armada_sdk import Algorithm, Extension

    mine = Extension(
        name="my-lse",
        version=1,
        extends="lse",
        algorithms=[Algorithm("py-ucb", "runs on the 2-D cases only", benchmarks=["sinusoidal", "himmelblau"])],
        start=lambda job, streams: None,
    )
    client = Client(coordinator.url)
    client.declare_family(mine)
    described = client.server_info().family("my-lse")
    assert list(described.algorithms[0].benchmarks) == ["sinusoidal", "himmelblau"]
    sweep = {
        "name": "paired",
        "family": "lse",
        "seeds": 2,
        "horizon": 3,
        "benchmarks": [{"name": "sinusoidal"}, {"name": "sphere-5d"}],
        "algorithms": [{"name": "straddle"}, {"name": "py-ucb"}],
    }
    with pytest.raises(InvalidSweep) as refused:
        client.submit(sweep)
    fields = [field for field, _ in refused.value.errors]
    assert fields == ["algorithms[1]"], refused.value.errors
    assert "with benchmark `sphere-5d` (benchmarks[1])" in refused.value.errors[0][1], refused.value.errors
    assert "paired" not in [s.sweep_id for s in client.list_sweeps()], "nothing was written"
    ok = dict(sweep, benchmarks=[{"name": "sinusoidal"}, {"name": "himmelblau"}])
    assert client.submit(ok) == "paired"
    client.cancel("paired")
    client.delete("paired")  # the coordinator is the module's: leave it as found


def test_an_unknown_sweep_is_not_found(coordinator):
    with pytest.raises(NotFound, match="no-such-sweep"):
        Client(coordinator.url).status("no-such-sweep")


def test_answers_are_python_values(coordinator):
    client = Client(coordinator.url)
    info = client.server_info()
    assert isinstance(info, ServerInfo) and info.family("testkit").metrics
    sweep = client.submit(dict(ECHO, name="values"))
    status = client.status(sweep)
    assert isinstance(status, SweepStatus)
    # No worker runs: every job waits.
    assert (status.sweep_id, status.n_jobs, status.n_done, status.state) == ("values", 3, 0, SweepState.RUNNING)
    assert [s.sweep_id for s in client.list_sweeps() if isinstance(s, SweepStatus)] == ["values"]
    cancelled = client.cancel(sweep)
    assert isinstance(cancelled, SweepStatus) and cancelled.state == SweepState.CANCELLED
    deleted = client.delete(sweep)
    assert isinstance(deleted, DeleteResult) and deleted.n_jobs == 3
    assert client.list_sweeps() == []


def test_a_wrong_token_is_permission_denied(tmp_path):
    with serve(tmp_path / "data", "--token", "the-right-token-0123") as served:
        assert Client(served.url, token="the-right-token-0123").list_sweeps() == []
        for token in (None, "a-wrong-token"):
            with pytest.raises(PermissionDenied, match="token"):
                Client(served.url, token=token).list_sweeps()


def test_a_worker_session_works_only_with_the_token_that_registered_it(tmp_path):
    import grpc

    from armada_sdk import connection
    from armada_sdk._proto import job_pb2, service_pb2 as pb
    from armada_sdk.examples.echo import FAMILY

    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        '[[tokens]]\nname = "group-a"\nsecret = "worker-token-a-0123456789"\nrole = "worker"\n'
        '[[tokens]]\nname = "group-b"\nsecret = "worker-token-b-0123456789"\nrole = "worker"\n'
    )
    with serve(tmp_path / "data", "--tokens", str(tokens)) as served:
        _, workers = connection.stubs(connection.channel(served.url))
        as_a, as_b = connection.metadata("worker-token-a-0123456789"), connection.metadata("worker-token-b-0123456789")
        register = pb.RegisterRequest(name="a", slots=1, families=[FAMILY.name], declarations=[FAMILY.to_proto()])
        session = workers.Register(register, metadata=as_a, timeout=10).session
        record = job_pb2.StepRecord(step=0, elapsed_ms=0.0, metrics=[1.0])
        calls = {
            "Lease": lambda m: workers.Lease(pb.LeaseRequest(session=session, max_jobs=1), metadata=m, timeout=10),
            "Heartbeat": lambda m: workers.Heartbeat(pb.HeartbeatRequest(session=session, attempt_ids=[]), metadata=m, timeout=10),
            "ReleaseAttempts": lambda m: workers.ReleaseAttempts(pb.ReleaseAttemptsRequest(session=session), metadata=m, timeout=10),
            "FailAttempt": lambda m: workers.FailAttempt(pb.FailAttemptRequest(attempt_id=1, session=session), metadata=m, timeout=10),
            "CompleteAttempt": lambda m: workers.CompleteAttempt(
                pb.CompleteAttemptRequest(attempt_id=1, n_records=1, records=[record], session=session), metadata=m, timeout=10
            ),
            "UploadRecords": lambda m: workers.UploadRecords(
                iter([pb.RecordBatch(attempt_id=1, records=[record], session=session)]), metadata=m, timeout=10
            ),
        }
        for name, call in calls.items():
            with pytest.raises(grpc.RpcError) as stolen:
                call(as_b)
            assert stolen.value.code() == grpc.StatusCode.PERMISSION_DENIED, (name, stolen.value.details())
            assert "registered with another token" in stolen.value.details(), (name, stolen.value.details())
        commits = workers.CompleteAttempts(
            pb.CompleteAttemptsRequest(session=session, attempts=[pb.CompleteAttemptRequest(attempt_id=1)]), metadata=as_b, timeout=10
        )
        assert [o.code for o in commits.outcomes] == [grpc.StatusCode.PERMISSION_DENIED.value[0]], commits
        # With its own token the session works (no job to lease; attempt 1 is nobody's).
        assert list(calls["Lease"](as_a).leases) == []
        assert list(calls["Heartbeat"](as_a).abandon) == []
        with pytest.raises(grpc.RpcError) as unknown:
            calls["FailAttempt"](as_a)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND, unknown.value.details()


def test_the_dashboards_port_is_a_wrong_server(coordinator):
    with pytest.raises(WrongServer, match=r"is this the dashboard's port\? The coordinator's is the one `armada serve` printed"):
        Client(f"http://{coordinator.dashboard}").list_sweeps()


def test_https_of_a_plain_port_is_a_wrong_server(coordinator):
    with pytest.raises(WrongServer, match=r"TLS handshake failed \(.*\); the server did not answer TLS: does it serve plain http://\?"):
        Client(coordinator.url.replace("http://", "https://")).list_sweeps()


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens at."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_unavailable():
    port = free_port()
    with pytest.raises(Unavailable, match=rf"connection refused: nothing listens at 127.0.0.1:{port} "):
        Client(f"http://127.0.0.1:{port}").list_sweeps()


def test_a_worker_at_the_dashboards_port_exits_at_once_saying_so(coordinator):
    exited = run_worker(f"http://{coordinator.dashboard}")
    assert (exited.code, exited.stopped) == (1, False), exited.log
    assert "the server answered plain HTTP, not gRPC: is this the dashboard's port?" in exited.log


def test_a_worker_at_https_of_a_plain_port_exits_at_once_saying_so(coordinator):
    exited = run_worker(coordinator.url.replace("http://", "https://"))
    assert (exited.code, exited.stopped) == (1, False), exited.log
    assert "the server did not answer TLS: does it serve plain http://?" in exited.log


def test_a_worker_at_http_of_a_tls_port_exits_at_once_saying_so(tmp_path):
    cert, key = TLS_FIXTURES / "cert.pem", TLS_FIXTURES / "key.pem"
    with serve(tmp_path / "data", "--tls-cert", str(cert), "--tls-key", str(key)) as served:
        assert served.url.startswith("https://")
        exited = run_worker(served.url.replace("https://", "http://"))
    assert (exited.code, exited.stopped) == (1, False), exited.log
    assert "use https:// with --tls-ca" in exited.log


def test_a_worker_retries_while_nothing_listens():
    # A coordinator may be starting: the worker waits for it (stopped here after 5 s).
    port = free_port()
    exited = run_worker(f"http://127.0.0.1:{port}", seconds=5)
    assert exited.stopped and exited.code == 0, exited.log  # SIGTERM: drained, nothing held
    assert f"connection refused: nothing listens at 127.0.0.1:{port}" in exited.log


BROKEN_FAMILY = '''
from armada_sdk import Algorithm, Benchmark, Family, Metric


class Episode:
    def __init__(self, job, streams):
        self.job = job

    def initial(self):
        return {"value": 0.0}

    def step(self, t):
        if self.job.algorithm == "breaks" and t == 2:
            raise ValueError(f"broken on purpose at step {t}")
        return {"value": float(t)}


FAMILY = Family(
    name="broken",
    version=1,
    benchmarks=[Benchmark("b")],
    algorithms=[Algorithm("works"), Algorithm("breaks")],
    metrics=[Metric("value")],
    start=Episode,
)
'''


def test_a_job_that_raises_fails_at_once_as_its_own_fault(tmp_path, monkeypatch):
    (tmp_path / "broken_family.py").write_text(BROKEN_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    from armada_sdk.family import load_family

    sweep = {"name": "broken", "family": "broken", "seeds": 2, "horizon": 3, "benchmarks": [{"name": "b"}],
             "algorithms": [{"name": "works"}, {"name": "breaks"}]}
    # Three attempts by default: a job's own exception takes one (it would raise again).
    with serve(tmp_path / "data") as served, worker(served.url, "broken_family:FAMILY", tmp_path / "worker.log", tmp_path):
        client = Client(served.url)
        client.declare_family(load_family("broken_family:FAMILY"))
        status = client.watch(client.submit(sweep), progress=False, timeout=120)
    assert (status.n_done, status.n_failed, status.state) == (2, 2, SweepState.FINISHED), (tmp_path / "worker.log").read_text()
    assert [(f.attempt, f.final) for f in status.failures] == [(1, True), (1, True)]
    assert all("ValueError: broken on purpose at step 2" in f.error for f in status.failures)


EDITED_FAMILY = '''
"""A method under edit ({note})."""
from armada_sdk import Algorithm, Benchmark, Family, Float, Metric


class Episode:
    """{note}"""

    def __init__(self, job, streams):
        self.k = job.algorithm_params["k"]

    def initial(self):
        return {{"value": 0.0}}

    def step(self, t):
        # {note}
        return {{"value": {step}}}


FAMILY = Family(
    name="edited",
    version=1,
    doc="{note}",
    benchmarks=[Benchmark("b")],
    algorithms=[Algorithm("a", params=[Float("k", 0.0, 1.0, 0.5, doc="{note}")])],
    metrics=[Metric("value", doc="{note}")],
    start=Episode,
)
'''


def test_an_edited_method_runs_again_and_a_doc_edit_needs_no_new_version(tmp_path, monkeypatch):
    """The code is part of the family's identity: after an edit of the episode (the
    declaration untouched) a resubmission runs every job again under new keys and says
    which family changed; editing comments, doc strings and docs changes nothing."""
    import importlib
    import json

    import polars as pl

    from armada_sdk import RevisedFamily
    from armada_sdk.family import load_family

    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "edited_family.py"
    sweep = {"name": "edited", "family": "edited", "seeds": 3, "horizon": 2, "benchmarks": [{"name": "b"}], "algorithms": [{"name": "a"}]}

    def declared(note: str, step: str):
        """The module as written now, its declaration's code digest."""
        module.write_text(EDITED_FAMILY.format(note=note, step=step))
        importlib.invalidate_caches()
        sys.modules.pop("edited_family", None)
        family = load_family("edited_family:FAMILY")
        return family, family.to_proto().code

    def run(served, client, code):
        """Submit with a worker of the module as it is now, once it declared its code;
        what the submission did, and each committed job's last value."""
        log = tmp_path / "worker.log"
        with worker(served.url, "edited_family:FAMILY", log, tmp_path):
            deadline = time.monotonic() + 60
            while client.server_info().family("edited").code != code:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            submitted = client.submit_sweep(sweep)
            status = client.watch(submitted.sweep_id, progress=False, timeout=120)
        assert (status.n_done, status.n_failed) == (3, 0), log.read_text()
        rows = client.trajectories("edited").filter(pl.col("step") == 2)
        return submitted, dict(zip(rows["job_key"], rows["value"]))

    with serve(tmp_path / "data") as served:
        client = Client(served.url)
        first, code = declared("first", "self.k * t")
        client.declare_family(first)
        submitted, values = run(served, client, code)
        assert (submitted.n_added, submitted.n_already_done, submitted.revised) == (3, 0, [])
        assert sorted(values.values()) == [1.0, 1.0, 1.0]
        digest = client.server_info().family("edited").digest

        # Comments, doc strings and the declaration's docs: the same code, the same keys.
        restyled, same_code = declared("second, reworded", "self.k  *  t")
        assert same_code == code
        client.declare_family(restyled)
        described = client.server_info().family("edited")
        assert (described.digest, described.doc, described.code) == (digest, "second, reworded", code)
        submitted, again = run(served, client, code)
        assert (submitted.n_added, submitted.n_already_done, submitted.revised) == (0, 3, [])
        assert again == values

        # The step's code: a new revision of version 1, whose jobs run again.
        _, edited_code = declared("second, reworded", "2.0 * self.k * t")
        assert edited_code != code
        submitted, edited = run(served, client, edited_code)
        new_digest = client.server_info().family("edited").digest
        assert new_digest != digest
        assert (submitted.n_jobs, submitted.n_added, submitted.n_already_done) == (3, 3, 0)
        assert submitted.revised == [RevisedFamily("edited", digest, new_digest, 1, 1)]
        assert sorted(edited.values()) == [2.0, 2.0, 2.0] and not set(edited) & set(values)
        final = client.summary("edited")
        assert final.filter(pl.col("metric") == "value").select("n", "mean").row(0) == (3, 2.0)

        # Each part's provenance names the code that computed its jobs.
        codes = {}
        for part in (tmp_path / "data" / "edited" / "trajectories").glob("*.parquet"):
            provenance = json.loads(pl.read_parquet_metadata(part)["armada.provenance"])
            workers = provenance["workers"]
            codes.update({key: workers[w]["code"] for key, (w, _attempt) in provenance["jobs"].items()})
        assert {codes[k] for k in values} == {code} and {codes[k] for k in edited} == {edited_code}


def test_a_damaged_part_is_named_and_the_rest_fetched(tmp_path, monkeypatch):
    """The SDK's fetch returns the readable jobs and names the damaged part and the jobs only
    it held; ``trajectories`` warns of them."""
    import polars as pl

    from armada_sdk import DamagedPartsWarning

    (tmp_path / "broken_family.py").write_text(BROKEN_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "data"
    with serve(data) as served, worker(served.url, "broken_family:FAMILY", tmp_path / "worker.log", tmp_path):
        client = Client(served.url)
        for seeds in (2, 4):  # two submissions, two parts at least
            sweep = {"name": "damaged", "family": "broken", "seeds": seeds, "horizon": 3, "benchmarks": [{"name": "b"}],
                     "algorithms": [{"name": "works"}]}
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.submit(sweep)
                    break
                except InvalidSweep:  # the worker has not declared its family yet
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            assert client.watch("damaged", progress=False, timeout=120).n_done == seeds
        every = client.fetch_trajectories("damaged")
        assert every.damaged == [] and every.rows["job_key"].n_unique() == 4
        parts = sorted((data / "damaged" / "trajectories").glob("*.parquet"))
        assert len(parts) >= 2
        lost = sorted(pl.read_parquet(parts[0])["job_key"].unique())
        parts[0].write_bytes(parts[0].read_bytes()[:100])
        fetched = client.fetch_trajectories("damaged")
        assert [d.part for d in fetched.damaged] == [parts[0].name] and "PAR1" in fetched.damaged[0].error
        assert sorted(fetched.unreadable_jobs) == lost
        assert set(fetched.rows["job_key"]) == set(every.rows["job_key"]) - set(lost)
        with pytest.warns(DamagedPartsWarning, match=parts[0].name):
            rows = client.trajectories("damaged")
        assert rows.equals(fetched.rows)


def test_a_fetch_into_memory_stops_at_its_bound_and_one_to_disk_streams_whole(tmp_path):
    """Fetched into memory, trajectories and summaries stop with TooLarge past ``max_bytes``;
    fetched ``to`` a directory, they are written there whole whatever the bound, and scanned
    lazily to the same rows."""
    import subprocess

    import polars as pl

    from armada_sdk import TooLarge
    from conftest import armada_bin

    sweep = tmp_path / "big.toml"
    sweep.write_text('name = "big"\nfamily = "testkit"\nseeds = 4\nhorizon = 2000\n'
                     '[[benchmarks]]\nname = "constant"\n[[algorithms]]\nname = "echo"\n')
    data = tmp_path / "data"
    subprocess.run([armada_bin(), "run", str(sweep), "--out", str(data), "--quiet"], check=True, capture_output=True)
    parts = list((data / "big" / "trajectories").glob("*.parquet"))
    part_bytes = sum(p.stat().st_size for p in parts)
    with serve(data) as served:
        client = Client(served.url)
        whole = client.fetch_trajectories("big")
        assert whole.rows.height == 4 * 2001 and whole.damaged == []
        with pytest.raises(TooLarge, match=f"sweep big: its trajectories passed max_bytes={part_bytes - 1} bytes"):
            client.fetch_trajectories("big", max_bytes=part_bytes - 1)
        assert client.fetch_trajectories("big", max_bytes=part_bytes).rows.equals(whole.rows), "the bound is inclusive"

        out = tmp_path / "out"
        lazy = client.fetch_trajectories("big", to=out, max_bytes=1)
        assert isinstance(lazy.rows, pl.LazyFrame)
        assert lazy.rows.collect().equals(whole.rows)
        written = sorted(out.iterdir())
        assert [p.name for p in written] == [f"fetched-{i:06}.parquet" for i in range(1, len(parts) + 1)], "no temporary file is left"
        assert sum(p.stat().st_size for p in written) == part_bytes

        summary = client.summary("big", "summary")
        assert summary.height > 2000
        with pytest.raises(TooLarge, match="sweep big: its summary table passed max_bytes=100 bytes"):
            client.summary("big", "summary", max_bytes=100)
        on_disk = client.summary("big", "summary", to=tmp_path / "tables", max_bytes=1)
        assert on_disk.collect().equals(summary)
        assert (tmp_path / "tables" / "summary.parquet").read_bytes() == (data / "big" / "summary.parquet").read_bytes()


def test_a_family_is_described_whole_and_removed_once_no_sweep_uses_it(tmp_path):
    """DescribeFamily gives a declared family whole; RemoveFamily forgets it once no stored
    sweep uses it (on a coordinator without tokens anyone is its admin)."""
    from armada_sdk import FailedPrecondition, NotFound
    from armada_sdk.family import Algorithm, Benchmark, Family, Float, Metric

    mine = Family(
        name="removable",
        version=1,
        benchmarks=[Benchmark("b")],
        algorithms=[Algorithm("a", params=[Float("k", 0.0, 1.0, 0.5)])],
        metrics=[Metric("value")],
        start=lambda job, streams: None,
    )
    sweep = {"name": "keeps-it", "family": "removable", "seeds": 1, "horizon": 1, "benchmarks": [{"name": "b"}], "algorithms": [{"name": "a"}]}
    with serve(tmp_path / "data") as served:
        client = Client(served.url)
        digest = client.declare_family(mine)
        described = client.describe_family("removable")
        assert (described.digest, described.abridged, [p.name for p in described.algorithms[0].params]) == (digest, False, ["k"])
        assert client.describe_family("removable", 1, digest) == described
        with pytest.raises(NotFound, match="no such declaration of family `removable`"):
            client.describe_family("removable", 2)
        client.submit(sweep)
        with pytest.raises(FailedPrecondition, match="is used by sweeps keeps-it"):
            client.remove_family("removable", 1)
        client.cancel("keeps-it")
        client.delete("keeps-it")
        assert client.remove_family("removable", 1) == [digest]
        with pytest.raises(KeyError):
            client.server_info().family("removable")
