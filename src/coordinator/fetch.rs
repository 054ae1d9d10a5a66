//! `FetchResults`: a sweep's Parquet results streamed to a client, in chunks of at most
//! [`CHUNK_BYTES`] (under gRPC's default 4 MiB message limit).
//!
//! A summary table is its file's bytes, or while the sweep runs its live table encoded. Trajectories are the sweep's parts, sent as they
//! are when every job in a part is wanted (no re-encoding), and otherwise the wanted jobs
//! of a part re-encoded into a file of their own, with its index. Runs on the blocking
//! pool, one file at a time, so memory is one file's worth whatever the sweep's size.

use crate::results::{self, StoredRows};
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
}

impl SummaryTable {
    pub fn file_name(&self) -> String {
        match self {
            SummaryTable::Summary => results::SUMMARY_FILE.to_string(),
            SummaryTable::Final => results::FINAL_FILE.to_string(),
            SummaryTable::Along(column) => results::along_file(column),
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
        Table::Unspecified => {
            Err(Status::invalid_argument("table: give TRAJECTORIES, SUMMARY, FINAL or ALONG (with `along`)"))
        }
        Table::Trajectories => Ok(Wanted::Trajectories),
        Table::Summary => Ok(Wanted::Summary(SummaryTable::Summary)),
        Table::Final => Ok(Wanted::Summary(SummaryTable::Final)),
        Table::Along if request.along.is_empty() => Err(Status::invalid_argument("along: name the column")),
        Table::Along => Ok(Wanted::Summary(SummaryTable::Along(request.along.clone()))),
    }
}

/// Stream what `source` holds.
pub fn send(source: Source, request: &pb::FetchResultsRequest, sweep_dir: &Path, done: &BTreeSet<String>, tx: &Sender) {
    match source {
        Source::Trajectories => send_trajectories(request, sweep_dir, done, tx),
        Source::File(path) => send_file(&path, tx),
        Source::Frame(mut frame) => match results::parquet_bytes(&mut frame) {
            Ok(bytes) => {
                send_bytes(&bytes, 0, tx);
            }
            Err(e) => {
                let _ = tx.blocking_send(Err(Status::internal(format!("encoding the table: {e:#}"))));
            }
        },
    }
}

/// Stream one file's bytes.
fn send_file(path: &Path, tx: &Sender) {
    match std::fs::read(path) {
        Ok(bytes) => {
            send_bytes(&bytes, 0, tx);
        }
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
    for path in results::part_files(sweep_dir)? {
        let in_part = results::read_index(&path)?;
        let chosen: Vec<&StoredRows> = in_part.iter().filter(|j| wanted(j)).collect();
        if chosen.is_empty() {
            continue;
        }
        let bytes =
            if chosen.len() == in_part.len() { results::read_bytes(&path)? } else { results::encode_jobs(&chosen)? };
        if !send_bytes(&bytes, chosen.len() as u32, tx) {
            break;
        }
    }
    Ok(())
}

/// Send `bytes` as one file in chunks; false when the client has gone.
fn send_bytes(bytes: &[u8], n_jobs: u32, tx: &Sender) -> bool {
    let mut chunks = bytes.chunks(CHUNK_BYTES).peekable();
    if chunks.peek().is_none() {
        return tx.blocking_send(Ok(pb::ResultChunk { data: Vec::new(), end_of_file: true, n_jobs })).is_ok();
    }
    while let Some(chunk) = chunks.next() {
        let end_of_file = chunks.peek().is_none();
        let message =
            pb::ResultChunk { data: chunk.to_vec(), end_of_file, n_jobs: if end_of_file { n_jobs } else { 0 } };
        if tx.blocking_send(Ok(message)).is_err() {
            return false;
        }
    }
    true
}
