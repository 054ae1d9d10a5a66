//! Dialing the coordinator: plain HTTP/2 for `http://` URLs, TLS (rustls) for `https://`
//! ones, trusting the given CA certificate.

use hyper_util::rt::TokioIo;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tonic::codegen::http::Uri;
use tonic::codegen::Service;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

/// How long dialling may take before it counts as no answer.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often an HTTP/2 ping goes to the coordinator, and how long its answer may take.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Check a coordinator URL's form before it is dialled: `http://` or `https://`, then a host.
pub fn check_url(url: &str) -> anyhow::Result<()> {
    match url.split_once("://") {
        None => {
            anyhow::bail!("coordinator URL `{url}` has no scheme: write http://{url} (or https://{url} with --tls-ca)")
        }
        Some((scheme, _)) if scheme != "http" && scheme != "https" => {
            anyhow::bail!("coordinator URL `{url}`: the scheme must be http:// or https://, not {scheme}://")
        }
        Some((_, rest)) if rest.is_empty() || rest.starts_with(['/', ':']) => {
            anyhow::bail!("coordinator URL `{url}` has no host")
        }
        Some(_) => Ok(()),
    }
}

/// An endpoint for `url`; `ca` is the PEM certificate that signed the coordinator's.
pub fn endpoint(url: &str, ca: Option<&Path>) -> anyhow::Result<Endpoint> {
    check_url(url)?;
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| anyhow::anyhow!("coordinator URL `{url}`: {e}"))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        // A connection that went silent (a partition, a coordinator host that died) is
        // noticed within about KEEPALIVE_INTERVAL + KEEPALIVE_TIMEOUT, even by a client that
        // only listens (a watch), and the next call dials again.
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    if url.starts_with("https://") {
        let mut tls = ClientTlsConfig::new();
        match ca {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
                tls = tls.ca_certificate(Certificate::from_pem(pem));
            }
            None => anyhow::bail!("an https:// coordinator needs --tls-ca (the PEM certificate that signed it)"),
        }
        endpoint = endpoint.tls_config(tls)?;
    }
    Ok(endpoint)
}

/// The bytes a heartbeat connection opens with, before its TLS or HTTP/2 begins (as the
/// PROXY protocol's header does). The coordinator serves such a connection on a thread of
/// its own, so that a heartbeat is answered while a round of commits and leases keeps its
/// other threads busy. The first byte decides: HTTP/2 opens with `P`, TLS with 0x16.
pub const HEARTBEAT_PREFIX: &[u8] = b"armada heartbeats\n";

/// A channel for heartbeats, on a connection of its own that opens with
/// [`HEARTBEAT_PREFIX`]; it dials at its first call. A coordinator that does not know the
/// prefix breaks the connection off, and the caller heartbeats on its other channel.
pub fn heartbeat_channel(url: &str, ca: Option<&Path>) -> anyhow::Result<Channel> {
    Ok(endpoint(url, ca)?.connect_with_connector_lazy(Prefixed))
}

/// Dials TCP and writes [`HEARTBEAT_PREFIX`]; tonic puts TLS over it for `https://`.
#[derive(Clone, Copy, Debug)]
struct Prefixed;

impl Service<Uri> for Prefixed {
    type Response = TokioIo<TcpStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(async move {
            let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_string();
            let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
            let mut stream = TcpStream::connect((host.as_str(), port)).await?;
            stream.set_nodelay(true)?;
            stream.write_all(HEARTBEAT_PREFIX).await?;
            Ok(TokioIo::new(stream))
        })
    }
}

/// Connect now (an error if the coordinator is not there, saying why).
pub async fn connect(url: &str, ca: Option<&Path>) -> anyhow::Result<Channel> {
    endpoint(url, ca)?.connect().await.map_err(|e| anyhow::anyhow!("connecting to {url}: {}", explain(url, &e)))
}

/// Why dialling `url` failed, in words: tonic says only "transport error"; the cause is
/// at the bottom of its chain of sources (refused, unknown host, TLS, a timeout).
pub fn explain(url: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = vec![error.to_string()];
    let mut io_kind = None;
    let mut source = error.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            io_kind.get_or_insert(io.kind());
        }
        chain.push(e.to_string());
        source = e.source();
    }
    let text = chain.join(": ").to_lowercase();
    let authority = url.split_once("://").map_or(url, |(_, rest)| rest).trim_end_matches('/');
    let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
    let cause = chain.iter().rev().find(|m| !m.is_empty() && *m != "transport error").cloned();
    let cause = cause.unwrap_or_else(|| "transport error".into());
    if io_kind == Some(std::io::ErrorKind::ConnectionRefused) || text.contains("connection refused") {
        format!(
            "connection refused: nothing listens at {authority} (is the coordinator running, and is this the port \
             `armada serve` printed as `armada coordinator listening on`?)"
        )
    } else if text.contains("dns error") || text.contains("failed to lookup address") {
        format!("unknown host `{host}` ({cause})")
    } else if text.contains("tls") || text.contains("certificate") || text.contains("corrupt message") {
        let hint = if text.contains("corrupt message") || text.contains("invalidcontenttype") {
            "the server did not answer TLS: does it serve plain http://?"
        } else {
            "is --tls-ca the CA that signed the coordinator's certificate, and is the URL's host a name in it?"
        };
        format!("TLS handshake failed ({cause}); {hint}")
    } else if io_kind == Some(std::io::ErrorKind::TimedOut) || text.contains("timed out") || text.contains("elapsed") {
        format!("no answer from {authority} within {CONNECT_TIMEOUT:?} (a firewall, or a host that is down?)")
    } else {
        cause
    }
}

/// Whether a plain HTTP server answered the call (the dashboard's port): unlike a broken
/// connection, which a restarting coordinator also gives, no retry mends that.
pub fn answered_plain_http(status: &tonic::Status) -> bool {
    let message = status.message();
    message.contains("invalid compression flag")
        || message.contains("HTTP status code")
        || message.contains("status: 404")
        || message.contains("invalid content-type")
}

/// What was probably dialled, for a gRPC call answered by something that is not this
/// coordinator's gRPC: a plain HTTP server (the dashboard's port; tonic reports a protocol
/// error quoting the HTTP status), or a TLS port spoken to in the clear (the connection
/// breaks, as an HTTP/2 error or a bare "transport error").
pub fn misdial_hint(status: &tonic::Status) -> Option<&'static str> {
    let message = status.message();
    if answered_plain_http(status) {
        Some(
            "the server answered plain HTTP, not gRPC: is this the dashboard's port? The coordinator's is the one \
             `armada serve` printed as `armada coordinator listening on` (7070 by default)",
        )
    } else if message.contains("h2 protocol error") || message.contains("http2 error") || message == "transport error" {
        Some("the server broke off the connection: if the coordinator serves TLS, use https:// with --tls-ca")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// An error with a message and a source, as tonic's and hyper's nest theirs.
    #[derive(Debug)]
    struct Nested(&'static str, Option<Box<dyn std::error::Error + Send + Sync>>);

    impl std::fmt::Display for Nested {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Nested {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    fn transport(cause: impl std::error::Error + Send + Sync + 'static) -> Nested {
        Nested("transport error", Some(Box::new(cause)))
    }

    /// Each cause at the bottom of a "transport error" is named, with the address: the
    /// branches a test on loopback cannot reach (an unknown host, a silent one) included.
    #[test]
    fn a_failed_dial_says_why() {
        let refused = transport(io::Error::from(io::ErrorKind::ConnectionRefused));
        assert!(
            explain("http://127.0.0.1:9", &refused).starts_with("connection refused: nothing listens at 127.0.0.1:9 (")
        );
        let lookup = io::Error::other("failed to lookup address information: Name or service not known");
        let dns = transport(Nested("dns error", Some(Box::new(lookup))));
        assert_eq!(
            explain("http://nowhere.invalid:7070", &dns),
            "unknown host `nowhere.invalid` (failed to lookup address information: Name or service not known)"
        );
        let silent = transport(Nested("timeout: deadline has elapsed", None));
        assert_eq!(
            explain("http://10.1.2.3:7070/", &silent),
            "no answer from 10.1.2.3:7070 within 5s (a firewall, or a host that is down?)"
        );
        let untrusted =
            transport(io::Error::new(io::ErrorKind::InvalidData, "invalid peer certificate: UnknownIssuer"));
        assert!(explain("https://h:7070", &untrusted)
            .starts_with("TLS handshake failed (invalid peer certificate: UnknownIssuer); is --tls-ca the CA"));
        let plain = transport(io::Error::new(
            io::ErrorKind::InvalidData,
            "received corrupt message of type InvalidContentType",
        ));
        assert!(
            explain("https://h:7070", &plain).ends_with("the server did not answer TLS: does it serve plain http://?")
        );
        assert_eq!(explain("http://h:1", &transport(Nested("something else", None))), "something else");
    }

    /// The prefix's first byte is neither HTTP/2's (its preface opens with `P`) nor TLS's
    /// (a handshake record, 0x16): the coordinator sorts connections by it.
    #[test]
    fn the_heartbeat_prefix_opens_unlike_http2_and_tls() {
        assert!(HEARTBEAT_PREFIX[0] != b'P' && HEARTBEAT_PREFIX[0] != 0x16);
    }

    /// The protocol's file tells workers written elsewhere these very bytes.
    #[test]
    fn the_proto_documents_the_heartbeat_prefix() {
        let proto = include_str!("../armada/v1/service.proto");
        let text = std::str::from_utf8(HEARTBEAT_PREFIX).unwrap().replace('\n', "\\n");
        let said = format!("\"{text}\" ({}, the newline included)", HEARTBEAT_PREFIX.len());
        assert!(proto.contains(&said), "service.proto does not say {said}");
    }

    #[test]
    fn odd_answers_hint_at_what_was_dialled() {
        let dashboard = tonic::Status::internal(
            "protocol error: received message with invalid compression flag: 110 (valid flags are 0 and 1) while \
             receiving response with status: 404 Not Found",
        );
        assert!(misdial_hint(&dashboard).unwrap().contains("is this the dashboard's port?"));
        let unimplemented =
            tonic::Status::unimplemented("grpc-status header missing, mapped from HTTP status code 404");
        assert!(misdial_hint(&unimplemented).unwrap().contains("dashboard's port"));
        assert!(misdial_hint(&tonic::Status::unknown("transport error")).unwrap().contains("use https://"));
        assert_eq!(misdial_hint(&tonic::Status::not_found("no sweep `x`")), None);
    }

    #[test]
    fn urls_that_cannot_work_are_refused_before_dialling() {
        let err = |url: &str| check_url(url).unwrap_err().to_string();
        assert_eq!(
            err("127.0.0.1:7070"),
            "coordinator URL `127.0.0.1:7070` has no scheme: write http://127.0.0.1:7070 (or https://127.0.0.1:7070 with --tls-ca)"
        );
        assert_eq!(err("ftp://h:1"), "coordinator URL `ftp://h:1`: the scheme must be http:// or https://, not ftp://");
        assert_eq!(err("http://"), "coordinator URL `http://` has no host");
        assert_eq!(err("http://:7070"), "coordinator URL `http://:7070` has no host");
        assert!(check_url("http://127.0.0.1:7070").is_ok() && check_url("https://coord.example:7070").is_ok());
    }
}
