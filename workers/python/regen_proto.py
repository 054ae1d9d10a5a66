"""Regenerate armada_sdk/_proto from proto/armada/v1/*.proto (needs grpcio-tools).

    python workers/python/regen_proto.py            # rewrite the committed stubs
    python workers/python/regen_proto.py --check    # exit 1 when they differ

The stubs are committed so that installing the SDK needs no protoc; the SDK's tests fail
when they no longer match the .proto files.
"""

import pathlib
import re
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent / "proto"
OUT = HERE / "armada_sdk" / "_proto"
FILES = ["armada/v1/job.proto", "armada/v1/service.proto"]


def generate(out: pathlib.Path) -> dict[str, str]:
    """The stubs as {file name: text}, with imports made package-relative."""
    from grpc_tools import protoc

    include = pathlib.Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}"]
    if protoc.main(args + FILES) != 0:
        sys.exit("protoc failed")
    stubs = {}
    for path in sorted((out / "armada" / "v1").glob("*.py")):
        text = path.read_text()
        # `from armada.v1 import job_pb2 as ...` -> a sibling module of this package.
        text = re.sub(r"^from armada\.v1 import (\w+)", r"from . import \1", text, flags=re.M)
        stubs[path.name] = text
    return stubs


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stubs = generate(pathlib.Path(tmp))
    if "--check" in sys.argv:
        stale = [n for n, t in stubs.items() if not (OUT / n).is_file() or (OUT / n).read_text() != t]
        if stale:
            sys.exit(f"stale stubs (run python workers/python/regen_proto.py): {', '.join(stale)}")
        return
    for name, text in stubs.items():
        (OUT / name).write_text(text)
    print(f"wrote {', '.join(sorted(stubs))} to {OUT}")


if __name__ == "__main__":
    main()
