//! `Fail`: an attempt failed; answers whether its job will be tried again.

use super::{Reply, Request};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::job_table::Cause;
use crate::coordinator::state::replies::CommandError;
use armada_proto::ids::AttemptId;
use armada_proto::ids::SessionId;
use std::time::Instant;

/// Attempt `attempt` of `session` failed with `error`, for `cause`.
pub(in crate::coordinator::scheduler) struct Fail {
    pub(in crate::coordinator::scheduler) session: SessionId,
    pub(in crate::coordinator::scheduler) attempt: AttemptId,
    pub(in crate::coordinator::scheduler) error: String,
    pub(in crate::coordinator::scheduler) cause: Cause,
}

impl Request for Fail {
    type Answer = bool;

    fn session(&self) -> Option<&SessionId> {
        Some(&self.session)
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<bool>) {
        let Fail { session, attempt, error, cause } = self;
        let _ = reply.send(s.fail(&session, attempt, error, cause));
    }
}

/// The longest error message kept for a job, in bytes: what a worker reports is clipped.
pub(in crate::coordinator::scheduler) const MAX_ERROR_BYTES: usize = 4096;

/// `error` clipped to [`MAX_ERROR_BYTES`] (at a character boundary), saying how much was cut.
fn clip(mut error: String) -> String {
    if error.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        let cut = error.len() - end;
        error.truncate(end);
        error.push_str(&format!(" ... ({cut} more bytes)"));
    }
    error
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn fail(
        &mut self,
        session: &SessionId,
        attempt: AttemptId,
        error: String,
        cause: Cause,
    ) -> Result<bool, CommandError> {
        let worker = self.workers.get(session).map_or_else(|_| "a gone worker".to_string(), |(_, w)| w.id.clone());
        let (retry, effects) = self.table.fail(session, attempt, clip(error), cause, &worker)?;
        self.apply(effects);
        Ok(retry)
    }
}
