"""Jobs/s and rows/s through a Python worker of armada-sdk against armada's Rust worker,
on trivial jobs of the same shape (one float metric, `horizon` steps), in one run:

    python workers/python/bench_throughput.py --armada target/release/armada [--jobs 2000] [--horizon 20] [--slots 2]

Each side gets a fresh coordinator (`armada serve`) and one worker with `--slots`; the time
is from submitting the sweep to its end (`watch`). The SDK's per-job overhead is the
Python worker's time per job per slot less the same episodes run in one process with no
coordinator (`run_episode`).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from armada_sdk import Client, Job, run_episode
from armada_sdk.examples.echo import FAMILY


def serve(armada: str, data: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [armada, "serve", "--listen", "127.0.0.1:0", "--data", data, "--dashboard", "off"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = proc.stdout.readline().split()[-1]
    return proc, url


def timed(armada: str, worker: list[str], sweep: str, tmp: str, name: str) -> float:
    coordinator, url = serve(armada, os.path.join(tmp, name))
    process = subprocess.Popen(worker + ["--coordinator", url], stderr=subprocess.DEVNULL)
    try:
        client = Client(url)
        if "armada_sdk.worker" in worker:
            client.declare_family(FAMILY)
        started = time.perf_counter()
        client.watch(client.submit(sweep, name=name), progress=False)
        return time.perf_counter() - started
    finally:
        for p in (process, coordinator):
            p.terminate()
            p.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--armada", required=True, help="the armada binary (a release build measures armada, not the compiler)")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--horizon", type=int, default=20)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()
    sweep = lambda family: (  # noqa: E731
        f'family = "{family}"\nseeds = {args.jobs}\nhorizon = {args.horizon}\n'
        '[[benchmarks]]\nname = "constant"\n[[algorithms]]\nname = "echo"\n'
    )
    rows = args.jobs * (args.horizon + 1)
    with tempfile.TemporaryDirectory() as tmp:
        rust = timed(args.armada, [args.armada, "worker", "--slots", str(args.slots)], sweep("testkit"), tmp, "rust")
        python_worker = [sys.executable, "-m", "armada_sdk.worker", "armada_sdk.examples.echo:FAMILY", "--slots", str(args.slots)]
        python = timed(args.armada, python_worker, sweep("echo"), tmp, "python")
    started = time.perf_counter()
    for seed in range(args.jobs):
        run_episode(FAMILY, Job("echo", "constant", "echo", seed, args.horizon))
    in_process = time.perf_counter() - started
    print(f"{args.jobs} jobs of {args.horizon + 1} rows, {args.slots} slots")
    for name, seconds in (("Rust worker", rust), ("Python worker", python)):
        print(f"  {name:14s} {seconds:7.2f} s  {args.jobs / seconds:9.0f} jobs/s  {rows / seconds:10.0f} rows/s")
    print(f"  Python / Rust time: {python / rust:.1f}x")
    print(f"  episodes in one Python process, no coordinator: {in_process:.2f} s ({1e3 * in_process / args.jobs:.2f} ms a job)")
    overhead = (python * args.slots - in_process) / args.jobs
    print(f"  SDK overhead per job per slot: {1e3 * overhead:.2f} ms")


if __name__ == "__main__":
    main()
