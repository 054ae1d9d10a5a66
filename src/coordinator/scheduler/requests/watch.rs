//! `Watch`: a sweep's status now, and its events from now on.

use super::{Reply, Request};
use crate::coordinator::scheduler::{Scheduler, Watchers};
use crate::coordinator::state::replies::{SweepEvent, SweepStatus};
use armada_proto::ids::{SessionId, SweepId};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::broadcast;

/// Watch sweep `sweep`, every job's events (`in_detail`) or the counts after each batch.
pub(in crate::coordinator::scheduler) struct Watch {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
    pub(in crate::coordinator::scheduler) in_detail: bool,
}

/// A watch's start: the sweep's status now, its events from now on, and (watching in
/// detail) the ticket whose holder is counted as wanting every job's events.
pub struct Watching {
    pub status: SweepStatus,
    pub events: broadcast::Receiver<SweepEvent>,
    pub in_detail: Option<Arc<()>>,
}

impl Request for Watch {
    type Answer = Watching;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Watching>) {
        let Watch { sweep, in_detail } = self;
        let answer = s.status(&sweep).map(|status| {
            let watchers = s.watchers.entry(sweep).or_insert_with(Watchers::new);
            let in_detail = in_detail.then(|| watchers.in_detail.clone());
            Watching { status, events: watchers.events.subscribe(), in_detail }
        });
        let _ = reply.send(answer);
    }
}
