//! `Heartbeat`: renew the leases of a session's attempts from when the heartbeat came (and note those started); answers the attempts to abandon. An answer its caller no longer waits for is kept for the session's next heartbeat (see `SchedulerHandle::heartbeat`).

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::CommandError;
use armada_proto::ids::AttemptId;
use armada_proto::ids::SessionId;
use std::time::Instant;

/// Renew the leases of `attempts` (of which `started` have started) from `heard`.
pub(in crate::coordinator::scheduler) struct Heartbeat {
    pub(in crate::coordinator::scheduler) session: SessionId,
    pub(in crate::coordinator::scheduler) attempts: Vec<AttemptId>,
    pub(in crate::coordinator::scheduler) started: Vec<AttemptId>,
    pub(in crate::coordinator::scheduler) heard: Instant,
}

impl Request for Heartbeat {
    type Answer = Vec<AttemptId>;

    fn session(&self) -> Option<&SessionId> {
        Some(&self.session)
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Vec<AttemptId>>) {
        let Heartbeat { session, attempts, started, heard } = self;
        let answer = s.heartbeat(&session, attempts, &started, heard);
        if let Err(Ok(abandon)) = reply.send(answer) {
            // Its caller stopped waiting: kept for the session's next heartbeat.
            let mut late = s.late_abandons.lock().unwrap_or_else(|e| e.into_inner());
            if abandon.is_empty() {
                late.remove(&session);
            } else {
                late.insert(session, abandon);
            }
        }
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn heartbeat(
        &mut self,
        session: &SessionId,
        attempts: Vec<AttemptId>,
        started: &[AttemptId],
        heard: std::time::Instant,
    ) -> Result<Vec<AttemptId>, CommandError> {
        self.workers.get(session)?;
        // Lease deadlines live in memory only: a restart voids every running attempt anyway,
        // so a heartbeat never waits on the store.
        let abandon = self.table.heartbeat(session, attempts, heard)?;
        self.table.started(session, started);
        Ok(abandon)
    }
}
