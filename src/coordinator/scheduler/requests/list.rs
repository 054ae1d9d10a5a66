//! `List`: every sweep's status, counts only (a list of many sweeps with many failures stays small; `Status` pages one sweep's failures).

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::SweepStatus;
use crate::coordinator::state::sweeps::FailurePage;
use armada_proto::ids::SessionId;
use std::time::Instant;

/// Every sweep's status.
pub(in crate::coordinator::scheduler) struct List;

impl Request for List {
    type Answer = Vec<SweepStatus>;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Vec<SweepStatus>>) {
        let counts = FailurePage { offset: 0, limit: 0 };
        let _ = reply.send(s.sweeps.ids().map(|id| s.status_page(id, counts)).collect());
    }
}
