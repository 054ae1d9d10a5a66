//! A client of a coordinator's `Sweeps` service, shared by the CLI's client subcommands
//! and the embedded `armada run`: connect with a token, follow a sweep with a progress
//! bar, describe its status.

use armada_proto::auth::BearerToken;
use armada_proto::v1 as pb;
use indicatif::{ProgressBar, ProgressStyle};
use pb::sweeps_client::SweepsClient;
use std::path::Path;
use std::time::{Duration, Instant};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub type Client = SweepsClient<InterceptedService<Channel, BearerToken>>;

/// The largest reply the client accepts: gRPC's default 4 MiB is below a large summary's
/// final table, and replies the coordinator bounds (failures are paged) stay far below.
pub const MAX_REPLY_BYTES: usize = 64 << 20;

/// Connect to the coordinator at `url` (`https://` needs `ca`), sending `token` if given.
pub async fn connect(url: &str, token: Option<&str>, ca: Option<&Path>) -> anyhow::Result<Client> {
    let channel = armada_proto::connect::connect(url, ca).await?;
    Ok(SweepsClient::with_interceptor(channel, BearerToken::new(token)?).max_decoding_message_size(MAX_REPLY_BYTES))
}

/// A gRPC status as a one-line error naming its code (and, for an answer that was not
/// gRPC at all, what was probably dialled instead).
pub fn status_error(e: tonic::Status) -> anyhow::Error {
    match armada_proto::connect::misdial_hint(&e) {
        Some(hint) => anyhow::anyhow!("{hint} ({:?}: {})", e.code(), e.message()),
        None => anyhow::anyhow!("{} ({:?})", e.message(), e.code()),
    }
}

/// How often a followed sweep's live table is redrawn under its progress bar.
const TABLE_REFRESH: Duration = Duration::from_secs(2);

/// A watch that lost its coordinator tries again for this long before it gives up.
const RECONNECT_FOR: Duration = Duration::from_secs(600);

/// Errors that a new connection may cure: the coordinator restarting, or a network between.
/// An answer from a plain HTTP server (the dashboard's port) is not: no wait mends a wrong
/// address. (A broken connection may be a TLS port spoken to in the clear, but a restart
/// breaks connections too, so that is retried.)
fn is_transient(e: &tonic::Status) -> bool {
    use tonic::Code;
    let code = matches!(
        e.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded | Code::Internal
    );
    code && !armada_proto::connect::answered_plain_http(e)
}

/// An error about a file the coordinator refused (a sweep file, a declaration): named
/// with the file when the file is at fault, else as [`status_error`] says it (a wrong
/// port, a token, an unreachable coordinator are not the file's fault).
pub fn file_error(file: &Path, e: tonic::Status) -> anyhow::Error {
    let misdialled = armada_proto::connect::misdial_hint(&e).is_some();
    match e.code() {
        tonic::Code::InvalidArgument | tonic::Code::FailedPrecondition | tonic::Code::AlreadyExists if !misdialled => {
            anyhow::anyhow!("{}: {} ({:?})", file.display(), e.message(), e.code())
        }
        _ => status_error(e),
    }
}

/// Stream a sweep's events with a progress bar until it finishes; returns its last status.
/// With `progress`, the bar carries the sweep's live final-step table, redrawn as jobs
/// commit (GetSummary answers from the live summaries: it reads no trajectory).
/// A lost connection (a partition, a restarted coordinator) is dialled again with backoff,
/// for up to [`RECONNECT_FOR`]; the watch then resumes from a fresh snapshot.
pub async fn follow(client: &mut Client, id: &str, progress: bool) -> anyhow::Result<pb::SweepStatus> {
    let bar = if progress { ProgressBar::new(0) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} jobs ({eta} left) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut lost_since: Option<Instant> = None;
    let mut backoff = Duration::from_millis(250);
    loop {
        let lost = match watch_once(client, id, &bar, progress).await {
            Ok(Some(status)) => {
                bar.finish_and_clear();
                return Ok(status);
            }
            Ok(None) => tonic::Status::unavailable("the coordinator closed the watch before the sweep finished"),
            Err(e) if is_transient(&e) => e,
            Err(e) => {
                bar.finish_and_clear();
                return Err(status_error(e));
            }
        };
        let since = *lost_since.get_or_insert_with(Instant::now);
        if since.elapsed() > RECONNECT_FOR {
            bar.finish_and_clear();
            anyhow::bail!(
                "lost the coordinator while watching `{id}` and could not reach it again for {RECONNECT_FOR:?}: {} ({:?})",
                lost.message(),
                lost.code()
            );
        }
        // Said even when the bar is hidden (`--quiet`, no terminal): a watch that seems to
        // hang should say why.
        bar.suspend(|| {
            eprintln!("lost the coordinator ({}, {:?}); reconnecting in {backoff:?}", lost.message(), lost.code())
        });
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
        // The coordinator answers again: the give-up clock starts afresh.
        if client.get_sweep(pb::GetSweepRequest { sweep_id: id.to_string(), ..Default::default() }).await.is_ok() {
            (lost_since, backoff) = (None, Duration::from_millis(250));
        }
    }
}

/// One watch stream of `id`, until the sweep finishes (`Some`), the stream ends (`None`)
/// or fails.
async fn watch_once(
    client: &mut Client,
    id: &str,
    bar: &ProgressBar,
    progress: bool,
) -> Result<Option<pb::SweepStatus>, tonic::Status> {
    use pb::sweep_event::Event;
    // A bar needs only the counts: not two events for every job.
    let request = pb::WatchSweepRequest { sweep_id: id.to_string(), counts_only: true };
    let mut events = client.watch_sweep(request).await?.into_inner();
    // The counts on the bar (every settled job moves it); answers the jobs done.
    let count = |n_jobs: u32, n_done: u32, n_failed: u32, n_cancelled: u32| {
        bar.set_length(u64::from(n_jobs));
        bar.set_position(u64::from(n_done + n_failed + n_cancelled));
        u64::from(n_done)
    };
    let mut refresh = tokio::time::interval(TABLE_REFRESH);
    let (mut n_done, mut n_shown) = (0u64, 0u64);
    loop {
        let event = tokio::select! {
            event = events.message() => event?,
            _ = refresh.tick(), if progress => {
                if n_done > n_shown {
                    n_shown = n_done;
                    let request = pb::GetSummaryRequest { sweep_id: id.to_string() };
                    if let Ok(summary) = client.get_summary(request).await {
                        bar.set_message(live_table(&summary.into_inner()));
                    }
                }
                continue;
            }
        };
        let Some(event) = event else { return Ok(None) };
        match event.event {
            Some(Event::Snapshot(s)) => {
                for line in trouble_lines(&s.write_troubles) {
                    bar.println(line);
                }
                n_done = count(s.n_jobs, s.n_done, s.n_failed, s.n_cancelled);
            }
            Some(Event::Progress(c)) => n_done = count(c.n_jobs, c.n_done, c.n_failed, c.n_cancelled),
            // From a coordinator older than `counts_only`, which sends every job's events.
            Some(Event::JobFinished(_)) => {
                bar.inc(1);
                n_done += 1;
            }
            Some(Event::JobFailed(f)) => {
                let verdict = if f.r#final { "failed" } else { "will retry" };
                bar.println(format!("job {} attempt {} {verdict}: {}", f.description, f.attempt, f.error));
                if f.r#final {
                    bar.inc(1);
                }
            }
            Some(Event::WriteTroubles(t)) if t.troubles.is_empty() => {
                bar.println("writes succeed again");
            }
            Some(Event::WriteTroubles(t)) => {
                for line in trouble_lines(&t.troubles) {
                    bar.println(line);
                }
            }
            Some(Event::JobStarted(_)) | None => {}
            Some(Event::SweepFinished(s)) => return Ok(Some(s)),
        }
    }
}

/// A live summary as shown under a progress bar.
fn live_table(summary: &pb::GetSummaryResponse) -> String {
    let state = if summary.provisional {
        format!("{} of {} cells complete; the others show the jobs done so far", summary.n_cells_exact, summary.n_cells)
    } else {
        "every cell complete".to_string()
    };
    format!("\n{}\n{state}", summary.table.trim_end())
}

pub fn describe(s: &pb::SweepStatus) -> String {
    let state = pb::SweepState::try_from(s.state).map_or("unknown", |st| match st {
        pb::SweepState::Running => "running",
        pb::SweepState::Finished => "finished",
        pb::SweepState::Cancelled => "cancelled",
        pb::SweepState::Unspecified => "unknown",
    });
    let leased = if s.n_leased > 0 { format!(", {} leased ahead", s.n_leased) } else { String::new() };
    format!(
        "{}: {state}, {} jobs: {} done, {} running{leased}, {} queued, {} failed, {} cancelled ({})",
        s.sweep_id, s.n_jobs, s.n_done, s.n_running, s.n_queued, s.n_failed, s.n_cancelled, s.results_dir
    )
}

/// One line per place where the coordinator's writes fail (each place once), with what
/// waits on it; nothing when every write succeeds.
pub fn trouble_lines<'a>(troubles: impl IntoIterator<Item = &'a pb::WriteTrouble>) -> Vec<String> {
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let mut places = std::collections::BTreeSet::new();
    troubles
        .into_iter()
        .filter(|t| places.insert(t.place.clone()))
        .map(|t| {
            let waits = if t.place.starts_with("the store (") {
                "nothing is leased or recorded meanwhile"
            } else if t.place.starts_with("the store's backups") {
                "nothing waits, but the newest backup grows older"
            } else {
                "its jobs are queued again meanwhile"
            };
            let seconds = (now_ms - t.since_unix_ms).max(0) / 1000;
            format!(
                "writes failing: {}: {} ({} failed writes over {seconds} s; {waits}; it resumes by itself once \
                 the writes succeed: free space, or see docs/operations.md)",
                t.place, t.error, t.failures
            )
        })
        .collect()
}

/// One line per failed job, at most `shown`, then how many more the coordinator has.
pub fn failure_lines(s: &pb::SweepStatus, shown: usize) -> Vec<String> {
    let mut lines: Vec<String> = s
        .failures
        .iter()
        .take(shown)
        .map(|f| {
            let attempts = if f.attempt == 1 { "1 attempt".to_string() } else { format!("{} attempts", f.attempt) };
            format!("failed: {} after {attempts}: {}", f.description, f.error)
        })
        .collect();
    let more = s.failures.len().saturating_sub(shown) + s.n_failures_omitted as usize;
    if more > 0 {
        lines.push(format!(
            "... and {more} more failed jobs (armada status {} --failures N --failures-from K lists them)",
            s.sweep_id
        ));
    }
    lines
}

/// What a fetch received besides its files: how many, and for trajectories the parts the
/// coordinator could not read and the done jobs that only they held.
#[derive(Debug, Default)]
pub struct Fetched {
    pub n_files: usize,
    pub damaged: Vec<pb::DamagedPart>,
    pub unreadable_jobs: Vec<String>,
}

/// Where fetched files go, a chunk at a time: a fetch holds one chunk, never a whole file
/// (a summary of a long sweep is hundreds of megabytes).
pub trait FileSink {
    /// The next bytes of the current file (the first call of a file opens it).
    fn write(&mut self, data: &[u8]) -> anyhow::Result<()>;
    /// The current file is complete; for trajectories, `n_jobs` it holds.
    fn end_file(&mut self, n_jobs: u32) -> anyhow::Result<()>;
}

/// Stream `request`'s results into `sink`, file by file.
pub async fn fetch_results(
    client: &mut Client,
    request: pb::FetchResultsRequest,
    sink: &mut impl FileSink,
) -> anyhow::Result<Fetched> {
    let mut stream = client.fetch_results(request).await.map_err(status_error)?.into_inner();
    let (mut inside_file, mut fetched) = (false, Fetched::default());
    while let Some(chunk) = stream.message().await.map_err(status_error)? {
        if !chunk.data.is_empty() {
            sink.write(&chunk.data)?;
            inside_file = true;
        }
        if chunk.end_of_file {
            sink.end_file(chunk.n_jobs)?;
            fetched.n_files += 1;
            inside_file = false;
        }
        fetched.damaged.extend(chunk.damaged);
        fetched.unreadable_jobs.extend(chunk.unreadable_jobs);
    }
    anyhow::ensure!(!inside_file, "the coordinator ended the stream inside a file");
    Ok(fetched)
}
