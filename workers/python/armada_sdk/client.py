"""A client of a coordinator's Sweeps service: declare a family, submit a sweep (TOML text,
a file, or a dict), watch it with a progress bar, and read its trajectories and summaries
as polars DataFrames."""

from __future__ import annotations

import io
import json
import math
import pathlib
import sys
from typing import Any, Mapping, Optional, Union


from . import connection
from ._proto import service_pb2
from .family import Extension, Family

Sweep = Union[str, pathlib.Path, Mapping[str, Any]]


class Client:
    def __init__(self, url: str = "http://127.0.0.1:7070", token: Optional[str] = None, tls_ca: Optional[str] = None):
        self.url = url
        self.sweeps, _ = connection.stubs(connection.channel(url, tls_ca))
        self.metadata = connection.metadata(token)

    def _call(self, method: str, request, timeout: float = 60):
        return getattr(self.sweeps, method)(request, metadata=self.metadata, timeout=timeout)

    def server_info(self) -> service_pb2.ServerInfoResponse:
        return self._call("ServerInfo", service_pb2.ServerInfoRequest())

    def declare_family(self, family: Union[Family, Extension, service_pb2.FamilyInfo]) -> str:
        """Declare a family (or an extension of a built-in one) ahead of its workers; its
        digest. A different declaration under a declared name and version is refused
        (grpc.RpcError, FAILED_PRECONDITION)."""
        info = family.to_proto() if isinstance(family, (Family, Extension)) else family
        return self._call("DeclareFamily", service_pb2.DeclareFamilyRequest(declaration=info)).digest

    def submit(self, sweep: Sweep, name: Optional[str] = None) -> str:
        """Submit a sweep: TOML text, a path to a sweep file, or a dict of the same shape.
        The sweep id (its name)."""
        if isinstance(sweep, pathlib.Path):
            text, default = sweep.read_text(), sweep.stem
        elif isinstance(sweep, str):
            text, default = sweep, "sweep"
        else:
            text, default = to_toml(sweep), "sweep"
        request = service_pb2.SubmitSweepRequest(toml=text, default_name=name or default)
        return self._call("SubmitSweep", request).sweep_id

    def status(self, sweep_id: str) -> service_pb2.SweepStatus:
        return self._call("GetSweep", service_pb2.GetSweepRequest(sweep_id=sweep_id))

    def list_sweeps(self) -> list[service_pb2.SweepStatus]:
        return list(self._call("ListSweeps", service_pb2.ListSweepsRequest()).sweeps)

    def cancel(self, sweep_id: str) -> service_pb2.SweepStatus:
        return self._call("CancelSweep", service_pb2.CancelSweepRequest(sweep_id=sweep_id))

    def delete(self, sweep_id: str, keep_results: bool = False) -> service_pb2.DeleteSweepResponse:
        return self._call("DeleteSweep", service_pb2.DeleteSweepRequest(sweep_id=sweep_id, keep_results=keep_results))

    def watch(self, sweep_id: str, progress: bool = True, timeout: Optional[float] = None) -> service_pb2.SweepStatus:
        """Follow a sweep to its end (a progress bar on stderr); its final status."""
        status = None
        events = self.sweeps.WatchSweep(service_pb2.WatchSweepRequest(sweep_id=sweep_id), metadata=self.metadata, timeout=timeout)
        for event in events:
            kind = event.WhichOneof("event")
            if kind in ("snapshot", "sweep_finished"):
                status = getattr(event, kind)
            elif status is not None and kind == "job_finished":
                status.n_done += 1
            elif status is not None and kind == "job_failed" and event.job_failed.final:
                status.n_failed += 1
            if progress and status is not None:
                _bar(status)
            if kind == "sweep_finished":
                break
        if progress:
            print(file=sys.stderr)
        return self.status(sweep_id)

    def _fetch(self, **request) -> list[bytes]:
        files, current = [], bytearray()
        for chunk in self.sweeps.FetchResults(service_pb2.FetchResultsRequest(**request), metadata=self.metadata, timeout=600):
            current += chunk.data
            if chunk.end_of_file:
                files.append(bytes(current))
                current = bytearray()
        return files

    def trajectories(self, sweep_id: str, job_keys: Optional[list[str]] = None, algorithm: str = "", benchmark: str = ""):
        """The committed trajectories (all, or some jobs or cells): one row per step."""
        import polars as pl

        cells = service_pb2.CellFilter(algorithm=algorithm, benchmark=benchmark)
        files = self._fetch(
            sweep_id=sweep_id, table=service_pb2.FetchResultsRequest.TRAJECTORIES, job_keys=job_keys or [], cells=cells
        )
        if not files:
            raise LookupError(f"sweep {sweep_id}: no committed trajectory matches")
        return pl.concat([pl.read_parquet(io.BytesIO(f)) for f in files], how="vertical_relaxed")

    def summary(self, sweep_id: str, table: str = "final"):
        """``final`` (the last step per cell) or ``summary`` (every step), over seeds."""
        import polars as pl

        kind = {"final": service_pb2.FetchResultsRequest.FINAL, "summary": service_pb2.FetchResultsRequest.SUMMARY}[table]
        return pl.read_parquet(io.BytesIO(self._fetch(sweep_id=sweep_id, table=kind)[0]))


def _bar(status: service_pb2.SweepStatus, width: int = 30) -> None:
    settled = status.n_done + status.n_failed + status.n_cancelled
    filled = width * settled // max(status.n_jobs, 1)
    print(
        f"\r{status.sweep_id} [{'#' * filled}{'.' * (width - filled)}] {settled}/{status.n_jobs} "
        f"({status.n_failed} failed)",
        end="",
        file=sys.stderr,
        flush=True,
    )


# ---- sweeps given as dicts


def _value(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"{where}: {v} has no TOML form armada reads")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, f"{where}[{i}]") for i, x in enumerate(v)) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x, f'{where}.{k}')}" for k, x in v.items()) + " }"
    raise TypeError(f"{where}: {v!r} has no TOML form")


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def to_toml(sweep: Mapping[str, Any]) -> str:
    """A sweep dict as sweep-file TOML: scalars at the top, then each list of tables
    (``benchmarks``, ``algorithms``) as ``[[...]]`` entries."""
    lines, tables = [], []
    for k, v in sweep.items():
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, Mapping) for x in v):
            tables.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v, k)}")
    for k, entries in tables:
        for i, entry in enumerate(entries):
            lines.append(f"\n[[{_key(k)}]]")
            lines.extend(f"{_key(f)} = {_value(x, f'{k}[{i}].{f}')}" for f, x in entry.items())
    return "\n".join(lines) + "\n"


__all__ = ["Client", "to_toml"]
