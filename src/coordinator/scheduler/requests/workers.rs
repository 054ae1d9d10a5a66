//! `Workers`: the registered workers, for the dashboard.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::WorkerInfo;
use armada_proto::ids::SessionId;
use std::time::Instant;

/// The registered workers.
pub(in crate::coordinator::scheduler) struct Workers;

impl Request for Workers {
    type Answer = Vec<WorkerInfo>;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, now: Instant, reply: Reply<Vec<WorkerInfo>>) {
        let _ = reply.send(Ok(s.workers.infos(&s.table.attempts_by_session(), now, s.config.lease_ttl)));
    }
}
