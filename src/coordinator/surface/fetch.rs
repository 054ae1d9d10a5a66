//! `FetchResults`: a sweep's Parquet results streamed to a client, in chunks of at most
//! [`CHUNK_BYTES`] (under gRPC's default 4 MiB message limit).
//!
//! A summary table is its file's bytes, or while the sweep runs its live table encoded. Trajectories are the sweep's parts, sent as they
//! are when every job in a part is wanted (no re-encoding), and otherwise the wanted jobs
//! of a part re-encoded into a file of their own, with its index. Runs on the blocking
//! pool, one file at a time, so memory is one file's worth whatever the sweep's size.

use crate::results::{self, schema, StoredRows};
use armada_proto::v1 as pb;
use pb::fetch_results_request::Table;
use polars::prelude::DataFrame;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;
use tonic::Status;

/// Bytes per streamed message.
pub const CHUNK_BYTES: usize = 1 << 20;

type Sender = mpsc::Sender<Result<pb::ResultChunk, Status>>;

/// A summary table by name.
pub enum SummaryTable {
    Summary,
    Final,
    Along(String),
    /// A resolving sweep's comparisons: a file whether or not the sweep runs.
    Comparisons,
}

impl SummaryTable {
    pub fn file_name(&self) -> String {
        match self {
            SummaryTable::Summary => results::SUMMARY_FILE.to_string(),
            SummaryTable::Final => results::FINAL_FILE.to_string(),
            SummaryTable::Along(column) => results::along_file(column),
            SummaryTable::Comparisons => results::rounds::COMPARISONS_FILE.to_string(),
        }
    }
}

/// What a request asks for.
pub enum Wanted {
    Trajectories,
    Summary(SummaryTable),
}

/// Where the bytes come from.
pub enum Source {
    Trajectories,
    File(PathBuf),
    /// A live table, encoded as Parquet on the way out.
    Frame(DataFrame),
}

/// Check a request's table before anything is streamed.
pub fn check(request: &pb::FetchResultsRequest) -> Result<Wanted, Status> {
    match Table::try_from(request.table).unwrap_or(Table::Unspecified) {
        Table::Unspecified => Err(Status::invalid_argument(
            "table: give TRAJECTORIES, SUMMARY, FINAL, ALONG (with `along`) or COMPARISONS",
        )),
        Table::Trajectories => Ok(Wanted::Trajectories),
        _ if !request.job_keys.is_empty() || request.cells.as_ref().is_some_and(|c| filter_text(c).is_some()) => {
            Err(Status::invalid_argument(
                "job_keys, cells: a summary table comes whole; filter its rows by their columns instead",
            ))
        }
        Table::Summary => Ok(Wanted::Summary(SummaryTable::Summary)),
        Table::Final => Ok(Wanted::Summary(SummaryTable::Final)),
        Table::Along if request.along.is_empty() => Err(Status::invalid_argument("along: name the column")),
        Table::Along => Ok(Wanted::Summary(SummaryTable::Along(request.along.clone()))),
        Table::Comparisons => Ok(Wanted::Summary(SummaryTable::Comparisons)),
    }
}

/// Stream what `source` holds.
pub fn send(source: Source, request: &pb::FetchResultsRequest, sweep_dir: &Path, done: &BTreeSet<String>, tx: &Sender) {
    match source {
        Source::Trajectories => send_trajectories(request, sweep_dir, done, tx),
        Source::File(path) => send_file(&path, tx),
        Source::Frame(frame) => {
            let mut stream = ChunkWriter::new(tx);
            match results::write_table(&frame, &mut stream) {
                Ok(()) => {
                    stream.finish(0);
                }
                Err(_) if stream.client_gone => {}
                Err(e) => {
                    let _ = tx.blocking_send(Err(Status::internal(format!("encoding the table: {e:#}"))));
                }
            }
        }
    }
}

/// Stream one file's bytes, a chunk at a time.
fn send_file(path: &Path, tx: &Sender) {
    let mut stream = ChunkWriter::new(tx);
    match stream.copy_file(path) {
        Ok(()) => {
            stream.finish(0);
        }
        Err(_) if stream.client_gone => {}
        Err(e) => {
            let _ = tx.blocking_send(Err(Status::internal(format!("reading {}: {e}", path.display()))));
        }
    }
}

/// Stream the committed trajectories of `done` (the sweep's done jobs) that the request
/// selects.
fn send_trajectories(request: &pb::FetchResultsRequest, sweep_dir: &Path, done: &BTreeSet<String>, tx: &Sender) {
    if let Err(e) = trajectories(request, sweep_dir, done, tx) {
        let _ = tx.blocking_send(Err(Status::internal(format!("reading trajectories: {e:#}"))));
    }
}

fn trajectories(
    request: &pb::FetchResultsRequest,
    sweep_dir: &Path,
    done: &BTreeSet<String>,
    tx: &Sender,
) -> results::Result<()> {
    let keys: BTreeSet<&str> = request.job_keys.iter().map(String::as_str).collect();
    let filter = request.cells.clone().unwrap_or_default();
    let wanted = |job: &StoredRows| {
        let matches = |want: &str, have: &str| want.is_empty() || want == have;
        done.contains(&job.key)
            && (keys.is_empty() || keys.contains(job.key.as_str()))
            && matches(&filter.benchmark, &job.cell.benchmark)
            && matches(&filter.benchmark_params, &job.cell.benchmark_params)
            && matches(&filter.algorithm, &job.cell.algorithm)
            && matches(&filter.algorithm_params, &job.cell.algorithm_params)
    };
    // What the done jobs have, to say so if nothing matches (gathered only until something does).
    let (mut benchmarks, mut algorithms, mut n_sent) = (BTreeSet::new(), BTreeSet::new(), 0usize);
    // A damaged part stops nothing but its own jobs: it is named, the rest is sent.
    let mut damaged = Vec::new();
    for path in results::part_files(sweep_dir)? {
        let in_part = match results::read_index(&path) {
            Ok(in_part) => in_part,
            Err(e) => {
                damaged.push(path.clone());
                let part = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
                let chunk = pb::ResultChunk {
                    damaged: Some(pb::DamagedPart { part, error: format!("{e:#}") }),
                    ..Default::default()
                };
                if tx.blocking_send(Ok(chunk)).is_err() {
                    return Ok(());
                }
                continue;
            }
        };
        if n_sent == 0 {
            for job in in_part.iter().filter(|j| done.contains(&j.key)) {
                benchmarks.insert(job.cell.benchmark.as_str().to_owned());
                algorithms.insert(job.cell.algorithm.as_str().to_owned());
            }
        }
        let chosen: Vec<&StoredRows> = in_part.iter().filter(|j| wanted(j)).collect();
        if chosen.is_empty() {
            continue;
        }
        n_sent += chosen.len();
        let mut stream = ChunkWriter::new(tx);
        let written = if chosen.len() == in_part.len() {
            stream.copy_file(&path).map_err(|cause| results::ResultsError::Io {
                action: "reading",
                path: path.clone(),
                cause,
            })
        } else {
            results::encode_jobs(&chosen, &mut stream)
        };
        if stream.client_gone {
            break;
        }
        written?;
        if !stream.finish(chosen.len() as u32) {
            return Ok(());
        }
    }
    if !damaged.is_empty() {
        let unreadable_jobs = unreadable(sweep_dir, &damaged, done, &keys)?;
        let _ = tx.blocking_send(Ok(pb::ResultChunk { unreadable_jobs, ..Default::default() }));
        return Ok(());
    }
    if n_sent == 0 && (!request.job_keys.is_empty() || filter_text(&filter).is_some()) {
        let mut asked: Vec<String> = request.job_keys.iter().map(|k| format!("job `{k}`")).collect();
        asked.extend(filter_text(&filter));
        let join = |names: BTreeSet<String>| names.into_iter().collect::<Vec<_>>().join(", ");
        let message = format!(
            "no finished job of sweep `{}` matches {} (its benchmarks: {}; its algorithms: {})",
            request.sweep_id,
            asked.join(" and "),
            join(benchmarks),
            join(algorithms)
        );
        let _ = tx.blocking_send(Err(Status::not_found(message)));
    }
    Ok(())
}

/// The done jobs (of `keys`, unless empty) that no part but the `damaged` ones holds: a
/// second look at the readable parts' indexes, so that a fetch without damage keeps no set
/// of the jobs it sent.
fn unreadable(
    sweep_dir: &Path,
    damaged: &[std::path::PathBuf],
    done: &BTreeSet<String>,
    keys: &BTreeSet<&str>,
) -> results::Result<Vec<String>> {
    let mut unseen: BTreeSet<&str> =
        done.iter().map(String::as_str).filter(|k| keys.is_empty() || keys.contains(k)).collect();
    for path in results::part_files(sweep_dir)?.iter().filter(|p| !damaged.contains(p)) {
        for job in results::read_index(path).unwrap_or_default() {
            unseen.remove(job.key.as_str());
        }
    }
    Ok(unseen.into_iter().map(str::to_string).collect())
}

/// A cell filter's fields that are set, as `field `value`` text (None: it selects everything).
fn filter_text(filter: &pb::CellFilter) -> Option<String> {
    let fields = [
        (schema::BENCHMARK, &filter.benchmark),
        (schema::BENCHMARK_PARAMS, &filter.benchmark_params),
        (schema::ALGORITHM, &filter.algorithm),
        (schema::ALGORITHM_PARAMS, &filter.algorithm_params),
    ];
    let set: Vec<String> =
        fields.iter().filter(|(_, v)| !v.is_empty()).map(|(name, v)| format!("{name} `{v}`")).collect();
    (!set.is_empty()).then(|| set.join(" and "))
}

/// Bytes written into it go to the client as one file, in messages of [`CHUNK_BYTES`];
/// [`ChunkWriter::finish`] sends the last one, marked as the end of the file. So a file is
/// streamed with one chunk in memory, whatever its size.
struct ChunkWriter<'a> {
    tx: &'a Sender,
    buffer: Vec<u8>,
    /// The client went away: writes fail from then on.
    client_gone: bool,
}

impl<'a> ChunkWriter<'a> {
    fn new(tx: &'a Sender) -> Self {
        ChunkWriter { tx, buffer: Vec::new(), client_gone: false }
    }

    fn send(&mut self, data: Vec<u8>, end_of_file: bool, n_jobs: u32) -> bool {
        let message = pb::ResultChunk { data, end_of_file, n_jobs, ..Default::default() };
        self.client_gone = self.tx.blocking_send(Ok(message)).is_err();
        !self.client_gone
    }

    /// Stream the bytes of the file at `path`.
    fn copy_file(&mut self, path: &Path) -> std::io::Result<()> {
        std::io::copy(&mut std::fs::File::open(path)?, self).map(drop)
    }

    /// Send the rest of the file (maybe nothing) as its last chunk, with the number of jobs
    /// it holds; false when the client has gone.
    fn finish(mut self, n_jobs: u32) -> bool {
        let rest = std::mem::take(&mut self.buffer);
        !self.client_gone && self.send(rest, true, n_jobs)
    }
}

impl std::io::Write for ChunkWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.client_gone {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        self.buffer.extend_from_slice(bytes);
        // Strictly more than a chunk: the last chunk of a file is never empty but for an
        // empty file.
        while self.buffer.len() > CHUNK_BYTES {
            let rest = self.buffer.split_off(CHUNK_BYTES);
            let chunk = std::mem::replace(&mut self.buffer, rest);
            if !self.send(chunk, false, 0) {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
