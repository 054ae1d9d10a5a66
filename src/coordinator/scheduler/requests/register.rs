//! `Register`: a worker session opens, its declared families kept first.

use super::{Reply, Request};
use crate::coordinator::durable::catalog::Declarer;
use crate::coordinator::scheduler::Scheduler;
use crate::coordinator::state::replies::{CommandError, Declared, Registered, Registration};
use armada_proto::ids::SessionId;
use std::collections::HashMap;
use std::time::Instant;
use tracing::info;

/// Register a worker.
pub(in crate::coordinator::scheduler) struct Register {
    pub(in crate::coordinator::scheduler) registration: Registration,
}

impl Request for Register {
    type Answer = Registered;

    fn session(&self) -> Option<&SessionId> {
        None
    }

    fn handle(self, s: &mut Scheduler, now: Instant, reply: Reply<Registered>) {
        let _ = reply.send(s.register(self.registration, now));
    }
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn register(
        &mut self,
        mut registration: Registration,
        now: std::time::Instant,
    ) -> Result<Registered, CommandError> {
        // The families it declares are kept first: a session runs only what is kept.
        let mut declared = HashMap::new();
        let observed = &registration.observed;
        let declarer = Declarer { token: observed.token.clone(), unlimited: observed.unlimited };
        for (i, declaration) in std::mem::take(&mut registration.declarations).into_iter().enumerate() {
            let (name, code) = (declaration.info.name.clone(), declaration.info.code.clone());
            let Declared { digest, .. } = self
                .declare(declaration, &declarer)
                .map_err(|e| CommandError::new(e.kind(), format!("declarations[{i}]: {}", e.message())))?;
            let reference = format!("{name}+{digest}");
            declared.insert(name, crate::coordinator::state::sessions::Declared { reference, code });
        }
        let session = SessionId::from(crate::secret::random_secret());
        let worker = self.workers.register(
            registration,
            env!("CARGO_PKG_VERSION"),
            &self.catalog.get(),
            &declared,
            session.clone(),
            now,
        )?;
        info!(
            worker = %worker.id,
            name = %worker.name,
            families = ?worker.families,
            "worker registered"
        );
        Ok(Registered {
            worker_id: worker.id.clone(),
            session,
            lease_ttl: self.config.lease_ttl,
            heartbeat: self.config.heartbeat,
        })
    }
}
