"""What can go wrong talking to a coordinator, as exceptions to catch by kind, and the one
place that reads a gRPC error (its code and text) to tell which: the client raises these,
and the worker decides with the same function whether to retry, or to stop because the
address is wrong.

    try:
        client.submit(sweep)
    except armada_sdk.InvalidSweep as e:
        for field, message in e.errors:
            print(field, message)
"""

from __future__ import annotations

import re
import socket
import ssl

import grpc


class ArmadaError(Exception):
    """Any error of a call to the coordinator. ``code`` is the gRPC status's name
    (``"NOT_FOUND"``...; empty when no call answered), ``details`` the coordinator's text,
    and ``str()`` the whole explanation."""

    def __init__(self, message: str, code: str = "", details: str = ""):
        super().__init__(message)
        #: The whole explanation (what ``str()`` gives).
        self.message = message
        #: The gRPC status's name (``"NOT_FOUND"``...), empty when no call answered.
        self.code = code
        #: The coordinator's own text (empty when it gave none).
        self.details = details


class InvalidArgument(ArmadaError, ValueError):
    """INVALID_ARGUMENT: the coordinator refused what it was given, naming the fields at
    fault: ``errors`` lists them as (field, message) pairs (field ``""`` when the message
    names none, as for malformed TOML)."""

    def __init__(self, message: str, code: str = "", details: str = ""):
        super().__init__(message, code, details)
        #: The fields at fault, as (field, message) pairs.
        self.errors = field_errors(details or message)


class InvalidSweep(InvalidArgument):
    """A submitted sweep that does not validate (nothing of it is queued): its ``errors``
    say which field is wrong and why, e.g. ``("algorithms[0].name", "unknown algorithm ...")``."""


class PermissionDenied(ArmadaError):
    """UNAUTHENTICATED or PERMISSION_DENIED: a missing or wrong token, or a token whose role
    cannot do this."""


class NotFound(ArmadaError, LookupError):
    """NOT_FOUND: no such sweep (or family, or results)."""


class FailedPrecondition(ArmadaError):
    """FAILED_PRECONDITION: not now, or not like this: deleting a sweep that still runs, a
    summary not written yet, another declaration under a declared family name and version."""


class TooLarge(ArmadaError):
    """A fetch into memory passed the bound it was given (``max_bytes`` of Parquet): nothing
    is returned; fetch it to disk with ``to=DIR`` (and scan it lazily), narrow it, or raise
    the bound."""


class Unavailable(ArmadaError):
    """UNAVAILABLE or DEADLINE_EXCEEDED: the coordinator is out of reach (nothing listens,
    an unknown host, a lost connection) or did not answer in time; trying again later may
    work. ``str()`` says which."""


class WrongServer(ArmadaError):
    """The address answers, but not as a coordinator's gRPC port: the dashboard's port (plain
    HTTP), a plain port dialled with https://, a TLS port dialled with http://, or a
    certificate the given CA did not sign. Trying again will not help: fix the URL."""


#: What ``armada serve`` prints for its gRPC port, to point a misdialled user at it.
_WHICH_PORT = "the one `armada serve` printed as `armada coordinator listening on` (7070 by default)"

PLAIN_HTTP = f"the server answered plain HTTP, not gRPC: is this the dashboard's port? The coordinator's is {_WHICH_PORT}"
NOT_TLS = "the server did not answer TLS: does it serve plain http://?"
UNTRUSTED = "is --tls-ca the CA that signed the coordinator's certificate, and is the URL's host a name in it?"
SPEAKS_TLS = "the server speaks TLS, not plain HTTP/2: use https:// with --tls-ca"

_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.UNAUTHENTICATED: PermissionDenied,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
}


def _authority(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/")


def _last_cause(details: str) -> str:
    """The innermost cause of a gRPC core message (``failed to connect to all addresses;
    last error: UNKNOWN: ipv4:127.0.0.1:7070: Tls handshake failed (TSI_PROTOCOL_FAILURE):
    SSL_ERROR_SSL: ...``): what follows the address and the words it is said with."""
    cause = details.rsplit("last error: ", 1)[-1]
    cause = re.sub(r"^[A-Z_]+: ", "", cause)  # the status name
    cause = re.sub(r"^(ipv4|ipv6|unix|dns):\S*?: ", "", cause)
    cause = re.sub(r"^(tls|ssl) handshake failed( \(\w+\))?: ", "", cause, flags=re.I)  # said before it
    return cause.strip() or details


#: The codes a failed connection comes with (the coordinator's own refusals have others).
_TRANSPORT = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
)


def explain(url: str, code: grpc.StatusCode, details: str) -> tuple[type[ArmadaError], str]:
    """The exception class for a call to ``url`` answered ``code`` with ``details``, and
    what to tell the user, in the words of armada's Rust worker and CLI (``connect.rs``)."""
    text = details.lower()
    authority = _authority(url)
    if code in _TRANSPORT:
        # Something answered that is not a coordinator's gRPC port: an HTTP server...
        if any(s in text for s in ("received http2 header with status", "http status code", "invalid content-type", "invalid compression flag")):
            return WrongServer, f"{PLAIN_HTTP} ({details})"
        # ...or a TLS handshake that failed: not TLS at all, or a certificate not trusted.
        if any(s in text for s in ("handshake failed", "ssl_error", "tsi_", "certificate verify")):
            not_tls = ("wrong_version_number", "wrong version number", "http_request", "packet_length_too_long", "record_too_large")
            hint = NOT_TLS if any(s in text for s in not_tls) else UNTRUSTED
            return WrongServer, f"TLS handshake failed ({_last_cause(details)}); {hint}"
        if "connection refused" in text:
            return Unavailable, (
                f"connection refused: nothing listens at {authority} (is the coordinator running, and is this "
                "the port `armada serve` printed as `armada coordinator listening on`?)"
            )
        if "dns resolution failed" in text or "domain name not found" in text:
            host = authority.rsplit(":", 1)[0]
            return Unavailable, f"unknown host `{host}` ({_last_cause(details)})"
    return _BY_CODE.get(code, ArmadaError), details or code.name


def _broke_off(text: str) -> bool:
    return any(s in text for s in ("connection reset", "socket closed", "broken pipe", "end of file", "connection closed"))


def speaks_tls(url: str, timeout: float = 2.0) -> bool:
    """Whether the server at ``url``'s host and port completes a TLS handshake within
    ``timeout`` seconds (its certificate unchecked: this only asks what it speaks)."""
    host, _, port = _authority(url).rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout) as sock:
            with context.wrap_socket(sock, server_hostname=host.strip("[]")):
                return True
    except (OSError, ValueError):
        return False


def diagnose(url: str, code: grpc.StatusCode, details: str, probe: bool = True) -> tuple[type[ArmadaError], str]:
    """``explain``, and for an ``http://`` URL whose server broke off the connection (a TLS
    port spoken to in the clear, or a coordinator going away), a look at what it speaks
    (with ``probe``): a TLS port is a WrongServer. The client and the worker (until it
    first registers: later, a broken connection is a coordinator going away) decide with
    this."""
    kind, message = explain(url, code, details)
    if probe and kind is Unavailable and url.startswith("http://") and _broke_off(details.lower()) and speaks_tls(url):
        return WrongServer, f"{SPEAKS_TLS} ({_last_cause(details)})"
    return kind, message


def from_rpc_error(url: str, error: grpc.RpcError, invalid: type[InvalidArgument] = InvalidArgument) -> ArmadaError:
    """``error`` (of a call to the coordinator at ``url``) as an ArmadaError of its kind;
    ``invalid`` is the class for INVALID_ARGUMENT (InvalidSweep for a submission)."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    details = (error.details() if callable(getattr(error, "details", None)) else "") or ""
    kind, message = diagnose(url, code, details)
    if kind is InvalidArgument:
        kind = invalid
    if kind in (Unavailable, WrongServer):
        message = f"coordinator {url}: {message}"  # where it tried matters here
    return kind(message, code.name, details)


def field_errors(message: str) -> list[tuple[str, str]]:
    """The coordinator's INVALID_ARGUMENT text as (field, message) pairs: one error is
    ``field: message`` (its message may take several lines: malformed TOML); several are
    ``N errors:`` then ``  field: message`` a line (and ``  ... and K more``). A message
    that names no field is listed under field ``""``."""
    lines = message.strip().splitlines()
    if lines and re.fullmatch(r"\d+ errors:", lines[0].strip()):
        entries = [line.strip() for line in lines[1:] if not re.fullmatch(r"\.\.\. and \d+ more", line.strip())]
    else:
        entries = [message.strip()]
    errors = []
    for entry in entries:
        named = re.match(r"([\w.\[\]-]+): (.*)", entry, re.S)
        errors.append((named.group(1), named.group(2)) if named else ("", entry))
    return errors


__all__ = [
    "ArmadaError",
    "FailedPrecondition",
    "InvalidArgument",
    "InvalidSweep",
    "NotFound",
    "PermissionDenied",
    "Unavailable",
    "WrongServer",
    "diagnose",
    "explain",
    "field_errors",
    "from_rpc_error",
]
