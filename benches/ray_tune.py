"""The same trivial trials under Ray Tune and under armada, on this machine; prints both
times and their ratio.

Each trial is armada's `testkit/echo` job of one step: it reports two values and stops.
Ray Tune runs it as a function trainable over a grid of seeds (`ray.init` included, as a
user pays it); armada runs a sweep of the same seeds with `armada run` (the embedded
coordinator and one worker process per core, start-up included) and, for reference,
`armada run --in-process`.

    python3 -m venv /tmp/ray && /tmp/ray/bin/pip install "ray[tune]"
    cargo build --release        # or use target/debug/armada, the README's build
    /tmp/ray/bin/python benches/ray_tune.py --armada target/release/armada --trials 100
"""

import argparse
import os
import pathlib
import subprocess
import tempfile
import time


def ray_tune_seconds(trials: int) -> float:
    import ray
    from ray import tune

    def echo(config):
        seed = config["seed"]
        # The testkit job: a value at step 0 and step 1.
        tune.report({"step": 0, "value": float(seed)})
        tune.report({"step": 1, "value": float(seed) + 1.0})

    started = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory() as storage:
        tuner = tune.Tuner(
            echo,
            param_space={"seed": tune.grid_search(list(range(trials)))},
            run_config=tune.RunConfig(storage_path=storage, verbose=0),
        )
        results = tuner.fit()
        assert len(results) == trials and not results.errors, results.errors
    ray.shutdown()
    return time.perf_counter() - started


def armada_seconds(armada: str, trials: int, in_process: bool) -> float:
    sweep = (
        f'name = "ray-compare"\nfamily = "testkit"\nseeds = {trials}\nhorizon = 1\n'
        '[[benchmarks]]\nname = "constant"\n[[algorithms]]\nname = "echo"\n'
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "ray-compare.toml"
        path.write_text(sweep)
        command = [armada, "run", str(path), "--out", str(pathlib.Path(tmp) / "out"), "--quiet"]
        if in_process:
            command.append("--in-process")
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--armada", default="target/release/armada", help="the armada binary")
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    distributed = armada_seconds(args.armada, args.trials, in_process=False)
    local = armada_seconds(args.armada, args.trials, in_process=True)
    ray = ray_tune_seconds(args.trials)
    print(f"{args.trials} trivial trials on {os.cpu_count()} cores:")
    print(f"  Ray Tune                  {ray:8.2f} s")
    print(f"  armada run                {distributed:8.2f} s   Ray / armada = {ray / distributed:.1f}")
    print(f"  armada run --in-process   {local:8.2f} s   Ray / armada = {ray / local:.1f}")


if __name__ == "__main__":
    main()
