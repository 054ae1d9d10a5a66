//! `Watch`: a sweep's status now, and its events from now on.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::scheduler::WATCH_EVENTS;
use crate::coordinator::state::replies::{SweepEvent, SweepStatus};
use armada_proto::ids::{SessionId, SweepId};
use std::time::Instant;
use tokio::sync::broadcast;

/// Watch sweep `sweep`.
pub(in crate::coordinator::scheduler) struct Watch {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
}

impl Request for Watch {
    type Answer = (SweepStatus, broadcast::Receiver<SweepEvent>);

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<(SweepStatus, broadcast::Receiver<SweepEvent>)>) {
        let Watch { sweep } = self;
        let answer = s.status(&sweep).map(|status| {
            let events = s.watchers.entry(sweep).or_insert_with(|| broadcast::channel(WATCH_EVENTS).0);
            (status, events.subscribe())
        });
        let _ = reply.send(answer);
    }
}
