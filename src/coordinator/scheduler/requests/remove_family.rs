//! `RemoveFamily`: forget declarations of a family's version that no stored sweep uses.

use super::{Reply, Request};
use crate::coordinator::scheduler::internal;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::CommandError;
use armada_proto::ids::SessionId;
use std::time::Instant;
use tracing::info;

/// Forget the declarations of `name` at `version` (all, or the one of `digest`).
pub(in crate::coordinator::scheduler) struct RemoveFamily {
    pub(in crate::coordinator::scheduler) name: String,
    pub(in crate::coordinator::scheduler) version: u32,
    pub(in crate::coordinator::scheduler) digest: Option<String>,
}

impl Request for RemoveFamily {
    type Answer = Vec<String>;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, _now: Instant, reply: Reply<Vec<String>>) {
        let _ = reply.send(s.remove_family(&self.name, self.version, self.digest.as_deref()));
    }
}

impl Scheduler {
    /// Forget the declarations of `name` at `version` (all, or the one of `digest`), in
    /// the store first, unless a stored sweep uses one: FAILED_PRECONDITION naming them.
    pub(in crate::coordinator::scheduler) fn remove_family(
        &mut self,
        name: &str,
        version: u32,
        digest: Option<&str>,
    ) -> Result<Vec<String>, CommandError> {
        if self.catalog.builtin().families().any(|f| f.name() == name) {
            return Err(CommandError::invalid_argument(format!("name: `{name}` is a built-in family")));
        }
        let digests = self.catalog.revisions(name, version, digest);
        if digests.is_empty() {
            let which = digest.map_or(String::new(), |d| format!(" with digest {d}"));
            return Err(CommandError::not_found(format!(
                "no declaration of family `{name}` version {version}{which} is kept"
            )));
        }
        let references: Vec<String> = digests.iter().map(|d| format!("{name}+{d}")).collect();
        let users = self.sweeps.using(&references);
        if !users.is_empty() {
            return Err(CommandError::failed_precondition(format!(
                "family `{name}` version {version} is used by sweeps {}: delete them first (`armada delete`)",
                users.join(", ")
            )));
        }
        self.store.remove_families(name, &digests).map_err(internal)?;
        self.catalog.remove(name, &digests);
        info!(family = %name, version, digests = ?digests, "declarations removed");
        Ok(digests)
    }
}
