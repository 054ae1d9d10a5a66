//! The coordinator (`armada serve`), in four layers, each importing only those below it:
//! [`state`] (the pure state machines and their types), [`durable`] (the SQLite store,
//! spools, the committer of trajectory parts, live summaries), [`scheduler`] (the actor
//! that owns the state, its requests and its handle) and [`surface`] (the gRPC services,
//! the dashboard, access). Results are the Parquet shards and summaries of
//! [`crate::results`], under `DATA/<sweep>/`.

pub mod durable;
pub mod scheduler;
pub mod state;
pub mod surface;

use durable::{catalog, store};
pub use scheduler::handle::SchedulerHandle;
pub use scheduler::SchedulerConfig;
use surface::{access, credentials, dashboard, heartbeats, service};

use anyhow::Context;
use armada_core::Registry;
use armada_proto::v1 as pb;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tonic::transport::{Identity, Server, ServerTlsConfig};

/// How a coordinator serves.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Where to listen; port 0 picks a free port (reported to `on_listening`).
    pub listen: SocketAddr,
    /// The store (`armada.sqlite`) and the results (`<sweep>/...`).
    pub data: PathBuf,
    /// Required bearer token, if any: it may do everything (see [`access`]).
    pub token: Option<String>,
    /// More tokens, each with its role (a `--tokens` file).
    pub tokens: Vec<access::TokenEntry>,
    /// PEM certificate chain and private key: serve TLS.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub scheduler: SchedulerConfig,
    /// The most jobs a submitted sweep may have.
    pub max_jobs_per_sweep: usize,
    /// The most declarations one token keeps (an admin's aside).
    pub declarations_per_token: usize,
    /// Where the dashboard and `/metrics` listen (HTTP, or HTTPS with `tls`), if anywhere;
    /// port 0 picks one.
    pub dashboard: Option<SocketAddr>,
}

/// Where a coordinator listens, once it does.
#[derive(Clone, Copy, Debug)]
pub struct Listening {
    pub grpc: SocketAddr,
    pub dashboard: Option<SocketAddr>,
}

/// Serve until `shutdown` resolves. `on_listening` gets the bound addresses once the
/// sockets listen (the CLI prints them; tests and `armada run` read them).
pub async fn serve(
    config: ServeConfig,
    registry: Arc<Registry>,
    on_listening: impl FnOnce(Listening),
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let store = store::Store::open(&config.data)?;
    let catalog = Arc::new(catalog::Catalog::new(Registry::clone(&registry)).with_quota(config.declarations_per_token));
    let scheduler = scheduler::Scheduler::start(catalog.clone(), store, config.data.clone(), config.scheduler)?;
    let coordinator = service::Coordinator {
        scheduler: scheduler.clone(),
        catalog,
        max_jobs: config.max_jobs_per_sweep,
        sealer: Arc::new(credentials::Sealer::new()),
    };
    let tokens = Arc::new(access::Tokens::new(config.token.as_deref(), config.tokens.clone()));
    let sweeps_gate = access::Gate::new(tokens.clone(), access::Service::Sweeps);
    let workers_gate = access::Gate::new(tokens.clone(), access::Service::Workers);

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<pb::sweeps_server::SweepsServer<service::Coordinator>>().await;
    health.set_serving::<pb::workers_server::WorkersServer<service::Coordinator>>().await;
    // Both reflection versions: grpcurl speaks v1, many client libraries still v1alpha.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection().build_v1().context("building the reflection service")?;
    let reflection_v1alpha = reflection().build_v1alpha().context("building the reflection service")?;

    let tls = match &config.tls {
        Some((cert, key)) => {
            let cert =
                std::fs::read(cert).with_context(|| format!("reading the TLS certificate {}", cert.display()))?;
            let key = std::fs::read(key).with_context(|| format!("reading the TLS key {}", key.display()))?;
            Some(ServerTlsConfig::new().identity(Identity::from_pem(cert, key)))
        }
        None => None,
    };
    let mut server = Server::builder();
    if let Some(tls) = &tls {
        server = server.tls_config(tls.clone()).context("configuring TLS")?;
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let dashboard_listener = match config.dashboard {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening on {addr} for the dashboard"))?,
        ),
        None => None,
    };
    on_listening(Listening {
        grpc: listener.local_addr()?,
        dashboard: dashboard_listener.as_ref().map(|l| l.local_addr()).transpose()?,
    });
    // The dashboard stops with the gRPC server: it watches the same shutdown.
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = stopping.send(true);
    };
    let dashboard_tls = match (&config.tls, &dashboard_listener) {
        (Some((cert, key)), Some(_)) => Some(dashboard::tls::acceptor(cert, key)?),
        _ => None,
    };
    // Last of what may fail, so that nothing started holds the scheduler on an error.
    // Connections are accepted on the heartbeat thread, which keeps heartbeat channels and
    // hands the others here.
    let (incoming, heartbeat_thread) = heartbeats::start(listener, coordinator.clone(), workers_gate.clone(), tls)
        .context("starting the heartbeat thread")?;
    let dashboard = dashboard_listener.map(|listener| {
        let mut stopped = stopped.clone();
        let until = async move {
            let _ = stopped.wait_for(|&s| s).await;
        };
        let (data, tokens) = (config.data.clone(), tokens.clone());
        tokio::spawn(dashboard::serve(listener, scheduler, data, tokens, dashboard_tls, until))
    });
    let served = server
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(pb::sweeps_server::SweepsServer::with_interceptor(coordinator.clone(), sweeps_gate))
        .add_service(pb::workers_server::WorkersServer::with_interceptor(coordinator, workers_gate))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    heartbeat_thread.stop().await;
    served.context("serving gRPC")?;
    if let Some(dashboard) = dashboard {
        // A request in flight may hold a graceful end: give it a moment, then cut it, so
        // that no handle keeps the scheduler (and the store's lock) alive.
        let abort = dashboard.abort_handle();
        if tokio::time::timeout(std::time::Duration::from_secs(1), dashboard).await.is_err() {
            abort.abort();
        }
    }
    Ok(())
}
