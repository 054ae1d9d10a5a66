"""armada's Python SDK: declare a family of your own in Python, or algorithms of your own
for a built-in family (an Extension), run its workers, and submit, watch and read sweeps.

    from armada_sdk import Family, Benchmark, Algorithm, Float, Int, Bool, Choice, Metric
    python -m armada_sdk.worker mymodule:FAMILY --coordinator http://HOST:7070 --slots 4
    from armada_sdk import Client, InvalidSweep, NotFound
"""

__version__ = "0.1.0"

from .client import Client, DamagedPart, DamagedPartsWarning, Trajectories  # noqa: E402
from .code import code_digest  # noqa: E402
from .episode import Record, run_episode  # noqa: E402
from .errors import (  # noqa: E402
    ArmadaError,
    FailedPrecondition,
    InvalidArgument,
    InvalidSweep,
    NotFound,
    PermissionDenied,
    TooLarge,
    Unavailable,
    WrongServer,
)
from .family import Algorithm, Benchmark, Bool, Choice, Episode, Extension, Family, Float, Int, Metric  # noqa: E402
from .keys import Job, JobStreams  # noqa: E402
from .replies import (  # noqa: E402
    ComponentInfo,
    DeleteResult,
    FamilyInfo,
    JobFailed,
    MetricInfo,
    ParamInfo,
    RevisedFamily,
    ServerInfo,
    Submitted,
    SweepState,
    SweepStatus,
    WriteTrouble,
)

__all__ = [
    "Algorithm",
    "ArmadaError",
    "Benchmark",
    "Bool",
    "Choice",
    "Client",
    "DamagedPart",
    "DamagedPartsWarning",
    "ComponentInfo",
    "DeleteResult",
    "Episode",
    "Extension",
    "FailedPrecondition",
    "Family",
    "FamilyInfo",
    "Float",
    "Int",
    "InvalidArgument",
    "InvalidSweep",
    "Job",
    "JobFailed",
    "JobStreams",
    "Metric",
    "MetricInfo",
    "NotFound",
    "ParamInfo",
    "PermissionDenied",
    "Record",
    "RevisedFamily",
    "ServerInfo",
    "Submitted",
    "SweepState",
    "SweepStatus",
    "TooLarge",
    "Trajectories",
    "Unavailable",
    "WriteTrouble",
    "WrongServer",
    "code_digest",
    "run_episode",
]
