"""A coordinator's errors as exceptions of their kind, and a wrong address told apart
from a coordinator out of reach, in the Rust worker's words."""

import socket
import ssl
import threading

import grpc
import pytest

from armada_sdk import errors
from armada_sdk.connection import check_url
from conftest import TLS_FIXTURES, Answer

URL = "http://127.0.0.1:7070"


def test_one_invalid_field_is_named():
    e = errors.from_rpc_error(URL, Answer(grpc.StatusCode.INVALID_ARGUMENT, "seeds: give a count of at least 1"), errors.InvalidSweep)
    assert isinstance(e, errors.InvalidSweep) and isinstance(e, errors.InvalidArgument) and isinstance(e, ValueError)
    assert e.errors == [("seeds", "give a count of at least 1")]
    assert (str(e), e.code) == ("seeds: give a count of at least 1", "INVALID_ARGUMENT")


def test_several_invalid_fields_are_listed_one_a_line():
    text = "3 errors:\n  horizon: 0 is below 1\n  algorithms[1].params.beta: 9 is above 5\n  benchmarks[0].name: unknown benchmark `x`\n  ... and 2 more"
    assert errors.field_errors(text) == [
        ("horizon", "0 is below 1"),
        ("algorithms[1].params.beta", "9 is above 5"),
        ("benchmarks[0].name", "unknown benchmark `x`"),
    ]


def test_an_error_naming_no_field_is_kept_whole():
    text = "malformed TOML: TOML parse error at line 1, column 3\n  |\n1 | x =\n  |    ^\nstring values must be quoted"
    assert errors.field_errors(text) == [("", text)]


@pytest.mark.parametrize(
    "code, kind",
    [
        (grpc.StatusCode.NOT_FOUND, errors.NotFound),
        (grpc.StatusCode.PERMISSION_DENIED, errors.PermissionDenied),
        (grpc.StatusCode.UNAUTHENTICATED, errors.PermissionDenied),
        (grpc.StatusCode.FAILED_PRECONDITION, errors.FailedPrecondition),
        (grpc.StatusCode.DEADLINE_EXCEEDED, errors.Unavailable),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, errors.ArmadaError),
    ],
)
def test_each_code_has_its_kind(code, kind):
    # A sweep named `tls-handshake-404` is no TLS or HTTP trouble.
    e = errors.from_rpc_error(URL, Answer(code, "sweep `tls-handshake-404`: no such sweep"))
    assert type(e) is kind and str(e).endswith("sweep `tls-handshake-404`: no such sweep")
    assert (e.code, e.details) == (code.name, "sweep `tls-handshake-404`: no such sweep")


def test_not_found_is_a_lookup_error():
    assert issubclass(errors.NotFound, LookupError)


@pytest.mark.parametrize(
    "url, problem",
    [
        ("127.0.0.1:7070", "coordinator URL `127.0.0.1:7070` has no scheme: write http://127.0.0.1:7070 (or https://127.0.0.1:7070 with --tls-ca)"),
        ("ftp://h:1", "coordinator URL `ftp://h:1`: the scheme must be http:// or https://, not ftp://"),
        ("http://", "coordinator URL `http://` has no host"),
        ("http://:7070", "coordinator URL `http://:7070` has no host"),
    ],
)
def test_urls_that_cannot_work_are_refused_before_dialling(url, problem):
    with pytest.raises(ValueError) as e:
        check_url(url)
    assert str(e.value) == problem
    check_url("https://coord.example:7070")


# What grpc's core says when a call fails to connect (as this SDK's grpcio words it).
REFUSED = "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Failed to connect to remote host: Connection refused"
NOT_TLS = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Tls handshake failed (TSI_PROTOCOL_FAILURE): "
    "SSL_ERROR_SSL: error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER: Invalid certificate verification context: OK"
)
UNTRUSTED = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7070: Ssl handshake failed (TSI_PROTOCOL_FAILURE): "
    "SSL_ERROR_SSL: error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"
)
RESET = "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7070: recvmsg:Connection reset by peer (104)"


@pytest.mark.parametrize(
    "code, details, kind, message",
    [
        (grpc.StatusCode.UNIMPLEMENTED, "Received http2 header with status: 404", errors.WrongServer,
         "the server answered plain HTTP, not gRPC: is this the dashboard's port? The coordinator's is the one "
         "`armada serve` printed as `armada coordinator listening on` (7070 by default) (Received http2 header with status: 404)"),
        (grpc.StatusCode.UNAVAILABLE, NOT_TLS, errors.WrongServer,
         "TLS handshake failed (SSL_ERROR_SSL: error:100000f7:SSL routines:"
         "OPENSSL_internal:WRONG_VERSION_NUMBER: Invalid certificate verification context: OK); "
         "the server did not answer TLS: does it serve plain http://?"),
        (grpc.StatusCode.UNAVAILABLE, UNTRUSTED, errors.WrongServer,
         "TLS handshake failed (SSL_ERROR_SSL: error:1000007d:SSL routines:"
         "OPENSSL_internal:CERTIFICATE_VERIFY_FAILED); is --tls-ca the CA that signed the coordinator's certificate, "
         "and is the URL's host a name in it?"),
        (grpc.StatusCode.UNAVAILABLE, REFUSED, errors.Unavailable,
         "connection refused: nothing listens at 127.0.0.1:7070 (is the coordinator running, and is this the port "
         "`armada serve` printed as `armada coordinator listening on`?)"),
        (grpc.StatusCode.UNAVAILABLE, "DNS resolution failed for nowhere.invalid:7070: C-ares status is not ARES_SUCCESS "
         "qtype=A name=nowhere.invalid is_balancer=0: Domain name not found", errors.Unavailable,
         "unknown host `nowhere.invalid` (DNS resolution failed for nowhere.invalid:7070: C-ares status is not ARES_SUCCESS "
         "qtype=A name=nowhere.invalid is_balancer=0: Domain name not found)"),
        # A coordinator going away, or a TLS port dialled in the clear: `diagnose` looks.
        (grpc.StatusCode.UNAVAILABLE, RESET, errors.Unavailable, RESET),
    ],
)
def test_a_failed_call_says_why_in_the_rust_workers_words(code, details, kind, message):
    url = "https://127.0.0.1:7070" if "SSL" in details else "http://nowhere.invalid:7070" if "DNS" in details else URL
    assert errors.explain(url, code, details) == (kind, message)


def test_a_tls_port_dialled_in_the_clear_is_a_wrong_server():
    # A TLS server that breaks off a client speaking plain HTTP/2 to it, as a coordinator
    # serving TLS does.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS_FIXTURES / "cert.pem", TLS_FIXTURES / "key.pem")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve():
        for _ in range(2):  # the call, then the probe
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(connection, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                connection.close()

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        kind, message = errors.diagnose(url, grpc.StatusCode.UNAVAILABLE, RESET)
        assert kind is errors.WrongServer and message.startswith("the server speaks TLS, not plain HTTP/2: use https:// with --tls-ca")
        assert errors.diagnose(url, grpc.StatusCode.UNAVAILABLE, RESET, probe=False)[0] is errors.Unavailable
    finally:
        listener.close()
