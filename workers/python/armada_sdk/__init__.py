"""armada's Python SDK: declare a family of your own in Python, or algorithms of your own
for a built-in family (an Extension), run its workers, and submit, watch and read sweeps.

    from armada_sdk import Family, Benchmark, Algorithm, Float, Int, Bool, Choice, Metric
    python -m armada_sdk.worker mymodule:FAMILY --coordinator http://HOST:7070 --slots 4
    from armada_sdk import Client
"""

__version__ = "0.1.0"

from .client import Client  # noqa: E402
from .episode import Record, run_episode  # noqa: E402
from .family import Algorithm, Benchmark, Bool, Choice, Episode, Extension, Family, Float, Int, Metric  # noqa: E402
from .keys import Job, JobStreams  # noqa: E402

__all__ = [
    "Algorithm",
    "Benchmark",
    "Bool",
    "Choice",
    "Client",
    "Episode",
    "Extension",
    "Family",
    "Float",
    "Int",
    "Job",
    "JobStreams",
    "Metric",
    "Record",
    "run_episode",
]
