"""A rogue worker, for tests/integration/distributed/clients.rs: it registers a session of its own, then
tries to act on an attempt another worker holds, registers with a wrong build, leases a
job itself and uploads records that skip step 0. Prints one JSON object: for each try,
the gRPC status it got ("OK" or "CODE: message").

    python tests/support/rogue_worker.py HOST:PORT VICTIM_ATTEMPT_ID
"""

import json
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "analysis"))

import grpc  # noqa: E402
import grpc_client  # noqa: E402 (generates the stubs from proto/)


def outcome(call) -> str:
    try:
        call()
        return "OK"
    except grpc.RpcError as e:
        return f"{e.code().name}: {e.details()}"


def main() -> None:
    target, victim = sys.argv[1].removeprefix("http://"), int(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        grpc_client.generate_stubs(pathlib.Path(tmp))
        from armada.v1 import job_pb2, service_pb2 as pb, service_pb2_grpc as rpc  # noqa: E402

        with grpc.insecure_channel(target) as channel:
            sweeps, workers = rpc.SweepsStub(channel), rpc.WorkersStub(channel)
            info = sweeps.ServerInfo(pb.ServerInfoRequest(), timeout=10)
            register = lambda build: pb.RegisterRequest(  # noqa: E731
                name="rogue", slots=1, version=info.version, families=["testkit"], build=build
            )
            session = workers.Register(register(info.build), timeout=10).session
            record = lambda step: job_pb2.StepRecord(step=step, elapsed_ms=0.0, metrics=[1.0])  # noqa: E731
            report = {
                "complete": outcome(
                    lambda: workers.CompleteAttempt(
                        pb.CompleteAttemptRequest(attempt_id=victim, n_records=1, records=[record(0)], session=session)
                    )
                ),
                "fail": outcome(
                    lambda: workers.FailAttempt(pb.FailAttemptRequest(attempt_id=victim, error="forged", session=session))
                ),
                "heartbeat": outcome(lambda: workers.Heartbeat(pb.HeartbeatRequest(session=session, attempt_ids=[victim]))),
                "upload": outcome(
                    lambda: workers.UploadRecords(
                        iter([pb.RecordBatch(attempt_id=victim, records=[record(0)], session=session)])
                    )
                ),
                "wrong_build": outcome(lambda: workers.Register(register("0123"))),
            }
            leases = workers.Lease(pb.LeaseRequest(session=session, max_jobs=1), timeout=10).leases
            report["leased"] = len(leases)
            if leases:
                own = leases[0].attempt_id
                report["own_upload"] = outcome(
                    lambda: workers.UploadRecords(iter([pb.RecordBatch(attempt_id=own, records=[record(5)], session=session)]))
                )
            print(json.dumps(report))


if __name__ == "__main__":
    main()
