//! The coordinator's live summaries (see [`crate::results::live`]): one [`LiveSweep`] per
//! sweep whose summary files are not written yet, shared by the scheduler (which settles
//! jobs), the committer (which adds the moments of the records it writes) and the service
//! (which answers with the current tables without reading a trajectory).
//!
//! One summarizer task does the slow work on the blocking pool, one piece at a time so
//! that a core stays free for the data path: locating a sweep's done jobs and reading those
//! of unfinished cells (at submission and at start-up), the exact rows of each cell whose
//! jobs are all settled, and the sweep's files once every cell is exact.

use super::super::state::replies::{CommandError, SummaryInputs};
use crate::results::live::{self, CellMoments, LiveSweep};
pub use crate::results::live::{cell_counts, JobTally};
use crate::results::{self, Cell, StoredRows};
use armada_core::MetricDef;
use dashmap::DashMap;
use polars::prelude::DataFrame;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

/// The state of a sweep's summary files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// Some cell has unsettled jobs or is being summarized.
    Pending,
    /// Written from every settled job (`Ok(false)`: no job is done, so there is no file).
    Done(Result<bool, String>),
}

/// One sweep's live summaries.
pub struct SweepSummaries {
    pub sweep: String,
    /// Distinguishes this opening from a later one of the same sweep (a resubmission).
    pub generation: u64,
    pub sweep_dir: PathBuf,
    pub axes: &'static [&'static str],
    live: Mutex<LiveSweep>,
    written: watch::Sender<Written>,
}

impl SweepSummaries {
    pub fn lock(&self) -> MutexGuard<'_, LiveSweep> {
        // A panic while holding the lock leaves consistent counts (every method is one
        // update), so a poisoned lock is used as is.
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait until the summary files are written.
    pub async fn written(&self) -> Result<bool, String> {
        let mut rx = self.written.subscribe();
        loop {
            if let Written::Done(result) = &*rx.borrow_and_update() {
                return result.clone();
            }
            if rx.changed().await.is_err() {
                return Err("the coordinator is shutting down".into());
            }
        }
    }

    pub fn state(&self) -> Written {
        self.written.borrow().clone()
    }
}

enum Work {
    /// Locate the done jobs of a new sweep entry, and read those of unfinished cells.
    Seed(Arc<SweepSummaries>, BTreeSet<String>),
    /// Summarize the complete cells of a sweep, then write its files if every cell is exact.
    Cells(Arc<SweepSummaries>),
}

type Sweeps = Arc<DashMap<String, Arc<SweepSummaries>>>;
type OnWritten = Arc<dyn Fn(&str, u64) + Send + Sync>;

/// The live summaries of every sweep that has them; cheap to clone.
#[derive(Clone)]
pub struct LiveSummaries {
    sweeps: Sweeps,
    work: mpsc::UnboundedSender<Work>,
    generations: Arc<AtomicU64>,
}

/// What a sweep's summaries start from.
pub struct Opening {
    pub sweep: String,
    pub sweep_dir: PathBuf,
    pub metrics: &'static [MetricDef],
    pub axes: &'static [&'static str],
    /// Every cell of the sweep: its numbers of jobs, of settled ones and of failed ones
    /// (`live::cell_counts`).
    pub cells: Vec<(Cell, JobTally)>,
    /// The keys of the done ones.
    pub done: BTreeSet<String>,
    /// Why its summaries are not to be computed (see `held_at_start`): they end as this
    /// error, and its jobs still run and commit.
    pub held: Option<String>,
}

/// At start-up: why a sweep's summaries are held, when the coordinator before this one died
/// computing them (its marker is left in the sweep's directory; a live re-opening by this
/// coordinator is not a death, so only a start asks). Retrying at every start would take the
/// whole coordinator down each time.
pub fn held_at_start(sweep_dir: &std::path::Path) -> Option<String> {
    let marker = sweep_dir.join(results::SUMMARIZING_MARKER);
    marker.exists().then(|| {
        format!(
            "the previous coordinator stopped while summarizing this sweep (out of memory?), so it is not \
             summarized again automatically; run `armada summarize {}` where memory allows, or delete {} to \
             let the coordinator try again",
            sweep_dir.display(),
            marker.display()
        )
    })
}

impl LiveSummaries {
    /// Start the summarizer; `summarized` is called (on a blocking thread) with each sweep
    /// and generation whose files were written, for the store to remember it. A sweep's
    /// entry is dropped once its files are written.
    pub fn start(summarized: impl Fn(&str, u64) + Send + Sync + 'static) -> LiveSummaries {
        let (work, rx) = mpsc::unbounded_channel();
        let sweeps: Sweeps = Arc::new(DashMap::new());
        tokio::spawn(summarizer(rx, sweeps.clone(), Arc::new(summarized)));
        LiveSummaries { sweeps, work, generations: Arc::new(AtomicU64::new(1)) }
    }

    /// (Re)start a sweep's summaries from the state of its jobs, replacing any earlier
    /// ones; returns the generation of the new ones.
    pub fn open(&self, opening: Opening) -> u64 {
        let Opening { sweep, sweep_dir, metrics, axes, cells, done, held } = opening;
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(SweepSummaries {
            sweep: sweep.clone(),
            generation,
            sweep_dir,
            axes,
            live: Mutex::new(LiveSweep::new(metrics, cells)),
            written: watch::channel(Written::Pending).0,
        });
        match held {
            Some(why) => {
                tracing::error!(sweep = %sweep, "{why}");
                entry.written.send_replace(Written::Done(Err(why)));
            }
            None => {
                let _ = self.work.send(Work::Seed(entry.clone(), done));
            }
        }
        self.sweeps.insert(sweep, entry);
        generation
    }

    /// Drop a sweep's live summaries (it was deleted).
    pub fn close(&self, sweep: &str) {
        self.sweeps.remove(sweep);
    }

    pub fn get(&self, sweep: &str) -> Option<Arc<SweepSummaries>> {
        self.sweeps.get(sweep).map(|e| e.clone())
    }

    /// Jobs of `sweep` were committed at `locations` (a part's).
    pub fn committed(&self, sweep: &str, locations: Vec<StoredRows>) {
        if let Some(entry) = self.get(sweep) {
            if entry.lock().committed(locations) {
                let _ = self.work.send(Work::Cells(entry));
            }
        }
    }

    /// A job failed for good (`failed`) or was cancelled.
    pub fn settled_without_result(&self, sweep: &str, cell: &Cell, failed: bool) {
        if let Some(entry) = self.get(sweep) {
            if entry.lock().settled_without_result(cell, failed) {
                let _ = self.work.send(Work::Cells(entry));
            }
        }
    }

    /// Add the moments of jobs just written.
    pub fn add_moments(&self, sweep: &str, moments: &[(Arc<Cell>, CellMoments)]) {
        if let Some(entry) = self.get(sweep) {
            let mut live = entry.lock();
            for (cell, m) in moments {
                live.add_moments(cell, m);
            }
        }
    }
}

async fn summarizer(mut inbox: mpsc::UnboundedReceiver<Work>, sweeps: Sweeps, summarized: OnWritten) {
    while let Some(work) = inbox.recv().await {
        let end = Ending { sweeps: sweeps.clone(), summarized: summarized.clone() };
        let done = tokio::task::spawn_blocking(move || match work {
            Work::Seed(entry, done) => {
                if let Err(e) = seed(&entry, &done) {
                    warn!(sweep = %entry.sweep, error = %format!("{e:#}"), "live summaries failed");
                    end.finish(&entry, Err(format!("{e:#}")));
                    return;
                }
                summarize_cells(&entry, &end);
            }
            Work::Cells(entry) => summarize_cells(&entry, &end),
        })
        .await;
        match done {
            Err(e) if e.is_panic() => warn!(error = %e, "the summarizer panicked"),
            // The runtime is shutting down: the work was cancelled, not broken.
            Err(e) => tracing::debug!(error = %e, "summarizer work cancelled"),
            Ok(()) => {}
        }
    }
}

/// Locate the done jobs, and fill in the moments of the cells that are not complete.
fn seed(entry: &SweepSummaries, done: &BTreeSet<String>) -> results::Result<()> {
    let located = live::locate(&entry.sweep_dir, done)?;
    let (incomplete, floats) = {
        let mut live = entry.lock();
        live.seed(located);
        (live.incomplete_jobs(), live.floats().clone())
    };
    for (cell, jobs) in incomplete {
        let mut moments = CellMoments::of(cell.horizon);
        let refs: Vec<&StoredRows> = jobs.iter().collect();
        results::for_each_job(&refs, |job, df, first| {
            let ends = first + df.height() == job.rows;
            moments.add_rows(&floats, &df, ends)
        })?;
        entry.lock().add_moments(&cell, &moments);
    }
    Ok(())
}

/// The exact rows of every complete cell; then the files, once every cell is exact.
fn summarize_cells(entry: &Arc<SweepSummaries>, end: &Ending) {
    if entry.state() != Written::Pending {
        return;
    }
    let work = entry.lock().take_complete();
    // Marked while at work, so that a coordinator that dies here (out of memory) is not
    // brought down again by the same work at its next start (see `LiveSummaries::open`).
    let marker = Marker::set(&entry.sweep_dir, !work.is_empty());
    for cell in work {
        let refs: Vec<&StoredRows> = cell.jobs.iter().collect();
        match results::summarize_cell(&cell.cell, &refs, entry.axes, &entry.sweep_dir) {
            Ok(summary) => entry.lock().set_exact(&cell.cell, summary),
            Err(e) => {
                warn!(sweep = %entry.sweep, error = %format!("{e:#}"), "summarizing a cell failed");
                end.finish(entry, Err(format!("{e:#}")));
                return;
            }
        }
    }
    let live = entry.lock();
    if !live.is_exact() {
        return;
    }
    let cells = live.exact_cells();
    let result = if cells.iter().all(|c| c.n_jobs == 0) {
        Ok(false)
    } else {
        results::write_summaries(&entry.sweep_dir, &cells, entry.axes).map(|report| {
            info!(sweep = %entry.sweep, jobs = report.n_jobs, "summaries written");
            true
        })
    };
    drop(live);
    end.finish(entry, result.map_err(|e| format!("{e:#}")));
    drop(marker);
}

/// `<sweep>/armada.summarizing` while the summarizer works on the sweep: removed when the
/// work ends (an error included), left behind only by a process that died at it.
struct Marker(Option<PathBuf>);

impl Marker {
    fn set(sweep_dir: &std::path::Path, needed: bool) -> Marker {
        let path = sweep_dir.join(results::SUMMARIZING_MARKER);
        // The sweep's directory exists once a part is written, and only done jobs are summarized.
        Marker((needed && std::fs::write(&path, b"").is_ok()).then_some(path))
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What happens when a sweep's summaries are settled.
struct Ending {
    sweeps: Sweeps,
    summarized: OnWritten,
}

impl Ending {
    /// Tell the waiters; once written, tell the store and drop the entry (unless a newer
    /// opening replaced it).
    fn finish(&self, entry: &Arc<SweepSummaries>, result: Result<bool, String>) {
        if result.is_ok() {
            (self.summarized)(&entry.sweep, entry.generation);
            self.sweeps.remove_if(&entry.sweep, |_, current| Arc::ptr_eq(current, entry));
        }
        entry.written.send_replace(Written::Done(result));
    }
}

/// A sweep's summary tables as they stand, for GetSummary and FetchResults.
pub enum Current {
    /// It is running: its live tables, and how many of its cells are exact.
    Live { summary: DataFrame, last: DataFrame, n_cells: u32, n_exact: u32 },
    /// It has finished and its summary files are written.
    Files { n_cells: u32 },
    /// No job is done: there is no table.
    Nothing,
}

/// Where `sweep` stands; once it has finished, waits for its files.
pub async fn current(live: &LiveSummaries, sweep: &str, inputs: &SummaryInputs) -> Result<Current, CommandError> {
    let n_cells = inputs.n_cells;
    if inputs.n_done == 0 {
        return Ok(Current::Nothing);
    }
    let Some(entry) = live.get(sweep) else {
        // Finished and written before this coordinator started, or since.
        return Ok(Current::Files { n_cells });
    };
    if inputs.finished {
        return match entry.written().await {
            Ok(true) => Ok(Current::Files { n_cells }),
            Ok(false) => Ok(Current::Nothing),
            Err(e) => Err(CommandError::internal(format!("summarizing sweep `{sweep}`: {e}"))),
        };
    }
    let tables = tokio::task::spawn_blocking(move || {
        let live = entry.lock();
        let (n_exact, n_cells) = live.progress();
        live.tables().map(|t| t.map(|(summary, last)| (summary, last, n_cells as u32, n_exact as u32)))
    })
    .await
    .map_err(|e| CommandError::internal(e.to_string()))?
    .map_err(|e| CommandError::internal(format!("the live summary of sweep `{sweep}`: {e:#}")))?;
    Ok(match tables {
        Some((summary, last, n_cells, n_exact)) => Current::Live { summary, last, n_cells, n_exact },
        None => Current::Nothing,
    })
}
