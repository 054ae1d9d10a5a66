"""The SDK is strictly typed (it ships py.typed): ``mypy --strict`` finds nothing to say
(skipped without mypy; requirements-test.txt pins it)."""

import pathlib
import subprocess
import sys

import pytest

SDK = pathlib.Path(__file__).resolve().parents[1]


def test_the_sdk_passes_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    # From the SDK's directory, so that mypy reads its configuration (pyproject.toml).
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "armada_sdk"]
    done = subprocess.run(command, cwd=SDK, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
