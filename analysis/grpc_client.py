"""A client of armada's coordinator in Python, generated from proto/armada/v1 at run time.

It shows that any gRPC language can drive armada: it checks the coordinator's health,
lists its services by reflection, submits a sweep file, watches it to the end, fetches the
summary, reads the sweep's trajectories and final table over the wire into polars (no
access to the coordinator's disk), and prints one JSON object describing what it saw.

    pip install -r analysis/requirements-grpc.txt   (`cargo test` makes its own venv)
    python analysis/grpc_client.py --coordinator 127.0.0.1:7070 [--token T] sweeps/lse-finite-quick.toml
"""

import argparse
import hashlib
import io
import json
import pathlib
import sys
import tempfile

import grpc
import polars as pl
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
from grpc_tools import protoc

PROTO_ROOT = pathlib.Path(__file__).resolve().parent.parent / "proto"


def generate_stubs(out_dir: pathlib.Path) -> None:
    """Compile armada/v1/*.proto to Python modules in out_dir."""
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    files = [str(p.relative_to(PROTO_ROOT)) for p in sorted((PROTO_ROOT / "armada" / "v1").glob("*.proto"))]
    args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"]
    if protoc.main(args + files) != 0:
        sys.exit("generating the Python stubs failed")
    sys.path.insert(0, str(out_dir))


def fetch(sweeps, service_pb2, metadata, **request) -> list[bytes]:
    """The Parquet files of one FetchResults call: chunks concatenated up to end_of_file."""
    files, current = [], bytearray()
    for chunk in sweeps.FetchResults(service_pb2.FetchResultsRequest(**request), metadata=metadata, timeout=600):
        current += chunk.data
        if chunk.end_of_file:
            files.append(bytes(current))
            current = bytearray()
    return files


def fetch_frame(sweeps, service_pb2, metadata, **request) -> pl.DataFrame:
    """FetchResults read into one polars frame."""
    return pl.concat([pl.read_parquet(io.BytesIO(f)) for f in fetch(sweeps, service_pb2, metadata, **request)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", type=pathlib.Path, help="a sweep file (TOML)")
    parser.add_argument("--coordinator", default="127.0.0.1:7070", help="host:port (an http:// prefix is ignored)")
    parser.add_argument("--token", default=None, help="bearer token, if the coordinator requires one")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        generate_stubs(pathlib.Path(tmp))
        from armada.v1 import service_pb2, service_pb2_grpc  # noqa: E402 (generated above)

        target = args.coordinator.removeprefix("http://")
        metadata = [("authorization", f"Bearer {args.token}")] if args.token else []
        # Replies up to 64 MiB (gRPC's default is 4 MiB), as the armada CLI accepts.
        options = [("grpc.max_receive_message_length", 64 << 20)]
        with grpc.insecure_channel(target, options=options) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="armada.v1.Sweeps"), timeout=10
            )
            services = sorted(ProtoReflectionDescriptorDatabase(channel).get_services())
            sweeps = service_pb2_grpc.SweepsStub(channel)
            submitted = sweeps.SubmitSweep(
                service_pb2.SubmitSweepRequest(toml=args.sweep.read_text(), default_name=args.sweep.stem),
                metadata=metadata,
                timeout=60,
            )
            counts = {}
            finished = None
            for event in sweeps.WatchSweep(
                service_pb2.WatchSweepRequest(sweep_id=submitted.sweep_id), metadata=metadata, timeout=600
            ):
                kind = event.WhichOneof("event")
                counts[kind] = counts.get(kind, 0) + 1
                if kind == "sweep_finished":
                    finished = event.sweep_finished
            summary = sweeps.GetSummary(
                service_pb2.GetSummaryRequest(sweep_id=submitted.sweep_id), metadata=metadata, timeout=120
            )
            table = service_pb2.FetchResultsRequest.Table
            trajectories = fetch_frame(
                sweeps, service_pb2, metadata, sweep_id=submitted.sweep_id, table=table.TRAJECTORIES
            )
            first_key = sorted(trajectories["job_key"].unique().to_list())[0]
            one_job = fetch_frame(
                sweeps, service_pb2, metadata, sweep_id=submitted.sweep_id, table=table.TRAJECTORIES, job_keys=[first_key]
            )
            (final_bytes,) = fetch(sweeps, service_pb2, metadata, sweep_id=submitted.sweep_id, table=table.FINAL)
    print(
        json.dumps(
            {
                "health": health_pb2.HealthCheckResponse.ServingStatus.Name(health.status),
                "services": services,
                "sweep_id": submitted.sweep_id,
                "n_jobs": submitted.n_jobs,
                "events": counts,
                "n_done": finished.n_done if finished else None,
                "n_failed": finished.n_failed if finished else None,
                "final_path": summary.final_path,
                "final_parquet_sha256": hashlib.sha256(summary.final_parquet).hexdigest(),
                "fetched_final_sha256": hashlib.sha256(final_bytes).hexdigest(),
                "trajectories": {
                    "rows": trajectories.height,
                    "jobs": trajectories["job_key"].n_unique(),
                    "columns": trajectories.columns,
                    "step_sum": int(trajectories["step"].sum()),
                },
                "one_job": {"key": first_key, "rows": one_job.height, "keys": one_job["job_key"].unique().to_list()},
            }
        )
    )


if __name__ == "__main__":
    main()
