//! `Declare`: a client declares a family ahead of its workers (kept in the store first).

use super::{Reply, Request};
use crate::coordinator::durable::catalog::{Decision, Declarer};
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::declared::Checked;
use crate::coordinator::state::replies::{CommandError, Declared};
use armada_proto::ids::SessionId;
use std::time::Instant;
use tracing::info;

/// Declare a family, checked already.
pub(in crate::coordinator::scheduler) struct Declare {
    pub(in crate::coordinator::scheduler) declaration: Checked,
    pub(in crate::coordinator::scheduler) declarer: Declarer,
}

impl Request for Declare {
    type Answer = Declared;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Declared>) {
        let _ = reply.send(s.declare(self.declaration, &self.declarer));
    }
}

impl Scheduler {
    /// Keep a family's declaration (in the store first), unless the same one is kept.
    pub(in crate::coordinator::scheduler) fn declare(
        &mut self,
        declaration: Checked,
        declarer: &Declarer,
    ) -> Result<Declared, CommandError> {
        let (checked, restyled) = match self.catalog.decide(declaration, declarer)? {
            Decision::Known { digest } => return Ok(Declared { digest, created: false }),
            Decision::Restyled(checked) => (checked, true),
            Decision::New(checked) => (checked, false),
        };
        let Checked { info, digest } = &*checked;
        let encoded = prost::Message::encode_to_vec(info);
        // The coordinator's trouble (a full disk, say), shown where operators look: the
        // caller is told to try again later, not that it erred.
        self.store.keep_family(&info.name, info.version, digest, &declarer.token, &encoded).map_err(|e| {
            CommandError::unavailable(format!(
                "the coordinator cannot record the declaration of `{}` in its store ({e:#}); try again later",
                info.name
            ))
        })?;
        let what = if restyled { "its docs replaced" } else { "family declared" };
        info!(family = %info.name, version = info.version, %digest, code = %info.code, "{what}");
        let declared = Declared { digest: digest.clone(), created: !restyled };
        self.catalog.add(*checked, &declarer.token);
        Ok(declared)
    }
}
