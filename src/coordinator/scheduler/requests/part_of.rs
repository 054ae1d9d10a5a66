//! `PartOf`: the part file that holds a done job's trajectory (none while it is not done).

use super::{Reply, Request};
use crate::coordinator::scheduler::internal;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::CommandError;
use crate::results;
use armada_proto::ids::{SessionId, SweepId};
use std::path::PathBuf;
use std::time::Instant;

/// The part holding the trajectory of job `key` of sweep `sweep`.
pub(in crate::coordinator::scheduler) struct PartOf {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
    pub(in crate::coordinator::scheduler) key: String,
}

impl Request for PartOf {
    type Answer = Option<PathBuf>;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Option<PathBuf>>) {
        let _ = reply.send(s.part_of(&self.sweep, &self.key));
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn part_of(
        &self,
        sweep: &str,
        key: &str,
    ) -> Result<Option<PathBuf>, CommandError> {
        self.sweeps.get(sweep)?;
        let part = self.store.part_of(sweep, key).map_err(internal)?;
        Ok(part.map(|p| results::trajectories_dir(&self.results_dir.join(sweep)).join(p)))
    }
}
