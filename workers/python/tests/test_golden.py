"""The example family's golden trajectories: any change of bits without a version bump fails.

    python workers/python/tests/test_golden.py --write    # after bumping the family's version
"""

import json
import pathlib
import sys

from armada_sdk import Job, run_episode
from armada_sdk.examples.noisy import FAMILY

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / f"{FAMILY.name}-v{FAMILY.version}.json"
KEY_SALT = "armada-job-v1+golden"


def jobs() -> list[Job]:
    out = []
    for benchmark in FAMILY.benchmarks:
        for algorithm in FAMILY.algorithms:
            for seed in (0, 1):
                out.append(
                    Job(
                        family=FAMILY.name,
                        benchmark=benchmark.name,
                        algorithm=algorithm.name,
                        seed=seed,
                        horizon=8,
                        sweep_seed=7,
                        benchmark_params={p.name: p.default for p in benchmark.params},
                        algorithm_params={p.name: p.default for p in algorithm.params},
                    )
                )
    return out


def trajectories() -> dict:
    return {
        job.canonical(KEY_SALT): [[r.step, [v.hex() for v in r.values]] for r in run_episode(FAMILY, job)]
        for job in jobs()
    }


def test_the_example_family_computes_its_golden_trajectories_bit_for_bit():
    assert GOLDEN.is_file(), f"{GOLDEN.name} is missing: a new version? run {__file__} --write"
    expected = json.loads(GOLDEN.read_text())
    got = trajectories()
    assert list(got) == list(expected)
    for job, records in expected.items():
        assert got[job] == records, f"{job}: bits changed; bump FAMILY.version and write the new golden file"


if __name__ == "__main__" and "--write" in sys.argv:
    lines = [f"{json.dumps(job)}: {json.dumps(records)}" for job, records in trajectories().items()]
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {GOLDEN}")
