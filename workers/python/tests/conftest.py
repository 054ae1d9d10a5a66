"""Real processes for the tests that need them: an ``armada serve`` of the binary that
ARMADA_BIN names (tests/integration/sdk.rs sets it; without it those tests fail, saying so), on
127.0.0.1 only, stopped at the end of its test (or module)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Iterator, Optional

import grpc
import pytest

#: The repository's test certificate (for 127.0.0.1 and localhost), when the tests run
#: from a checkout (they do: tests/integration/sdk.rs runs them there).
TLS_FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "tls"


def armada_bin() -> str:
    path = os.environ.get("ARMADA_BIN")
    if not path:
        pytest.fail("ARMADA_BIN is unset: name the armada binary these tests start (tests/integration/sdk.rs sets it)", pytrace=False)
    if not os.access(path, os.X_OK):
        pytest.fail(f"ARMADA_BIN={path} is not an executable", pytrace=False)
    return path


@dataclasses.dataclass
class Served:
    """A running ``armada serve``: its gRPC URL and its dashboard's address (HOST:PORT)."""

    url: str
    dashboard: str
    port: int
    log: pathlib.Path


def _read_lines(stream, n: int, seconds: float) -> list[str]:
    """The first ``n`` lines of ``stream``, waiting ``seconds`` at most."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(stream.readline() for _ in range(n)), daemon=True)
    reader.start()
    reader.join(seconds)
    return lines


@contextlib.contextmanager
def serve(data: pathlib.Path, *extra: str) -> Iterator[Served]:
    """``armada serve`` on free ports of 127.0.0.1, stopped (then killed) on leaving."""
    log = data.with_suffix(".serve.log")
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [armada_bin(), "serve", "--listen", "127.0.0.1:0", "--data", str(data), "--dashboard", "127.0.0.1:0", *extra],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={k: v for k, v in os.environ.items() if k != "ARMADA_TOKEN"},
            text=True,
        )
    try:
        # "armada coordinator listening on http://127.0.0.1:PORT", then
        # "armada dashboard on http://127.0.0.1:PORT/ (metrics: ...)".
        lines = _read_lines(proc.stdout, 2, 60)
        if len(lines) < 2 or "listening on" not in lines[0]:
            pytest.fail(f"armada serve did not start: {lines}\n{log.read_text()}", pytrace=False)
        url = lines[0].split()[-1]
        dashboard = lines[1].split("://", 1)[1].split("/", 1)[0]
        yield Served(url, dashboard, int(url.rsplit(":", 1)[1]), log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory) -> Iterator[Served]:
    """One plain coordinator (with its dashboard) for a module's tests."""
    with serve(tmp_path_factory.mktemp("coordinator") / "data") as served:
        yield served


@dataclasses.dataclass
class Exited:
    """How a worker ended: its exit code, whether it had to be stopped, after how long, and
    what it logged."""

    code: int
    stopped: bool
    seconds: float
    log: str


def run_worker(url: str, *args: str, seconds: float = 30) -> Exited:
    """Run ``python -m armada_sdk.worker`` of the echo family against ``url`` until it exits,
    or stop it (SIGTERM, then SIGKILL) after ``seconds``."""
    command = [sys.executable, "-m", "armada_sdk.worker", "armada_sdk.examples.echo:FAMILY", "--coordinator", url, "--slots", "1", *args]
    env = {k: v for k, v in os.environ.items() if k != "ARMADA_TOKEN"}
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    stopped = False
    try:
        _, log = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        stopped = True
        proc.terminate()
        try:
            _, log = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, log = proc.communicate()
    return Exited(proc.returncode, stopped, time.monotonic() - started, log)


@contextlib.contextmanager
def worker(url: str, family: str, log: pathlib.Path, path: Optional[pathlib.Path] = None) -> Iterator[subprocess.Popen]:
    """A Python worker of ``family`` (importable from ``path``) with one slot, its log in
    ``log``; stopped (then killed) on leaving."""
    env = {k: v for k, v in os.environ.items() if k != "ARMADA_TOKEN"}
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "armada_sdk.worker", family, "--coordinator", url, "--slots", "1"]
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Answer(grpc.RpcError):
    """A gRPC error as a stub raises it: its code and details."""

    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details
