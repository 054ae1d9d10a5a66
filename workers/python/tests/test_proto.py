"""The committed stubs are what proto/armada/v1 generates (skipped without grpc_tools)."""

import pathlib
import subprocess
import sys

import pytest

REGEN = pathlib.Path(__file__).resolve().parents[1] / "regen_proto.py"


def test_the_committed_stubs_match_the_proto_files():
    pytest.importorskip("grpc_tools")
    done = subprocess.run([sys.executable, str(REGEN), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
