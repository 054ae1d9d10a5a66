//! What the scheduler does between requests, on its clock's tick: leases past their
//! deadline expire, and workers silent too long are forgotten.

use super::Scheduler;
use crate::coordinator::state::job_table::Effect;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use tracing::info;

/// A session that never asked for jobs is a registration its worker gave up (it died, or
/// registered again after losing the connection): forgotten once silent this long.
const FORGET_UNUSED_SESSION_AFTER: Duration = Duration::from_secs(60);

impl Scheduler {
    /// Leases past their deadline: the job goes back to the queue (or fails).
    pub(super) fn expire_leases(&mut self, now: std::time::Instant) {
        let workers = &self.workers;
        let effects = self.table.expire(now, |session| workers.describe(session, "?"));
        let expired = effects.iter().filter(|e| matches!(e, Effect::EndAttempt { .. })).count();
        self.metrics.leases_expired.fetch_add(expired as u64, Relaxed);
        self.apply(effects);
    }

    /// Workers silent for `forget_worker_after` and holding nothing are dropped, and those
    /// that never asked for jobs once silent for a minute (or that, if shorter).
    pub(super) fn forget_idle_workers(&mut self, now: std::time::Instant) {
        let after = self.config.forget_worker_after;
        let unused_after = after.min(FORGET_UNUSED_SESSION_AFTER);
        if !self.workers.any_silent(now, unused_after) {
            return;
        }
        let holding = self.table.sessions_holding(now);
        for worker in self.workers.forget_idle(now, after, unused_after, |session| holding.contains(session)) {
            info!(%worker, "worker forgotten: silent, holding nothing");
        }
        self.late_abandons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|session, _| self.workers.get(session).is_ok());
    }
}
