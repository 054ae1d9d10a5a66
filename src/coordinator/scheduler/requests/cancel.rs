//! `Cancel`: cancel a sweep's queued and running jobs; answers its status.

use super::{Reply, Request};
use crate::coordinator::scheduler::internal;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::{CommandError, SweepStatus};
use armada_proto::ids::{SessionId, SweepId};
use std::time::Instant;
use tracing::info;

/// Cancel sweep `sweep`.
pub(in crate::coordinator::scheduler) struct Cancel {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
}

impl Request for Cancel {
    type Answer = SweepStatus;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<SweepStatus>) {
        let _ = reply.send(s.cancel(&self.sweep));
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn cancel(&mut self, id: &str) -> Result<SweepStatus, CommandError> {
        self.sweeps.get(id)?;
        self.store.cancel(id).map_err(internal)?;
        let effects = self.sweeps.cancel(id, &mut self.table)?;
        info!(sweep = %id, "sweep cancelled");
        self.apply(effects);
        self.status(id)
    }
}
