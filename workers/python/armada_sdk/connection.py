"""Reaching a coordinator: its URL to a gRPC channel (TLS for https://), and the token."""

from __future__ import annotations

import pathlib
from typing import Optional

import grpc

from ._proto import service_pb2_grpc

#: Replies as large as the Rust CLI accepts.
MAX_MESSAGE = 64 << 20


def channel(url: str, tls_ca: Optional[str] = None) -> grpc.Channel:
    """A channel to ``http://HOST:PORT`` or ``https://HOST:PORT`` (with ``tls_ca``, the PEM
    certificate that signed the coordinator's, or the system's roots)."""
    options = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.keepalive_time_ms", 5000)]
    if url.startswith("http://"):
        return grpc.insecure_channel(url.removeprefix("http://"), options=options)
    if url.startswith("https://"):
        roots = pathlib.Path(tls_ca).read_bytes() if tls_ca else None
        return grpc.secure_channel(url.removeprefix("https://"), grpc.ssl_channel_credentials(roots), options=options)
    raise ValueError(f"{url!r}: give the coordinator's URL with its scheme, e.g. http://127.0.0.1:7070")


def metadata(token: Optional[str]) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries ``token`` (none without one)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def stubs(ch: grpc.Channel) -> tuple[service_pb2_grpc.SweepsStub, service_pb2_grpc.WorkersStub]:
    return service_pb2_grpc.SweepsStub(ch), service_pb2_grpc.WorkersStub(ch)
