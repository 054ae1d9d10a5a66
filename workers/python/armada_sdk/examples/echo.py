"""``echo``: trivial jobs of the shape of armada's built-in ``testkit/echo`` (one float
metric, ``value = seed + step + U(0,1)``), for measuring what the SDK costs per job and per
row (``bench_throughput.py``)."""

from __future__ import annotations

from ..family import Algorithm, Benchmark, Family, Metric
from ..keys import Job, JobStreams


class Episode:
    """A job of ``echo``: ``value`` is the seed plus the step plus a uniform draw."""

    def __init__(self, job: Job, streams: JobStreams):
        self.seed = job.seed
        self.draws = streams.environment("value")

    def initial(self) -> dict[str, float]:
        """The metrics of step 0."""
        return self.step(0)

    def step(self, t: int) -> dict[str, float]:
        """The metrics of step ``t``."""
        return {"value": self.seed + t + float(self.draws.random())}


FAMILY = Family(
    name="echo",
    version=1,
    doc="trivial jobs, for measuring the SDK's own cost",
    benchmarks=[Benchmark("constant", "no environment beyond one uniform draw per step")],
    algorithms=[Algorithm("echo", "value = seed + step + U(0,1)")],
    metrics=[Metric("value", "seed + step + U(0,1)")],
    start=Episode,
)
