//! A resolving sweep's round, judged off the scheduler once nothing of it is queued or
//! running: its comparisons from the values its done jobs reached ([`results::rounds`]),
//! written to `comparisons.parquet`, and the next round as a submission of the sweep with
//! the added seeds (or none: the sweep is resolved, or at its limits).
//!
//! The sweep's file is read again, so that the next round's jobs are made exactly as the
//! first round's were (specs, keys, extensions); what the round adds depends only on the
//! sweep's jobs and results, so judging again after a restart decides the same.

use crate::coordinator::state::jobs::Submission;
use crate::results::compare::Verdict;
use crate::results::rounds::{self, CellSoFar, Judgement, ReadValues, Spent};
use crate::results::Cell;
use crate::sweep;
use armada_core::{JobSpec, Registry, ValidJob};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What judging a round needs from the scheduler.
pub struct RoundInput {
    pub sweep: String,
    /// A resolving sweep's file.
    pub source: Arc<str>,
    pub registry: Arc<Registry>,
    pub sweep_dir: PathBuf,
    /// The seeds each cell of the sweep has (`0..n`).
    pub seeds: HashMap<Cell, u64>,
    /// The keys of its done jobs.
    pub done: BTreeSet<String>,
    /// Its jobs, settled or not.
    pub jobs: u64,
    /// The values its earlier rounds read.
    pub read: Arc<Mutex<ReadValues>>,
}

/// A judged round.
pub struct RoundOutcome {
    pub judgement: Judgement,
    /// Of its comparisons: how many are settled (ordered or equivalent), still open, and
    /// left unresolved.
    pub settled: usize,
    pub open: usize,
    pub unresolved: usize,
    /// The next round (the sweep with the added seeds); none when nothing is added.
    pub next: Option<Submission>,
}

/// Judge the round of a resolving sweep and make its next one.
pub fn judge_round(input: RoundInput) -> anyhow::Result<RoundOutcome> {
    let RoundInput { sweep, source, registry, sweep_dir, seeds, done, jobs, read } = input;
    let parsed = sweep::parse_sweep_cells(&source, &sweep, &registry, usize::MAX)
        .map_err(|e| anyhow::anyhow!("the sweep's file no longer reads: {e}"))?;
    let rule = parsed.resolve.clone().ok_or_else(|| anyhow::anyhow!("the sweep's file has no [resolve] table"))?;
    let values = {
        let mut read = read.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rounds::job_values(&sweep_dir, &rule.metric, rule.step, &done, &mut read)?
    };
    let mut spent = Spent { jobs, ..Spent::default() };
    for v in values.values() {
        spent.job_ms += v.ms;
        spent.timed += 1;
    }
    let cells: Vec<CellSoFar> = parsed
        .cells
        .iter()
        .map(|(job, keys)| {
            let cell = Cell::of(job);
            let n = seeds.get(&cell).copied().unwrap_or(0);
            let values = (0..n)
                .filter_map(|seed| values.get(&keys.key(seed).0).and_then(|v| v.value).map(|x| (seed, x)))
                .collect();
            CellSoFar { cell, seeds: n, values }
        })
        .collect();
    let judgement = rounds::judge(&rule, &cells, spent);
    rounds::write_comparisons(&sweep_dir, &rule, &cells, &judgement)?;
    let count = |v: &[Verdict]| judgement.comparisons.iter().filter(|c| v.contains(&c.verdict)).count();
    let settled = count(&[Verdict::Less, Verdict::Greater, Verdict::Equivalent]);
    let (open, unresolved) = (count(&[Verdict::Open]), count(&[Verdict::Unresolved]));
    let next = if judgement.add.is_empty() {
        None
    } else {
        // The whole sweep, each cell to its new count of seeds: a round drops nothing.
        let mut until: Vec<u64> = cells.iter().map(|c| c.seeds).collect();
        for (i, added) in &judgement.add {
            until[*i] = added.end;
        }
        let jobs = parsed.cells.iter().zip(until).flat_map(|((job, keys), n)| {
            (0..n).map(move |seed| ValidJob { spec: JobSpec { seed, ..job.spec.clone() }, key: keys.key(seed) })
        });
        let family = registry.family(&parsed.family)?.reference();
        let mut submission = Submission::with_extensions(sweep, family, jobs, &registry)?;
        submission.source = Some(source);
        submission.round = true;
        Some(submission)
    };
    Ok(RoundOutcome { judgement, settled, open, unresolved, next })
}
