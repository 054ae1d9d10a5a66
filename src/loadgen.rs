//! `armada loadgen`: many simulated worker sessions against a real `armada serve`, to
//! measure what one coordinator sustains. It starts the coordinator (this binary, on a
//! loopback port, over a fresh data directory), submits one `testkit` sweep of `jobs` jobs
//! of `steps` steps, and runs `sessions` sessions of `slots` slots each in this process,
//! each a gRPC client of its own speaking the worker protocol as `armada worker` does:
//! Register, Lease (ahead as the worker leases: up to 512 jobs a slot when they are short,
//! none when they take 250 ms or more), Heartbeat with the started attempts, records as
//! columns (inline in the commit up to 64, else through UploadRecords first), and
//! CompleteAttempts in batches. A job "runs" for a length drawn uniformly from the given
//! range, holding its slot; its records are synthesized (`value = seed + step`).
//!
//! It reports the sustained rate, the coordinator's CPU per job (from /proc), the latency
//! percentiles of Lease, CompleteAttempts and Heartbeat, the coordinator's memory per
//! session and per queued job, and the store's bytes per job; at the end it reads the
//! parts' indexes and checks that every job was committed exactly once, with every row.

use crate::results;
use anyhow::Context;
use armada_proto::auth::BearerToken;
use armada_proto::heartbeats::Heartbeats;
use armada_proto::lease::ahead_per_slot;
use armada_proto::v1 as pb;
use pb::workers_client::WorkersClient;
use std::collections::{BinaryHeap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

type Workers = WorkersClient<InterceptedService<Channel, BearerToken>>;

/// Records a commit carries inline; longer trajectories are uploaded first (as the Rust
/// worker does).
const INLINE_RECORDS: usize = 64;
/// Attempts a CompleteAttempts call carries at most, and how long a finished attempt waits
/// for others to join its batch.
const COMMIT_BATCH: usize = 256;
const COMMIT_WAIT: Duration = Duration::from_millis(20);

/// What to simulate.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub sessions: usize,
    pub slots: usize,
    pub jobs: usize,
    /// Steps per job after the initial point: `steps + 1` records.
    pub steps: u32,
    /// A job's length, drawn uniformly from this range (milliseconds).
    pub job_ms: (u64, u64),
    /// The armada binary to serve with (normally this process's own).
    pub exe: PathBuf,
    /// The coordinator's data directory (made; it should be empty).
    pub data: PathBuf,
    /// Pin the coordinator to this CPU and the load generator to the others, so that the
    /// two do not take each other's time (on a machine of few cores, latencies otherwise
    /// measure the load generator's own queueing as much as the coordinator's).
    pub coordinator_cpu: Option<usize>,
}

/// Latency percentiles of one call, in milliseconds.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Latency {
    pub calls: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    fn of(mut samples: Vec<Duration>) -> Latency {
        samples.sort_unstable();
        let at = |q: f64| {
            let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[i].as_secs_f64() * 1e3
        };
        match samples.len() {
            0 => Latency::default(),
            n => Latency { calls: n, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) },
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadReport {
    pub sessions: usize,
    pub slots: usize,
    pub jobs: usize,
    pub steps: u32,
    pub job_ms: (u64, u64),
    /// From the submission's answer to the last commit's.
    pub seconds: f64,
    pub jobs_per_s: f64,
    /// The coordinator's user + system CPU over that time, per job.
    pub coordinator_cpu_us_per_job: f64,
    /// Its CPU over that time as a share of one core.
    pub coordinator_cores: f64,
    /// The load generator's own CPU over that time, as a share of one core: when it and the
    /// coordinator together use every core of the machine, the latencies include waits
    /// for a core.
    pub loadgen_cores: f64,
    pub lease: Latency,
    pub complete: Latency,
    pub heartbeat: Latency,
    /// The coordinator's resident memory added by registering the sessions, per session,
    /// and by the submission, per queued job.
    pub rss_bytes_per_session: f64,
    pub rss_bytes_per_queued_job: f64,
    pub coordinator_peak_rss_bytes: u64,
    /// The store's files (armada.sqlite and its WAL) at the end, per job.
    pub store_bytes_per_job: f64,
    /// Attempts the coordinator told a session to stop (their lease expired, or another
    /// attempt committed their job), other than those whose commit was in flight.
    pub abandoned: usize,
    /// Commits answered committed = false (another attempt had committed the job).
    pub not_committed: usize,
    /// Sessions whose heartbeats left their own connection for the session's other one
    /// (it failed or did not answer within a heartbeat's interval).
    pub heartbeats_shared: usize,
    /// Jobs in the parts: distinct keys, keys found more than once, and jobs whose rows
    /// are not `steps + 1`.
    pub jobs_in_parts: usize,
    pub duplicated: usize,
    pub wrong_rows: usize,
}

impl LoadReport {
    /// Every job committed exactly once, with every row.
    pub fn exactly_once(&self) -> bool {
        self.jobs_in_parts == self.jobs && self.duplicated == 0 && self.wrong_rows == 0
    }
}

/// The coordinator process, killed when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process's user + system CPU time and its resident and peak resident bytes, from /proc.
fn process_usage(pid: u32) -> anyhow::Result<(Duration, u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).context("reading the coordinator's /proc stat")?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the stat line: 11 and 12 after the name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let cpu = Duration::from_micros((ticks(11) + ticks(12)) * 1_000_000 / hz);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    Ok((cpu, kb("VmRSS:"), kb("VmHWM:")))
}

/// The CPUs this machine has online.
fn cpus() -> usize {
    // SAFETY: sysconf only reads a system value.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize
}

/// Run this thread, and the threads and processes it starts from now on, on `cpus` only.
fn pin(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: the set is zeroed, then filled with CPU numbers below its size by CPU_SET.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        match libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }
}

fn serve(config: &LoadConfig, token: &str) -> anyhow::Result<Served> {
    std::fs::create_dir_all(&config.data).with_context(|| format!("creating {}", config.data.display()))?;
    let mut command = Command::new(&config.exe);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--dashboard", "off", "--data"])
        .arg(&config.data)
        .env(armada_proto::auth::TOKEN_ENV, token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(cpu) = config.coordinator_cpu {
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec the closure only makes a system call.
        unsafe { command.pre_exec(move || pin(&[cpu])) };
    }
    let mut child = command.spawn().with_context(|| format!("starting {} serve", config.exe.display()))?;
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("piped")).read_line(&mut first)?;
    let url = first.split_whitespace().last().unwrap_or_default().to_string();
    let served = Served { child, url };
    anyhow::ensure!(served.url.starts_with("http://"), "the coordinator did not start: `{}`", first.trim());
    Ok(served)
}

/// Run the simulation to its end and measure it.
pub fn run(config: &LoadConfig) -> anyhow::Result<LoadReport> {
    anyhow::ensure!(config.sessions > 0 && config.slots > 0 && config.jobs > 0, "sessions, slots and jobs must be > 0");
    anyhow::ensure!(config.job_ms.0 <= config.job_ms.1, "the job length's range is empty");
    let token = crate::secret::random_secret();
    if let Some(cpu) = config.coordinator_cpu {
        // Before the runtime starts: its threads inherit this thread's CPUs.
        let others: Vec<usize> = (0..cpus()).filter(|&c| c != cpu).collect();
        anyhow::ensure!(
            cpu < cpus() && !others.is_empty(),
            "--coordinator-cpu {cpu}: this machine has CPUs 0 to {}, and the load generator needs one",
            cpus() - 1
        );
        pin(&others).context("pinning the load generator")?;
    }
    let served = serve(config, &token)?;
    let pid = served.child.id();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // The sessions' heartbeats on a thread of their own, as each worker process sends its
    // own: their latencies are the coordinator's, not this process's queue of 2,000
    // sessions' other work.
    let beats = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    runtime.block_on(simulate(config, &served.url, &token, pid, beats.handle()))
}

async fn simulate(
    config: &LoadConfig,
    url: &str,
    token: &str,
    pid: u32,
    beats: &tokio::runtime::Handle,
) -> anyhow::Result<LoadReport> {
    let registry = crate::registry();
    let (_, rss_empty, _) = process_usage(pid)?;
    // Register every session first: the coordinator's memory per session.
    let mut registering = JoinSet::new();
    for i in 0..config.sessions {
        let (url, token, digest) = (url.to_string(), token.to_string(), registry.digest());
        let slots = config.slots as u32;
        let beats = beats.clone();
        registering.spawn(async move {
            let channel = armada_proto::connect::connect(&url, None).await?;
            let mut client = WorkersClient::with_interceptor(channel, BearerToken::new(Some(&token))?);
            let request = pb::RegisterRequest {
                name: format!("loadgen-{i}"),
                slots,
                version: env!("CARGO_PKG_VERSION").to_string(),
                families: vec!["testkit".to_string()],
                build: digest,
                declarations: vec![],
                host: "loadgen".to_string(),
                software: format!("armada {} loadgen", env!("CARGO_PKG_VERSION")),
                processor: String::new(),
            };
            let registered = client.register(request).await.map_err(crate::client::status_error)?.into_inner();
            // Heartbeats on a connection of their own, as the Rust worker sends them.
            let interval = Duration::from_millis(u64::from(registered.heartbeat_interval_ms.max(20)));
            // Made, and dialled, on the heartbeats' thread, whose runtime then runs its
            // connection; dialled now, so that the latencies measured are a running session's.
            let first = pb::HeartbeatRequest { session: registered.session.clone(), ..Default::default() };
            let (bearer, mut fallback) = (BearerToken::new(Some(&token))?, client.clone());
            let heartbeats = beats
                .spawn(async move {
                    let mut heartbeats = Heartbeats::new(&url, None, &bearer, interval);
                    heartbeats.send(&mut fallback, first).await.map(|_| heartbeats)
                })
                .await?
                .map_err(crate::client::status_error)?;
            anyhow::Ok((client, heartbeats, registered))
        });
    }
    let mut sessions = Vec::with_capacity(config.sessions);
    while let Some(joined) = registering.join_next().await {
        sessions.push(joined??);
    }
    let (_, rss_registered, _) = process_usage(pid)?;

    let mut sweeps = crate::client::connect(url, Some(token), None).await?;
    let sweep = format!(
        "name = \"load\"\nfamily = \"testkit\"\nseeds = {}\nhorizon = {}\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
        config.jobs, config.steps
    );
    let request = pb::SubmitSweepRequest {
        sweep: Some(pb::submit_sweep_request::Sweep::Toml(sweep)),
        default_name: String::new(),
    };
    sweeps.submit_sweep(request).await.map_err(crate::client::status_error)?;
    let (cpu_start, rss_submitted, _) = process_usage(pid)?;
    let (own_cpu_start, _, _) = process_usage(std::process::id())?;
    let started = Instant::now();

    let committed = Arc::new(AtomicUsize::new(0));
    let mut running = JoinSet::new();
    for (i, (client, heartbeats, registered)) in sessions.into_iter().enumerate() {
        let session = Session {
            client,
            heartbeats: Some(heartbeats),
            beats: beats.clone(),
            id: registered.session,
            slots: config.slots,
            heartbeat: Duration::from_millis(u64::from(registered.heartbeat_interval_ms.max(20))),
            steps: config.steps,
            job_ms: config.job_ms,
            depth: config.slots * (1 + ahead_per_slot(Duration::from_millis((config.job_ms.0 + config.job_ms.1) / 2))),
            jobs: config.jobs,
            committed: committed.clone(),
            draws: i as u64,
        };
        running.spawn(session.run());
    }
    let mut seen = Seen::default();
    while let Some(joined) = running.join_next().await {
        seen.merge(joined??);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (cpu_end, _, peak) = process_usage(pid)?;
    let cpu = cpu_end.saturating_sub(cpu_start).as_secs_f64();
    let (own_cpu_end, _, _) = process_usage(std::process::id())?;
    let own_cpu = own_cpu_end.saturating_sub(own_cpu_start).as_secs_f64();

    let store_bytes = crate::data_dir::DataDir(&config.data).store_bytes();
    let (jobs_in_parts, duplicated, wrong_rows) = check_parts(&config.data.join("load"), config.steps)?;
    let per = |bytes: u64, base: u64, n: usize| bytes.saturating_sub(base) as f64 / n as f64;
    Ok(LoadReport {
        sessions: config.sessions,
        slots: config.slots,
        jobs: config.jobs,
        steps: config.steps,
        job_ms: config.job_ms,
        seconds,
        jobs_per_s: config.jobs as f64 / seconds,
        coordinator_cpu_us_per_job: cpu * 1e6 / config.jobs as f64,
        coordinator_cores: cpu / seconds,
        loadgen_cores: own_cpu / seconds,
        lease: Latency::of(seen.lease),
        complete: Latency::of(seen.complete),
        heartbeat: Latency::of(seen.heartbeat),
        rss_bytes_per_session: per(rss_registered, rss_empty, config.sessions),
        rss_bytes_per_queued_job: per(rss_submitted, rss_registered, config.jobs),
        coordinator_peak_rss_bytes: peak,
        store_bytes_per_job: store_bytes as f64 / config.jobs as f64,
        abandoned: seen.abandoned,
        not_committed: seen.not_committed,
        heartbeats_shared: seen.heartbeats_shared,
        jobs_in_parts,
        duplicated,
        wrong_rows,
    })
}

/// The jobs the sweep's parts hold: distinct keys, keys held more than once, and jobs
/// whose rows are not `steps + 1`.
fn check_parts(sweep_dir: &Path, steps: u32) -> anyhow::Result<(usize, usize, usize)> {
    let mut held: HashMap<String, usize> = HashMap::new();
    let mut wrong_rows = 0;
    for part in results::part_files(sweep_dir)? {
        for job in results::read_index(&part)? {
            wrong_rows += usize::from(job.rows != steps as usize + 1);
            *held.entry(job.key).or_default() += 1;
        }
    }
    let duplicated = held.values().filter(|&&n| n > 1).count();
    Ok((held.len(), duplicated, wrong_rows))
}

/// What the sessions saw.
#[derive(Default)]
struct Seen {
    lease: Vec<Duration>,
    complete: Vec<Duration>,
    heartbeat: Vec<Duration>,
    abandoned: usize,
    not_committed: usize,
    heartbeats_shared: usize,
}

impl Seen {
    fn merge(&mut self, other: Seen) {
        self.lease.extend(other.lease);
        self.complete.extend(other.complete);
        self.heartbeat.extend(other.heartbeat);
        self.abandoned += other.abandoned;
        self.not_committed += other.not_committed;
        self.heartbeats_shared += other.heartbeats_shared;
    }
}

/// One simulated worker session.
struct Session {
    client: Workers,
    /// Its heartbeat sender, away on the heartbeats' thread while a heartbeat is out.
    heartbeats: Option<Heartbeats>,
    beats: tokio::runtime::Handle,
    id: String,
    slots: usize,
    heartbeat: Duration,
    steps: u32,
    job_ms: (u64, u64),
    /// Jobs it holds, running and leased ahead, as the worker would.
    depth: usize,
    /// The sweep's jobs, and how many all sessions have committed: the run ends there.
    jobs: usize,
    committed: Arc<AtomicUsize>,
    /// The state of its job lengths' draws (splitmix64).
    draws: u64,
}

/// A heartbeat come back from the heartbeats' thread: the sender, the call's latency there
/// and its answer.
type Beat = (Heartbeats, Duration, Result<pb::HeartbeatResponse, tonic::Status>);

/// A leased attempt running on a slot, by the time it ends (earliest first).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Running(std::cmp::Reverse<tokio::time::Instant>, u64, u64);

impl Session {
    /// The next of its pseudo-random draws (splitmix64).
    fn draw(&mut self) -> u64 {
        self.draws = self.draws.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.draws;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    async fn run(mut self) -> anyhow::Result<Seen> {
        let mut seen = Seen::default();
        let phase = (self.draw() >> 11) as f64 / (1u64 << 53) as f64;
        let mut heartbeat = armada_proto::heartbeats::ticks(self.heartbeat, phase);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut beating: Option<tokio::task::JoinHandle<Beat>> = None;
        // Leased and waiting for a slot (attempt, seed); on a slot; finished and waiting
        // for their commit's batch; commits in flight.
        let mut backlog: Vec<(u64, u64)> = Vec::new();
        let mut slots: BinaryHeap<Running> = BinaryHeap::new();
        let mut ready: Vec<(u64, u64)> = Vec::new();
        let mut ready_since = tokio::time::Instant::now();
        let mut commits: JoinSet<anyhow::Result<Committed>> = JoinSet::new();
        let mut in_commit: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut next_lease = tokio::time::Instant::now();
        loop {
            while slots.len() < self.slots {
                let Some((attempt, seed)) = backlog.pop() else { break };
                let ms = self.job_ms.0 + self.draw() % (self.job_ms.1 - self.job_ms.0 + 1);
                let ends = tokio::time::Instant::now() + Duration::from_millis(ms);
                slots.push(Running(std::cmp::Reverse(ends), attempt, seed));
            }
            if self.committed.load(Ordering::Relaxed) >= self.jobs && commits.is_empty() {
                if let Some(beat) = beating.take() {
                    self.heartbeats = Some(beat.await?.0);
                }
                let on_own = self.heartbeats.as_ref().is_some_and(Heartbeats::on_own_connection);
                seen.heartbeats_shared = usize::from(!on_own);
                return Ok(seen);
            }
            // Leased ahead as the worker does for the sweep's mean job length (the worker
            // measures it; here it is known from the start).
            let wanted = self.depth.saturating_sub(slots.len() + backlog.len());
            let next_end = slots.peek().map(|r| r.0 .0);
            let send_at = match ready.len() {
                0 => None,
                n if n >= COMMIT_BATCH || slots.is_empty() => Some(tokio::time::Instant::now()),
                _ => Some(ready_since + COMMIT_WAIT),
            };
            tokio::select! {
                _ = heartbeat.tick(), if beating.is_none() => {
                    let started: Vec<u64> = slots.iter().map(|r| r.1).chain(ready.iter().map(|r| r.0)).chain(in_commit.iter().copied()).collect();
                    let held = started.iter().copied().chain(backlog.iter().map(|b| b.0)).collect();
                    let request = pb::HeartbeatRequest { session: self.id.clone(), attempt_ids: held, started_ids: started };
                    let (mut heartbeats, mut client) = (self.heartbeats.take().expect("not out"), self.client.clone());
                    beating = Some(self.beats.spawn(async move {
                        let asked = Instant::now();
                        let reply = heartbeats.send(&mut client, request).await;
                        (heartbeats, asked.elapsed(), reply)
                    }));
                }
                beat = async { beating.as_mut().expect("guarded").await }, if beating.is_some() => {
                    beating = None;
                    let (heartbeats, took, reply) = beat?;
                    self.heartbeats = Some(heartbeats);
                    let abandon = reply.map_err(crate::client::status_error)?.abandon;
                    seen.heartbeat.push(took);
                    // Only those it still runs or holds ahead count (an answer that came late
                    // may name one since committed); one whose commit is in flight was
                    // settled by it (as the worker, skip it).
                    let held = |a: &u64| backlog.iter().any(|b| b.0 == *a) || slots.iter().any(|r| r.1 == *a);
                    seen.abandoned += abandon.iter().filter(|a| !in_commit.contains(a) && held(a)).count();
                    backlog.retain(|(a, _)| !abandon.contains(a));
                    slots.retain(|r| !abandon.contains(&r.1));
                }
                _ = tokio::time::sleep_until(next_end.unwrap_or(next_lease)), if next_end.is_some() => {
                    let now = tokio::time::Instant::now();
                    while slots.peek().is_some_and(|r| r.0 .0 <= now) {
                        let Running(_, attempt, seed) = slots.pop().expect("peeked");
                        if ready.is_empty() {
                            ready_since = now;
                        }
                        ready.push((attempt, seed));
                    }
                }
                _ = tokio::time::sleep_until(send_at.unwrap_or(ready_since)), if send_at.is_some() => {
                    let batch: Vec<(u64, u64)> = ready.drain(..ready.len().min(COMMIT_BATCH)).collect();
                    in_commit.extend(batch.iter().map(|b| b.0));
                    let (client, session, steps) = (self.client.clone(), self.id.clone(), self.steps);
                    commits.spawn(commit(client, session, steps, batch));
                }
                Some(joined) = commits.join_next(), if !commits.is_empty() => {
                    let done = joined??;
                    seen.complete.push(done.took);
                    seen.not_committed += done.not_committed;
                    self.committed.fetch_add(done.committed, Ordering::Relaxed);
                    for id in &done.attempts {
                        in_commit.remove(id);
                    }
                }
                _ = tokio::time::sleep_until(next_lease), if wanted > 0 => {
                    // Never held (as an idle worker's lease is): Lease latency is then the
                    // coordinator's time to answer, not a wait for jobs.
                    let request = pb::LeaseRequest { session: self.id.clone(), max_jobs: wanted as u32, wait_ms: 0 };
                    let asked = Instant::now();
                    let reply = self.client.lease(request).await.map_err(crate::client::status_error)?.into_inner();
                    seen.lease.push(asked.elapsed());
                    if reply.leases.is_empty() {
                        next_lease = tokio::time::Instant::now() + Duration::from_millis(u64::from(reply.retry_after_ms.clamp(10, 1000)));
                    }
                    backlog.extend(reply.leases.iter().map(|l| (l.attempt_id, l.spec.as_ref().map_or(0, |s| s.seed))));
                }
            }
        }
    }
}

/// The records of a job of `seed`: steps 0..=steps, `value = seed + step`.
fn records(seed: u64, steps: u32) -> pb::RecordColumns {
    let n = steps as usize + 1;
    pb::RecordColumns {
        steps: (0..=steps).collect(),
        elapsed_ms: vec![0.0; n],
        metrics: vec![pb::MetricColumn { values: (0..=steps).map(|s| seed as f64 + f64::from(s)).collect() }],
    }
}

/// A CompleteAttempts call's outcome: its attempts, how many were committed and not
/// (another attempt had committed the job), and how long it took.
struct Committed {
    attempts: Vec<u64>,
    committed: usize,
    not_committed: usize,
    took: Duration,
}

/// Commit a batch of finished attempts (uploading first the records of long ones).
async fn commit(mut client: Workers, session: String, steps: u32, batch: Vec<(u64, u64)>) -> anyhow::Result<Committed> {
    let n_records = steps + 1;
    let mut attempts = Vec::with_capacity(batch.len());
    for &(attempt_id, seed) in &batch {
        let columns = records(seed, steps);
        if n_records as usize <= INLINE_RECORDS {
            attempts.push(pb::CompleteAttemptRequest {
                attempt_id,
                n_records,
                columns: Some(columns),
                ..Default::default()
            });
            continue;
        }
        let upload = pb::RecordBatch { attempt_id, records: vec![], session: session.clone(), columns: Some(columns) };
        client.upload_records(tokio_stream::once(upload)).await.map_err(crate::client::status_error)?;
        attempts.push(pb::CompleteAttemptRequest { attempt_id, n_records, ..Default::default() });
    }
    let asked = Instant::now();
    let reply = client
        .complete_attempts(pb::CompleteAttemptsRequest { attempts, session })
        .await
        .map_err(crate::client::status_error)?
        .into_inner();
    let took = asked.elapsed();
    let mut done = Committed { attempts: batch.iter().map(|b| b.0).collect(), committed: 0, not_committed: 0, took };
    for outcome in reply.outcomes {
        anyhow::ensure!(outcome.code == 0, "attempt {} was refused: {}", outcome.attempt_id, outcome.message);
        if outcome.committed {
            done.committed += 1;
        } else {
            done.not_committed += 1;
        }
    }
    Ok(done)
}

/// The report as text, a line per figure.
pub fn describe(r: &LoadReport) -> String {
    let latency = |name: &str, l: &Latency| {
        format!(
            "{name:<17} {:>8} calls  p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms\n",
            l.calls, l.p50_ms, l.p99_ms, l.max_ms
        )
    };
    let mut text = format!(
        "{} sessions x {} slots, {} jobs of {} steps, {}..{} ms each\n",
        r.sessions, r.slots, r.jobs, r.steps, r.job_ms.0, r.job_ms.1
    );
    text += &format!("rate              {:.0} jobs/s ({:.2} s)\n", r.jobs_per_s, r.seconds);
    text += &format!(
        "coordinator CPU   {:.1} us per job ({:.2} of a core; the load generator {:.2})\n",
        r.coordinator_cpu_us_per_job, r.coordinator_cores, r.loadgen_cores
    );
    text += &latency("Lease", &r.lease);
    text += &latency("CompleteAttempts", &r.complete);
    text += &latency("Heartbeat", &r.heartbeat);
    if r.heartbeats_shared > 0 {
        text += &format!(
            "                  {} sessions heartbeat on their other connection (their own failed)\n",
            r.heartbeats_shared
        );
    }
    text += &format!(
        "coordinator RSS   {:.0} B per session, {:.0} B per queued job, peak {} MB\n",
        r.rss_bytes_per_session,
        r.rss_bytes_per_queued_job,
        r.coordinator_peak_rss_bytes >> 20
    );
    text += &format!("store             {:.0} B per job\n", r.store_bytes_per_job);
    text += &format!(
        "exactly once      {} ({} jobs in parts, {} duplicated, {} with wrong rows; {} commits refused as already committed, {} attempts abandoned)\n",
        if r.exactly_once() { "yes" } else { "NO" },
        r.jobs_in_parts,
        r.duplicated,
        r.wrong_rows,
        r.not_committed,
        r.abandoned
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles_are_the_nearest_rank_of_the_samples() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let l = Latency::of(samples);
        assert_eq!((l.calls, l.p50_ms, l.p99_ms, l.max_ms), (100, 50.0, 99.0, 100.0));
        let one = Latency::of(vec![Duration::from_micros(1500)]);
        assert_eq!((one.calls, one.p50_ms, one.p99_ms, one.max_ms), (1, 1.5, 1.5, 1.5));
        assert_eq!(Latency::of(vec![]).calls, 0);
    }

    #[test]
    fn a_jobs_records_are_every_step_with_its_value() {
        let r = records(7, 3);
        assert_eq!(r.steps, [0, 1, 2, 3]);
        assert_eq!(r.metrics.len(), 1);
        assert_eq!(r.metrics[0].values, [7.0, 8.0, 9.0, 10.0]);
        assert_eq!(r.elapsed_ms.len(), 4);
    }
}
