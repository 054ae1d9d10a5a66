//! `SweepKeys`: a sweep's jobs with their keys, at its revision, and its results directory: what a resubmission is planned from off the scheduler.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::jobs;
use armada_proto::ids::{SessionId, SweepId};
use std::path::PathBuf;
use std::time::Instant;

/// The jobs and keys of sweep `sweep`.
pub(in crate::coordinator::scheduler) struct SweepKeys {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
}

impl Request for SweepKeys {
    type Answer = (jobs::SweepKeys, PathBuf);

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<(jobs::SweepKeys, PathBuf)>) {
        let _ = reply.send(Ok((s.sweeps.snapshot(&self.sweep, &s.table), s.sweeps.dir(&self.sweep))));
    }
}
