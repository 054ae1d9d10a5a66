//! `Status`: a sweep's status, with a page of its failures and the writes failing that hold it up.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::{CommandError, SweepStatus};
use crate::coordinator::state::sweeps::FailurePage;
use armada_proto::ids::{SessionId, SweepId};
use std::time::Instant;

/// The status of sweep `sweep`, with the page `failures` of its failures.
pub(in crate::coordinator::scheduler) struct Status {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
    pub(in crate::coordinator::scheduler) failures: FailurePage,
}

impl Request for Status {
    type Answer = SweepStatus;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<SweepStatus>) {
        let _ = reply.send(s.status_page(&self.sweep, self.failures));
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn status(&self, id: &str) -> Result<SweepStatus, CommandError> {
        self.status_page(id, FailurePage::default())
    }

    /// A sweep's status with one page of its failures and the writes failing that hold it up.
    pub(in crate::coordinator::scheduler) fn status_page(
        &self,
        id: &str,
        page: FailurePage,
    ) -> Result<SweepStatus, CommandError> {
        let mut status = self.sweeps.status(id, page, &self.table)?;
        status.write_troubles = self.metrics.writes.affecting(id);
        Ok(status)
    }
}
