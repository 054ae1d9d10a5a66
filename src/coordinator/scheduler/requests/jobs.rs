//! `Jobs`: the jobs of a sweep that a filter selects (at most a limit), for the dashboard.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::{JobFilter, JobInfo};
use armada_proto::ids::{SessionId, SweepId};
use std::time::Instant;

/// The jobs of sweep `sweep` that `filter` selects, at most `limit`.
pub(in crate::coordinator::scheduler) struct Jobs {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
    pub(in crate::coordinator::scheduler) filter: JobFilter,
    pub(in crate::coordinator::scheduler) limit: usize,
}

impl Request for Jobs {
    type Answer = Vec<JobInfo>;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Vec<JobInfo>>) {
        let _ = reply.send(s.sweeps.job_infos(&self.sweep, &s.table, &self.filter, self.limit));
    }
}
