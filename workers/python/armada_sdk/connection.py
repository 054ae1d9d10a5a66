"""Reaching a coordinator: its URL to a gRPC channel (TLS for https://), and the token."""

from __future__ import annotations

import pathlib
from typing import Optional

import grpc

from ._proto import service_pb2_grpc

#: Replies as large as the Rust CLI accepts.
MAX_MESSAGE = 64 << 20


def check_url(url: str) -> None:
    """Refuse a coordinator URL that cannot work (ValueError), in the Rust worker's words:
    ``http://`` or ``https://``, then a host."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"coordinator URL `{url}` has no scheme: write http://{url} (or https://{url} with --tls-ca)")
    if scheme not in ("http", "https"):
        raise ValueError(f"coordinator URL `{url}`: the scheme must be http:// or https://, not {scheme}://")
    if not rest or rest.startswith(("/", ":")):
        raise ValueError(f"coordinator URL `{url}` has no host")


def channel(url: str, tls_ca: Optional[str] = None) -> grpc.Channel:
    """A channel to ``http://HOST:PORT`` or ``https://HOST:PORT`` (with ``tls_ca``, the PEM
    certificate that signed the coordinator's, or the system's roots)."""
    check_url(url)
    options = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.keepalive_time_ms", 5000)]
    target = url.split("://", 1)[1].rstrip("/")
    if url.startswith("http://"):
        return grpc.insecure_channel(target, options=options)
    roots = pathlib.Path(tls_ca).read_bytes() if tls_ca else None
    return grpc.secure_channel(target, grpc.ssl_channel_credentials(roots), options=options)


def metadata(token: Optional[str]) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token`` (none without one)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def stubs(ch: grpc.Channel) -> tuple[service_pb2_grpc.SweepsStub, service_pb2_grpc.WorkersStub]:
    """The coordinator's two services on ``ch``: for clients, and for workers."""
    return service_pb2_grpc.SweepsStub(ch), service_pb2_grpc.WorkersStub(ch)
