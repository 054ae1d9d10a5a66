//! `Delete`: remove a settled sweep from the store; answers its directory and job count.

use super::{Reply, Request};
use crate::coordinator::scheduler::internal;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::CommandError;
use armada_proto::ids::{SessionId, SweepId};
use std::path::PathBuf;
use std::time::Instant;
use tracing::info;

/// Delete sweep `sweep`.
pub(in crate::coordinator::scheduler) struct Delete {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
}

impl Request for Delete {
    type Answer = (PathBuf, u32);

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<(PathBuf, u32)>) {
        let _ = reply.send(s.delete(&self.sweep));
    }
}

impl Scheduler {
    /// Forget a sweep with nothing queued or running: its jobs, attempts and live
    /// summaries, here and in the store (its results are the caller's to remove).
    pub(in crate::coordinator::scheduler) fn delete(&mut self, id: &str) -> Result<(PathBuf, u32), CommandError> {
        self.sweeps.deletable(id, self.storing.as_ref().map(|s| s.ingest.name.as_str()), &self.table)?;
        self.store.delete_sweep(id).map_err(internal)?;
        let (effects, n_jobs) = self.sweeps.delete(id, &mut self.table)?;
        self.watchers.remove(id);
        self.round_values.remove(id);
        self.apply(effects);
        info!(sweep = %id, jobs = n_jobs, "sweep deleted");
        Ok((self.results_dir.join(id), n_jobs))
    }
}
