//! `Summarized` (from the summarizer): the summary files of a sweep's live summaries, of one generation, are written.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use armada_proto::ids::{SessionId, SweepId};
use std::time::Instant;
use tracing::warn;

/// The summaries of sweep `sweep`, generation `generation`, are written.
pub(in crate::coordinator::scheduler) struct Summarized {
    pub(in crate::coordinator::scheduler) sweep: SweepId,
    pub(in crate::coordinator::scheduler) generation: u64,
}

impl Request for Summarized {
    type Answer = ();

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, _reply: Reply<()>) {
        s.summarized(&self.sweep, self.generation);
    }
}

impl Scheduler {
    /// The live summaries of a sweep wrote its files: the store remembers it, unless a
    /// resubmission started newer ones.
    fn summarized(&mut self, id: &str, generation: u64) {
        if self.sweeps.summarized(id, generation) {
            if let Err(e) = self.store.set_summarized(id) {
                warn!(error = %format!("{e:#}"), "store error");
            }
        }
    }
}
