"""A client of a coordinator's Sweeps service: declare a family, submit a sweep (TOML text,
a file, or a dict), watch it with a progress bar, and read its trajectories and summaries
as polars DataFrames.

Every method answers with Python values (the dataclasses of ``armada_sdk.replies``, polars
frames) and fails with an ``armada_sdk.ArmadaError`` of the kind at hand (``InvalidSweep``,
``NotFound``, ``PermissionDenied``, ``Unavailable``, ``WrongServer``...), the gRPC error
chained as its ``__cause__``."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import pathlib
import sys
import warnings
from typing import TYPE_CHECKING, Any, BinaryIO, Mapping, Optional, Union, overload

import grpc

from . import connection, errors
from ._proto import service_pb2
from .family import Extension, Family
from .replies import DeleteResult, FamilyInfo, ServerInfo, Submitted, SweepStatus

if TYPE_CHECKING:
    import polars as pl

    #: Fetched rows: read into memory, or (with ``to``) scanned from the files written there.
    Rows = Union[pl.DataFrame, pl.LazyFrame]

#: A sweep to submit: TOML text, a path to a sweep file, or a dict of the same shape.
Sweep = Union[str, pathlib.Path, Mapping[str, Any]]

#: How much Parquet a fetch into memory takes before it stops with TooLarge.
MAX_FETCH_BYTES = 512 << 20


class Client:
    """A connection to the coordinator at ``url`` (``http://HOST:PORT``, or ``https://`` with
    ``tls_ca``, the PEM certificate that signed the coordinator's), sending ``token`` when
    it needs one. Nothing is dialled until the first call; a URL that cannot work (no
    scheme, no host) is a ValueError at once."""

    def __init__(self, url: str = "http://127.0.0.1:7070", token: Optional[str] = None, tls_ca: Optional[str] = None):
        self.url = url
        self._sweeps, _ = connection.stubs(connection.channel(url, tls_ca))
        self.metadata = connection.metadata(token)

    def _error(self, e: grpc.RpcError, invalid: type[errors.InvalidArgument] = errors.InvalidArgument) -> errors.ArmadaError:
        return errors.from_rpc_error(self.url, e, invalid)

    def _call(self, method: str, request: Any, timeout: float = 60, invalid: type[errors.InvalidArgument] = errors.InvalidArgument) -> Any:
        try:
            return getattr(self._sweeps, method)(request, metadata=self.metadata, timeout=timeout)
        except grpc.RpcError as e:
            raise self._error(e, invalid) from e

    def server_info(self) -> ServerInfo:
        """What the coordinator runs: its version and build, and every family it knows
        (built in and declared), with their benchmarks, algorithms, parameters and metrics."""
        return ServerInfo.from_proto(self._call("ServerInfo", service_pb2.ServerInfoRequest()))

    def declare_family(self, family: Union[Family, Extension, service_pb2.FamilyInfo]) -> str:
        """Declare a family (or an extension of a built-in one) ahead of its workers; its
        digest. Declaring the same again changes nothing (other docs replace the kept ones);
        another code is a new revision of the version, which sweeps take from then on; any
        other difference under a declared name and version raises FailedPrecondition naming
        the first field that differs (bump the version), a declaration that breaks the rules
        InvalidArgument."""
        info = family.to_proto() if isinstance(family, (Family, Extension)) else family
        digest: str = self._call("DeclareFamily", service_pb2.DeclareFamilyRequest(declaration=info)).digest
        return digest

    def describe_family(self, name: str, version: int = 0, digest: str = "") -> FamilyInfo:
        """One family whole (ServerInfo abridges declared ones beyond a size): by name, its
        newest version's revision declared last; or that ``version``; or the declaration of
        ``digest``. NotFound names what is known."""
        request = service_pb2.DescribeFamilyRequest(name=name, version=version, digest=digest)
        return FamilyInfo.from_proto(self._call("DescribeFamily", request))

    def remove_family(self, name: str, version: int, digest: str = "") -> list[str]:
        """Forget the declarations of a family's version (all its revisions, or the one of
        ``digest``); the digests removed. Takes an admin token (PermissionDenied otherwise);
        FailedPrecondition, naming them, while stored sweeps use one."""
        request = service_pb2.RemoveFamilyRequest(name=name, version=version, digest=digest)
        return list(self._call("RemoveFamily", request).removed)

    def submit(self, sweep: Sweep, name: Optional[str] = None) -> str:
        """Submit a sweep: TOML text, a path to a sweep file, or a dict of the same shape;
        the sweep id (its name: the sweep's own, else ``name``, else the file's stem or
        ``sweep``). A sweep that does not validate raises InvalidSweep, whose ``errors`` name
        each field at fault; nothing of it is queued."""
        return self.submit_sweep(sweep, name).sweep_id

    def submit_sweep(self, sweep: Sweep, name: Optional[str] = None) -> Submitted:
        """``submit``, answering what the submission did: the jobs new to the sweep, those
        already done, and its declared families whose declaration changed since its last
        submission (``revised``: their code was edited, say, so their jobs run again)."""
        if isinstance(sweep, pathlib.Path):
            text, default = sweep.read_text(), sweep.stem
        elif isinstance(sweep, str):
            text, default = sweep, "sweep"
        else:
            text, default = to_toml(sweep), "sweep"
        request = service_pb2.SubmitSweepRequest(toml=text, default_name=name or default)
        return Submitted.from_proto(self._call("SubmitSweep", request, invalid=errors.InvalidSweep))

    def status(self, sweep_id: str, failures_offset: int = 0, failures_limit: int = 0) -> SweepStatus:
        """The sweep's state and counts, with a page of its failed jobs: ``failures_limit``
        at most (0: 100) after skipping ``failures_offset``, in job order; NotFound for an
        unknown sweep."""
        request = service_pb2.GetSweepRequest(sweep_id=sweep_id, failures_offset=failures_offset, failures_limit=failures_limit)
        return SweepStatus.from_proto(self._call("GetSweep", request))

    def list_sweeps(self) -> list[SweepStatus]:
        """Every sweep the coordinator keeps (without their failures)."""
        return [SweepStatus.from_proto(s) for s in self._call("ListSweeps", service_pb2.ListSweepsRequest()).sweeps]

    def cancel(self, sweep_id: str) -> SweepStatus:
        """Cancel the sweep's queued jobs and stop its running ones (finished trajectories
        are kept); its status after."""
        return SweepStatus.from_proto(self._call("CancelSweep", service_pb2.CancelSweepRequest(sweep_id=sweep_id)))

    def delete(self, sweep_id: str, keep_results: bool = False) -> DeleteResult:
        """Remove a finished or cancelled sweep from the coordinator, and its results unless
        ``keep_results``. FailedPrecondition while it has queued or running jobs (cancel it
        first), NotFound for an unknown sweep."""
        request = service_pb2.DeleteSweepRequest(sweep_id=sweep_id, keep_results=keep_results)
        reply = self._call("DeleteSweep", request)
        return DeleteResult(n_jobs=reply.n_jobs, results_removed=reply.results_removed)

    def watch(self, sweep_id: str, progress: bool = True, timeout: Optional[float] = None) -> SweepStatus:
        """Follow a sweep to its end (a progress bar on stderr); its final status. With a
        ``timeout`` (seconds), Unavailable (DEADLINE_EXCEEDED) when it has not ended by then."""
        status = None
        request = service_pb2.WatchSweepRequest(sweep_id=sweep_id)
        events = self._sweeps.WatchSweep(request, metadata=self.metadata, timeout=timeout)
        try:
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
        except grpc.RpcError as e:
            raise self._error(e) from e
        finally:
            events.cancel()  # the stream ends with the sweep; this frees it at once
            if progress:
                print(file=sys.stderr)
        return self.status(sweep_id)

    def _fetch(self, files: "_Files", damage: Optional[Damage] = None, **request: Any) -> None:
        """Stream FetchResults into ``files`` a chunk at a time; the parts the coordinator
        could not read go into ``damage``."""
        stream = self._sweeps.FetchResults(service_pb2.FetchResultsRequest(**request), metadata=self.metadata, timeout=600)
        try:
            for chunk in stream:
                if chunk.data:
                    files.write(chunk.data)
                if chunk.end_of_file:
                    files.end_file()
                if damage is not None and chunk.HasField("damaged"):
                    damage.parts.append(DamagedPart(chunk.damaged.part, chunk.damaged.error))
                if damage is not None:
                    damage.unreadable_jobs.extend(chunk.unreadable_jobs)
        except grpc.RpcError as e:
            raise self._error(e) from e
        finally:
            stream.cancel()  # frees the stream at once when a bound or an error ended it early
            files.close()

    def fetch_trajectories(
        self,
        sweep_id: str,
        job_keys: Optional[list[str]] = None,
        algorithm: str = "",
        benchmark: str = "",
        *,
        to: Optional[Union[str, pathlib.Path]] = None,
        max_bytes: int = MAX_FETCH_BYTES,
    ) -> Trajectories:
        """The committed trajectories (all, or some jobs or cells), one row per step, with
        the parts the coordinator could not read and the done jobs only they held (a damaged
        part stops nothing but its own jobs); NotFound when no job matches. ``job_keys``
        keeps only those jobs, ``algorithm`` and ``benchmark`` (when not empty) only the
        jobs of those cells.

        The rows are a polars DataFrame, read into memory: TooLarge once the Parquet passes
        ``max_bytes`` (512 MiB by default). With ``to``, a directory, the files are written
        there as they arrive (a chunk in memory at a time, whatever their size) and the rows
        are a polars LazyFrame scanning them: filter and aggregate it before ``collect()``."""
        cells = service_pb2.CellFilter(algorithm=algorithm, benchmark=benchmark)
        table = service_pb2.FetchResultsRequest.TRAJECTORIES
        damage = Damage([], [])
        files = _Files(f"sweep {sweep_id}: its trajectories", to, "fetched-{:06}.parquet", max_bytes)
        self._fetch(files, damage, sweep_id=sweep_id, table=table, job_keys=job_keys or [], cells=cells)
        if not files.done and not damage.parts:
            raise errors.NotFound(f"sweep {sweep_id}: no committed trajectory matches")
        return Trajectories(files.rows(), damage.parts, damage.unreadable_jobs)

    @overload
    def trajectories(
        self,
        sweep_id: str,
        job_keys: Optional[list[str]] = None,
        algorithm: str = "",
        benchmark: str = "",
        *,
        to: None = None,
        max_bytes: int = MAX_FETCH_BYTES,
    ) -> pl.DataFrame: ...

    @overload
    def trajectories(
        self,
        sweep_id: str,
        job_keys: Optional[list[str]] = None,
        algorithm: str = "",
        benchmark: str = "",
        *,
        to: Union[str, pathlib.Path],
        max_bytes: int = MAX_FETCH_BYTES,
    ) -> pl.LazyFrame: ...

    @overload
    def trajectories(
        self,
        sweep_id: str,
        job_keys: Optional[list[str]] = None,
        algorithm: str = "",
        benchmark: str = "",
        *,
        to: Optional[Union[str, pathlib.Path]] = None,
        max_bytes: int = MAX_FETCH_BYTES,
    ) -> Rows: ...

    def trajectories(
        self,
        sweep_id: str,
        job_keys: Optional[list[str]] = None,
        algorithm: str = "",
        benchmark: str = "",
        *,
        to: Optional[Union[str, pathlib.Path]] = None,
        max_bytes: int = MAX_FETCH_BYTES,
    ) -> Rows:
        """``fetch_trajectories``'s rows (it takes the same ``to`` and ``max_bytes``); a
        damaged part is named in a ``DamagedPartsWarning`` and its jobs left out."""
        fetched = self.fetch_trajectories(sweep_id, job_keys, algorithm, benchmark, to=to, max_bytes=max_bytes)
        if fetched.damaged:
            parts = "; ".join(f"{d.part}: {d.error}" for d in fetched.damaged)
            warnings.warn(
                DamagedPartsWarning(f"sweep {sweep_id}: {len(fetched.damaged)} damaged parts ({parts}); "
                                    f"{len(fetched.unreadable_jobs)} done jobs only they held are missing: {fetched.unreadable_jobs}"),
                stacklevel=2,
            )
        return fetched.rows

    @overload
    def summary(self, sweep_id: str, table: str = "final", *, to: None = None, max_bytes: int = MAX_FETCH_BYTES) -> pl.DataFrame: ...

    @overload
    def summary(self, sweep_id: str, table: str = "final", *, to: Union[str, pathlib.Path], max_bytes: int = MAX_FETCH_BYTES) -> pl.LazyFrame: ...

    @overload
    def summary(
        self, sweep_id: str, table: str = "final", *, to: Optional[Union[str, pathlib.Path]] = None, max_bytes: int = MAX_FETCH_BYTES
    ) -> Rows: ...

    def summary(
        self, sweep_id: str, table: str = "final", *, to: Optional[Union[str, pathlib.Path]] = None, max_bytes: int = MAX_FETCH_BYTES
    ) -> Rows:
        """A summary table over seeds: ``final`` (the last step per cell) or ``summary``
        (every step); or ``comparisons``, a resolving sweep's verdicts (a sweep file with a
        ``[resolve]`` table). FailedPrecondition before it is written. A polars DataFrame, or with
        ``to`` (a directory) a LazyFrame over the file written there a chunk at a time; into
        memory, TooLarge once the Parquet passes ``max_bytes`` (a long sweep's ``summary``
        is hundreds of megabytes)."""
        kinds = {
            "final": service_pb2.FetchResultsRequest.FINAL,
            "summary": service_pb2.FetchResultsRequest.SUMMARY,
            "comparisons": service_pb2.FetchResultsRequest.COMPARISONS,
        }
        if table not in kinds:
            raise ValueError(f"table {table!r}: give \"final\", \"summary\" or \"comparisons\"")
        files = _Files(f"sweep {sweep_id}: its {table} table", to, f"{table}.parquet", max_bytes)
        self._fetch(files, sweep_id=sweep_id, table=kinds[table])
        if not files.done:
            raise errors.NotFound(f"sweep {sweep_id}: no {table} table")
        return files.rows()


class _Files:
    """Fetched files, in memory up to ``max_bytes`` or, with ``to``, written there a chunk
    at a time (each under a temporary name until complete)."""

    def __init__(self, what: str, to: Optional[Union[str, pathlib.Path]], name: str, max_bytes: int):
        self.what, self.name, self.max_bytes = what, name, max_bytes
        self.to = pathlib.Path(to) if to is not None else None
        if self.to is not None:
            self.to.mkdir(parents=True, exist_ok=True)
        #: The complete files in memory (without ``to``)...
        self.blobs: list[bytes] = []
        #: ...or written there (with it).
        self.paths: list[pathlib.Path] = []
        self.current = bytearray()
        self.open: Optional[BinaryIO] = None
        self.n_bytes = 0

    @property
    def done(self) -> Union[list[bytes], list[pathlib.Path]]:
        """The complete files (in memory, or their paths)."""
        return self.blobs if self.to is None else self.paths

    def _path(self) -> pathlib.Path:
        assert self.to is not None
        return self.to / self.name.format(len(self.paths) + 1)

    def write(self, data: bytes) -> None:
        self.n_bytes += len(data)
        if self.to is None:
            if self.n_bytes > self.max_bytes:
                raise errors.TooLarge(
                    f"{self.what} passed max_bytes={self.max_bytes} bytes of Parquet fetched into memory: give to=DIR to "
                    "write the files there and scan them lazily, narrow the fetch (job_keys, algorithm, benchmark), "
                    "or raise max_bytes"
                )
            self.current += data
            return
        if self.open is None:
            self.open = open(self._path().with_suffix(".parquet.tmp"), "wb")
        self.open.write(data)

    def end_file(self) -> None:
        if self.to is None:
            self.blobs.append(bytes(self.current))
            self.current = bytearray()
            return
        path = self._path()
        if self.open is None:
            self.open = open(path.with_suffix(".parquet.tmp"), "wb")
        self.open.close()
        self.open = None
        path.with_suffix(".parquet.tmp").replace(path)
        self.paths.append(path)

    def close(self) -> None:
        """A file left incomplete (the stream ended early) is removed."""
        if self.open is not None:
            self.open.close()
            self._path().with_suffix(".parquet.tmp").unlink(missing_ok=True)
            self.open = None

    def rows(self) -> Rows:
        import polars as pl

        if self.to is not None:
            return pl.scan_parquet([str(p) for p in self.paths]) if self.paths else pl.LazyFrame()
        frames = [pl.read_parquet(io.BytesIO(f)) for f in self.blobs]
        return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


@dataclasses.dataclass(frozen=True)
class DamagedPart:
    """A part of a sweep the coordinator could not read: its file name, and why."""

    #: The part's file name.
    part: str
    #: Why it could not be read.
    error: str


@dataclasses.dataclass(frozen=True)
class Trajectories:
    """Fetched trajectories: the rows of the readable jobs, the damaged parts, and the done
    jobs (of the asked keys) that only those held."""

    #: One row per step: a polars DataFrame, or with ``to`` a LazyFrame over the files written there.
    rows: Rows
    #: The parts the coordinator could not read.
    damaged: list[DamagedPart]
    #: The keys of the done jobs only those parts held (missing from ``rows``).
    unreadable_jobs: list[str]


@dataclasses.dataclass
class Damage:
    """What a fetch could not read, gathered as its chunks arrive."""

    #: The parts the coordinator could not read.
    parts: list[DamagedPart]
    #: The keys of the done jobs only those parts held.
    unreadable_jobs: list[str]


class DamagedPartsWarning(UserWarning):
    """Some of a sweep's parts could not be read: their jobs are missing from the rows."""


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
