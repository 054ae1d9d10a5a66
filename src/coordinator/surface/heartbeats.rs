//! Heartbeats on a thread of their own.
//!
//! When a round of jobs ends together, thousands of commits and leases are queued on the
//! coordinator's runtime, and a heartbeat that came on the same threads waited behind them
//! (a p99 of half a second with 2,000 sessions of 32 slots). So the listener is accepted
//! on a thread with a runtime of its own: a connection that opens with
//! [`HEARTBEAT_PREFIX`] (a worker's heartbeat channel) is served there, every other
//! connection is handed, untouched, to the main server. The operating system's scheduler
//! then runs a heartbeat as soon as it comes, whatever the main runtime has queued; the
//! scheduler actor answers it within [`crate::coordinator::scheduler::handle::HEARTBEAT_ANSWER`] or
//! applies it later from the time it came (see `SchedulerHandle::heartbeat`).

use super::access::Gate;
use super::service::Coordinator;
use armada_proto::connect::HEARTBEAT_PREFIX;
use armada_proto::v1 as pb;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::{Server, ServerTlsConfig};
use tracing::warn;

/// How long a new connection may take to send its first bytes (its prefix) before it is
/// handed to the main server as it is: gRPC clients send theirs at once.
const OPENING_WAIT: Duration = Duration::from_secs(10);

/// The thread that accepts connections and serves heartbeat channels.
pub struct HeartbeatThread {
    stop: watch::Sender<bool>,
    thread: std::thread::JoinHandle<()>,
}

/// Start accepting on `listener`: heartbeat channels are served by the Workers service on
/// a thread of their own, and the other connections come out of the stream returned, for
/// the main server.
pub fn start(
    listener: TcpListener,
    coordinator: Coordinator,
    gate: Gate,
    tls: Option<ServerTlsConfig>,
) -> anyhow::Result<(impl Stream<Item = std::io::Result<TcpStream>>, HeartbeatThread)> {
    let listener = listener.into_std()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (to_main, for_main) = mpsc::unbounded_channel();
    let (stop, stopped) = watch::channel(false);
    let mut server = Server::builder();
    if let Some(tls) = tls {
        server = server.tls_config(tls)?;
    }
    let workers = pb::workers_server::WorkersServer::with_interceptor(coordinator, gate);
    let thread = std::thread::Builder::new().name("armada-heartbeats".into()).spawn(move || {
        runtime.block_on(async move {
            let listener = match TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(e) => return warn!(error = %e, "the heartbeat thread could not take the listener"),
            };
            let (to_heartbeats, heartbeats) = mpsc::unbounded_channel();
            let mut until = stopped.clone();
            let serving = server.add_service(workers).serve_with_incoming_shutdown(
                UnboundedReceiverStream::new(heartbeats).map(Ok::<TcpStream, std::io::Error>),
                async move {
                    let _ = until.wait_for(|&s| s).await;
                },
            );
            tokio::select! {
                () = accept(listener, to_main, to_heartbeats) => {}
                served = serving => {
                    if let Err(e) = served {
                        warn!(error = %e, "serving heartbeats");
                    }
                }
            }
        })
    })?;
    // Back in the main runtime: each connection is registered with its reactor again.
    let for_main = UnboundedReceiverStream::new(for_main).map(TcpStream::from_std);
    Ok((for_main, HeartbeatThread { stop, thread }))
}

impl HeartbeatThread {
    /// Stop serving and wait for the thread to end (with it, its handle on the scheduler).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

async fn accept(
    listener: TcpListener,
    to_main: mpsc::UnboundedSender<std::net::TcpStream>,
    to_heartbeats: mpsc::UnboundedSender<TcpStream>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(sort(stream, to_main.clone(), to_heartbeats.clone()));
            }
            Err(e) => {
                // Out of file descriptors, most likely: wait rather than spin.
                warn!(error = %e, "accepting a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Hand a new connection to the server it is for, by its first bytes.
async fn sort(
    mut stream: TcpStream,
    to_main: mpsc::UnboundedSender<std::net::TcpStream>,
    to_heartbeats: mpsc::UnboundedSender<TcpStream>,
) {
    // Without TCP_NODELAY, Nagle's algorithm meets delayed ACKs and small replies (a lease,
    // a commit, a heartbeat) wait ~40 ms.
    let _ = stream.set_nodelay(true);
    let mut first = [0u8; 1];
    match tokio::time::timeout(OPENING_WAIT, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == HEARTBEAT_PREFIX[0] => {
            let mut prefix = [0u8; HEARTBEAT_PREFIX.len()];
            match tokio::time::timeout(OPENING_WAIT, stream.read_exact(&mut prefix)).await {
                Ok(Ok(_)) if prefix == HEARTBEAT_PREFIX => {
                    let _ = to_heartbeats.send(stream);
                }
                // Neither HTTP/2, nor TLS, nor a heartbeat channel: closed.
                _ => {}
            }
        }
        // Closed, or broken, before a byte came.
        Ok(Ok(0) | Err(_)) => {}
        // Anything else, or silence, is the main server's to answer as it always did.
        Ok(Ok(_)) | Err(_) => {
            if let Ok(stream) = stream.into_std() {
                let _ = to_main.send(stream);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::{serve, SchedulerConfig, ServeConfig};
    use armada_proto::connect::{connect, heartbeat_channel};
    use armada_proto::heartbeats::Heartbeats;
    use pb::sweeps_client::SweepsClient;
    use pb::workers_client::WorkersClient;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Instant;

    /// A coordinator served on `runtime` until `stop` is called.
    struct Served {
        at: SocketAddr,
        stop: tokio::sync::oneshot::Sender<()>,
        served: tokio::task::JoinHandle<anyhow::Result<()>>,
        _dir: tempfile::TempDir,
    }

    fn coordinator(runtime: &tokio::runtime::Runtime, scheduler: SchedulerConfig) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let config = ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            data: dir.path().to_path_buf(),
            token: None,
            tokens: vec![],
            tls: None,
            max_jobs_per_sweep: 10,
            declarations_per_token: 1,
            dashboard: None,
            scheduler,
        };
        let (at_tx, at_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served =
            runtime.spawn(serve(config, Arc::new(crate::registry()), move |at| at_tx.send(at.grpc).unwrap(), async {
                let _ = stopped.await;
            }));
        Served { at: at_rx.recv().unwrap(), stop, served, _dir: dir }
    }

    impl Served {
        fn stop(self, runtime: &tokio::runtime::Runtime) {
            self.stop.send(()).unwrap();
            runtime.block_on(self.served).unwrap().unwrap();
        }
    }

    /// A registered session of one slot.
    async fn register(workers: &mut WorkersClient<tonic::transport::Channel>) -> String {
        let request = pb::RegisterRequest {
            name: "w".into(),
            slots: 1,
            version: env!("CARGO_PKG_VERSION").into(),
            families: vec!["testkit".into()],
            build: crate::registry().digest(),
            ..Default::default()
        };
        workers.register(request).await.unwrap().into_inner().session
    }

    /// A session of the coordinator at `url` holding the one job of a sweep it leased,
    /// with its clients (its heartbeat channel among them).
    struct Leased {
        workers: WorkersClient<tonic::transport::Channel>,
        own: WorkersClient<tonic::transport::Channel>,
        sweeps: SweepsClient<tonic::transport::Channel>,
        session: String,
        sweep_id: String,
        id: u64,
    }

    async fn leased(url: &str) -> Leased {
        let mut workers = WorkersClient::new(connect(url, None).await.unwrap());
        let own = WorkersClient::new(heartbeat_channel(url, None).unwrap());
        let mut sweeps = SweepsClient::new(connect(url, None).await.unwrap());
        let session = register(&mut workers).await;
        let sweep = "name = \"one\"\nfamily = \"testkit\"\nseeds = 1\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n";
        let submit = pb::SubmitSweepRequest {
            sweep: Some(pb::submit_sweep_request::Sweep::Toml(sweep.into())),
            default_name: String::new(),
        };
        let sweep_id = sweeps.submit_sweep(submit).await.unwrap().into_inner().sweep_id;
        let lease = pb::LeaseRequest { session: session.clone(), max_jobs: 1, wait_ms: 1000 };
        let id = workers.lease(lease).await.unwrap().into_inner().leases[0].attempt_id;
        Leased { workers, own, sweeps, session, sweep_id, id }
    }

    /// A round of commits keeps the main runtime busy; here its only thread is blocked
    /// outright. A heartbeat on its own connection is answered all the same, and the
    /// scheduler applies it when it can, from when it came: the lease it renewed outlives
    /// the block, which its earlier deadline did not. The same heartbeat on the session's
    /// other connection waits the block out.
    #[test]
    fn a_heartbeat_on_its_own_connection_is_answered_while_the_main_runtime_is_blocked() {
        let main = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let ttl = Duration::from_secs(2);
        let served = coordinator(&main, SchedulerConfig { lease_ttl: ttl, ..SchedulerConfig::default() });
        let url = format!("http://{}", served.at);
        let block = |main: &tokio::runtime::Runtime, how_long: Duration| {
            main.spawn(async move { std::thread::sleep(how_long) });
        };
        let client = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        client.block_on(async {
            let Leased { workers, mut own, mut sweeps, session, sweep_id, id } = leased(&url).await;
            let heartbeat =
                pb::HeartbeatRequest { session: session.clone(), attempt_ids: vec![id], started_ids: vec![id] };

            // Renewed now, until `ttl` from now; then the main runtime stops for longer.
            own.heartbeat(heartbeat.clone()).await.unwrap();
            let renewed = Instant::now();
            block(&main, ttl + ttl / 4);
            tokio::time::sleep(ttl * 3 / 4).await;
            let asked = Instant::now();
            let answer = own.heartbeat(heartbeat.clone()).await.unwrap().into_inner();
            let took = asked.elapsed();
            assert!(took < Duration::from_millis(500), "answered in {took:?}, with the main runtime blocked");
            assert!(answer.abandon.is_empty());
            // Past the first deadline, and past the block: the job still runs.
            tokio::time::sleep_until((renewed + ttl + ttl / 2).into()).await;
            let get = pb::GetSweepRequest { sweep_id, ..Default::default() };
            let status = sweeps.get_sweep(get).await.unwrap().into_inner();
            assert_eq!((status.n_running, status.n_queued), (1, 0), "{status:?}");

            // The same heartbeat on the other connection waits for the main runtime.
            block(&main, Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(100)).await;
            let (mut other, on_other) = (workers.clone(), heartbeat.clone());
            let shared = tokio::spawn(async move {
                let asked = Instant::now();
                other.heartbeat(on_other).await.unwrap();
                asked.elapsed()
            });
            let asked = Instant::now();
            own.heartbeat(heartbeat).await.unwrap();
            let took = asked.elapsed();
            let shared_took = shared.await.unwrap();
            assert!(took < Duration::from_millis(500), "{took:?}");
            assert!(shared_took > Duration::from_millis(600), "{shared_took:?}");
        });
        // Its connections close with it: the server's graceful end waits for them.
        drop(client);
        served.stop(&main);
    }

    /// What a heartbeat answered too late finds to abandon comes with a later heartbeat
    /// that is not answered in time either: with the main runtime blocked at each
    /// heartbeat, a cancelled job's attempt is still stopped.
    #[test]
    fn what_a_late_heartbeat_finds_to_abandon_comes_with_a_later_one() {
        let main = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let served = coordinator(&main, SchedulerConfig::default());
        let url = format!("http://{}", served.at);
        let client = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        client.block_on(async {
            let Leased { mut own, mut sweeps, session, sweep_id, id, .. } = leased(&url).await;
            sweeps.cancel_sweep(pb::CancelSweepRequest { sweep_id }).await.unwrap();
            let heartbeat = pb::HeartbeatRequest { session, attempt_ids: vec![id], started_ids: vec![id] };
            own.heartbeat(heartbeat.clone()).await.unwrap(); // dialled
            let mut answers = Vec::new();
            for _ in 0..2 {
                main.spawn(async { std::thread::sleep(Duration::from_millis(800)) });
                tokio::time::sleep(Duration::from_millis(100)).await;
                answers.push(own.heartbeat(heartbeat.clone()).await.unwrap().into_inner().abandon);
                tokio::time::sleep(Duration::from_millis(900)).await;
            }
            assert_eq!(answers, [vec![], vec![id]], "the first answered before the scheduler saw it");
        });
        drop(client);
        served.stop(&main);
    }

    /// A connection that opens with the prefix's first byte but not the prefix is closed,
    /// and the coordinator goes on serving.
    #[test]
    fn a_connection_with_a_wrong_prefix_is_closed() {
        use tokio::io::AsyncWriteExt;
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let served = coordinator(&runtime, SchedulerConfig::default());
        let at = served.at;
        runtime.block_on(async {
            let mut wrong = TcpStream::connect(at).await.unwrap();
            wrong.write_all(b"armada heartbeatz\n").await.unwrap();
            let mut rest = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(5), wrong.read_to_end(&mut rest)).await;
            assert!(matches!(read, Ok(Ok(0))), "closed without a byte: {read:?} {rest:?}");
            let mut sweeps = SweepsClient::new(connect(&format!("http://{at}"), None).await.unwrap());
            sweeps.list_sweeps(pb::ListSweepsRequest::default()).await.unwrap();
        });
        served.stop(&runtime);
    }

    /// A session whose heartbeat connection fails, or does not answer within its
    /// patience, heartbeats on its other connection from then on.
    #[test]
    fn heartbeats_go_on_the_other_connection_when_their_own_fails() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let served = coordinator(&runtime, SchedulerConfig::default());
        let token = armada_proto::auth::BearerToken::new(None).unwrap();
        runtime.block_on(async {
            let channel = connect(&format!("http://{}", served.at), None).await.unwrap();
            let session = register(&mut WorkersClient::new(channel.clone())).await;
            let mut shared = WorkersClient::with_interceptor(channel, token.clone());
            // Something that closes each connection at once, and something that never answers.
            let closes = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let (closes_at, silent_at) = (closes.local_addr().unwrap(), silent.local_addr().unwrap());
            tokio::spawn(async move {
                while let Ok((stream, _)) = closes.accept().await {
                    drop(stream);
                }
            });
            let held = tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((stream, _)) = silent.accept().await {
                    held.push(stream);
                }
            });
            let patience = Duration::from_millis(300);
            // The coordinator's own heartbeat connection answers: kept.
            let mut kept = Heartbeats::new(&format!("http://{}", served.at), None, &token, patience);
            let request = pb::HeartbeatRequest { session: session.clone(), ..Default::default() };
            assert!(kept.send(&mut shared, request).await.unwrap().abandon.is_empty());
            assert!(kept.on_own_connection());
            for own in [closes_at, silent_at] {
                let mut heartbeats = Heartbeats::new(&format!("http://{own}"), None, &token, patience);
                assert!(heartbeats.on_own_connection());
                let request = pb::HeartbeatRequest { session: session.clone(), ..Default::default() };
                let asked = Instant::now();
                let answer = heartbeats.send(&mut shared, request).await.unwrap();
                assert!(answer.abandon.is_empty());
                assert!(!heartbeats.on_own_connection(), "{own}: given up");
                assert!(asked.elapsed() < patience * 3, "{own}: {:?}", asked.elapsed());
            }
            held.abort();
        });
        served.stop(&runtime);
    }
}
