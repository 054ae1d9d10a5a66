//! `Summary`: what a sweep's summary is built from (with the done jobs' keys when asked).

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::{CommandError, SummaryInputs};
use armada_proto::ids::{SessionId, SweepId};
use std::collections::BTreeSet;
use std::time::Instant;

/// The summary inputs of sweep `sweep`.
pub(in crate::coordinator::scheduler) struct Summary {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
    pub(in crate::coordinator::scheduler) with_keys: bool,
}

impl Request for Summary {
    type Answer = SummaryInputs;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<SummaryInputs>) {
        let _ = reply.send(s.summary_inputs(&self.sweep, self.with_keys));
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn summary_inputs(
        &self,
        id: &str,
        with_keys: bool,
    ) -> Result<SummaryInputs, CommandError> {
        let sweep = self.sweeps.get(id)?;
        let family = self.declaration_of(&sweep.family);
        let counts = self.sweeps.counts(id, &self.table);
        let done_keys = match with_keys {
            true => self.sweeps.done(id, &self.table).map(|j| j.key.to_string()).collect(),
            false => BTreeSet::new(),
        };
        Ok(SummaryInputs {
            sweep_dir: self.results_dir.join(id),
            finished: counts.is_finished(),
            n_done: counts.done,
            done_keys,
            n_failed: counts.failed,
            n_cells: sweep.n_cells,
            metrics: family.map_or(&[], |f| f.metrics),
            headline: family.map_or(&[], |f| f.headline_metrics),
            axes: family.map_or(&[], |f| f.summary_axes),
        })
    }
}
