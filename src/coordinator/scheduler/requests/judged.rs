//! `Judged` (from a round's judging task): a resolving sweep's round is judged; its next
//! round is submitted, or the sweep is announced finished.

use super::{tell, Reply, Request};
use crate::coordinator::durable::rounds::{self, RoundInput, RoundOutcome};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::SweepEvent;
use crate::coordinator::state::stored::JobState;
use crate::coordinator::state::sweeps::FailurePage;
use crate::results::Cell;
use armada_proto::ids::{SessionId, SweepId};
use std::collections::HashMap;
use std::time::Instant;
use tokio::sync::oneshot;
use tracing::{info, warn};

/// Sweep `sweep`'s round, judged at its revision `revision`.
pub(in crate::coordinator::scheduler) struct Judged {
    sweep: SweepId,
    revision: u64,
    outcome: Result<RoundOutcome, String>,
}

impl Request for Judged {
    type Answer = ();

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, _reply: Reply<()>) {
        s.judged(self);
    }
}

impl Scheduler {
    /// Judge the round of resolving sweep `id`, which has nothing queued or running, off
    /// the scheduler (it reads the sweep's parts); `Judged` comes back.
    pub(in crate::coordinator::scheduler) fn judge_round(&mut self, id: &str, source: std::sync::Arc<str>) {
        let Ok(sweep) = self.sweeps.get(id) else { return };
        let (revision, sweep_id) = (sweep.revision, sweep.id.clone());
        let mut seeds: HashMap<Cell, u64> = HashMap::new();
        let mut done = std::collections::BTreeSet::new();
        for &i in self.sweeps.jobs(id) {
            let job = self.table.job(i);
            let n = seeds.entry(job.cell().clone()).or_default();
            *n = (*n).max(job.seed + 1);
            if job.state == JobState::Done {
                done.insert(job.key.to_string());
            }
        }
        let input = RoundInput {
            sweep: id.to_string(),
            source,
            registry: self.catalog.get(),
            sweep_dir: self.results_dir.join(id),
            seeds,
            done,
            jobs: self.sweeps.jobs(id).len() as u64,
            read: self.round_values.entry(sweep_id.clone()).or_default().clone(),
        };
        self.sweeps.set_judging(id, true);
        let mailbox = self.mailbox.clone();
        tokio::task::spawn_blocking(move || {
            let outcome = rounds::judge_round(input).map_err(|e| format!("{e:#}"));
            if let Some(mailbox) = mailbox.upgrade() {
                let _ = mailbox.blocking_send(tell(Judged { sweep: sweep_id, revision, outcome }));
            }
        });
    }

    /// A round is judged: unless the sweep changed meanwhile (a resubmission, a deletion),
    /// its next round is submitted, or it is announced finished.
    fn judged(&mut self, judged: Judged) {
        let Judged { sweep, revision, outcome } = judged;
        let Ok(current) = self.sweeps.get(&sweep) else { return };
        if current.revision != revision || current.cancelled {
            return;
        }
        match outcome {
            Ok(RoundOutcome { next: Some(submission), settled, open, .. }) => {
                info!(sweep = %sweep, settled, open, jobs = submission.jobs.len(), "round judged: seeds added where comparisons are open");
                // Its answer goes nowhere: the watchers hear of the round from the snapshot
                // sent once it is stored.
                self.submit(submission, oneshot::channel().0);
            }
            Ok(RoundOutcome { next: None, settled, unresolved, judgement, .. }) => {
                let over_budget = judgement.over_budget;
                info!(sweep = %sweep, settled, unresolved, over_budget, "sweep resolved: no comparison is open");
                self.announce(&sweep);
            }
            Err(e) => {
                warn!(sweep = %sweep, error = %e, "the sweep's round could not be judged: it stops at this round");
                self.announce(&sweep);
            }
        }
    }

    /// Tell the sweep's watchers it is finished.
    pub(in crate::coordinator::scheduler) fn announce(&mut self, id: &str) {
        self.sweeps.set_judging(id, false);
        if let Ok(status) = self.sweeps.status(id, FailurePage::default(), &self.table) {
            self.emit(id, SweepEvent::SweepFinished(status));
        }
    }
}
