//! Dialing the coordinator: plain HTTP/2 for `http://` URLs, TLS (rustls) for `https://`
//! ones, trusting the given CA certificate.

use std::path::Path;
use std::time::Duration;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

/// How often an HTTP/2 ping goes to the coordinator, and how long its answer may take.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// An endpoint for `url`; `ca` is the PEM certificate that signed the coordinator's.
pub fn endpoint(url: &str, ca: Option<&Path>) -> anyhow::Result<Endpoint> {
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| anyhow::anyhow!("coordinator URL `{url}`: {e}"))?
        .connect_timeout(Duration::from_secs(5))
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

/// Connect now (an error if the coordinator is not there).
pub async fn connect(url: &str, ca: Option<&Path>) -> anyhow::Result<Channel> {
    endpoint(url, ca)?.connect().await.map_err(|e| anyhow::anyhow!("connecting to {url}: {e}"))
}
