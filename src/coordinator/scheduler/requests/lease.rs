//! `Lease`: up to a number of jobs for a worker session, each a new attempt. A worker with
//! nothing to do may ask to wait for jobs: its lease is then held, and answered the moment
//! some are queued (a sweep stored, a job queued again) rather than at its next poll. An
//! idle worker then costs one request per wait, not one per poll, and starts on a new
//! sweep's jobs without the poll's delay.

use super::{Reply, Request};
use crate::coordinator::scheduler::{Scheduler, ATTEMPT_ID_BLOCK};
use crate::coordinator::state::replies::{CommandError, Lease, Leases};
use crate::coordinator::state::trouble::Place;
use armada_proto::ids::{AttemptId, SessionId};
use std::time::{Duration, Instant};
use tracing::warn;

/// Lease up to `max_jobs` jobs; when none can be, hold the request up to `wait` and answer
/// as soon as some are queued.
pub(in crate::coordinator::scheduler) struct LeaseJobs {
    pub(in crate::coordinator::scheduler) session: SessionId,
    pub(in crate::coordinator::scheduler) max_jobs: u32,
    pub(in crate::coordinator::scheduler) wait: Duration,
}

impl Request for LeaseJobs {
    type Answer = Leases;

    fn session(&self) -> Option<&SessionId> {
        Some(&self.session)
    }

    fn handle(self, s: &mut Scheduler, now: Instant, reply: Reply<Leases>) {
        s.lease_or_hold(self.session, self.max_jobs, self.wait, reply, now);
    }
}

/// A worker that found nothing to lease asks again after this long.
pub(in crate::coordinator::scheduler) const NOTHING_TO_LEASE_RETRY: Duration = Duration::from_millis(200);

/// When the store cannot start attempts, workers ask again this much later (the longest a
/// worker waits between two lease requests), not at once.
const STORE_TROUBLE_RETRY: Duration = Duration::from_secs(5);

/// The longest a lease is held: a worker's request must come back well within its RPC
/// deadlines and the session's silence limit, and a draining worker waits for it.
pub(in crate::coordinator::scheduler) const MAX_LEASE_WAIT: Duration = Duration::from_secs(1);

/// A lease that found nothing and waits for jobs until `until`.
struct HeldLease {
    session: SessionId,
    max_jobs: u32,
    until: Instant,
    reply: Reply<Leases>,
}

/// The leases held, in the order they came.
#[derive(Default)]
pub(in crate::coordinator::scheduler) struct HeldLeases {
    held: Vec<HeldLease>,
    /// The job table's count of jobs queued so far when the held leases last looked: they
    /// look again only when it has changed, or when one's wait is over.
    queued_seen: u64,
    /// The earliest `until` of those held.
    next_due: Option<Instant>,
}

impl Scheduler {
    pub(in crate::coordinator::scheduler) fn lease(
        &mut self,
        session: &SessionId,
        max_jobs: u32,
        now: Instant,
    ) -> Result<Leases, CommandError> {
        let (session, worker) = self.workers.get(session)?;
        let (worker_id, families) = (worker.id.clone(), worker.families.clone());
        let max_jobs = max_jobs.min(armada_proto::lease::most_leased(worker.slots));
        self.workers.asked_for_jobs(&session);
        // A store that cannot write could not record what the attempts commit: nothing is
        // leased meanwhile, and the worker keeps its session (see `trouble`).
        if self.metrics.writes.failing(&Place::Store) {
            return Ok(Leases { leases: Vec::new(), retry_after: STORE_TROUBLE_RETRY });
        }
        let picked = self.table.pick(&families, max_jobs);
        if picked.is_empty() {
            return Ok(Leases { leases: Vec::new(), retry_after: NOTHING_TO_LEASE_RETRY });
        }
        let Some(ids) = self.attempt_ids(picked.len() as u64) else {
            // The coordinator's trouble (a full disk, say), shown where operators look
            // (see `trouble`): the worker keeps its session and asks again later.
            self.table.unpick(&picked);
            return Ok(Leases { leases: Vec::new(), retry_after: STORE_TROUBLE_RETRY });
        };
        let ids: Vec<AttemptId> = ids.map(AttemptId).collect();
        self.leased_since_noted = true;
        let effects = self.table.start_attempts(&picked, &ids, &session, &worker_id, now);
        self.apply(effects);
        let leases = picked
            .iter()
            .zip(&ids)
            .map(|(&i, &id)| {
                let job = self.table.job(i);
                Lease {
                    attempt_id: id,
                    sweep_id: job.sweep.clone(),
                    job_key: job.key.to_string(),
                    spec: job.valid().spec,
                    attempt: job.attempts,
                }
            })
            .collect();
        Ok(Leases { leases, retry_after: Duration::ZERO })
    }

    /// `n` new attempt ids, reserving a block in the store when those reserved run out
    /// (None: the store cannot reserve them).
    fn attempt_ids(&mut self, n: u64) -> Option<std::ops::Range<u64>> {
        let ids = &mut self.attempt_ids;
        let end = ids.next + n;
        if end - 1 > ids.reserved {
            let last = end - 1 + ATTEMPT_ID_BLOCK;
            if let Err(e) = self.store.reserve_attempt_ids(last) {
                warn!(error = %format!("{e:#}"), "the store cannot reserve attempt ids; no job is leased meanwhile");
                return None;
            }
            ids.reserved = last;
        }
        let range = ids.next..end;
        ids.next = end;
        Some(range)
    }

    /// Lease up to `max_jobs` jobs to `session`; when nothing can be leased and it may
    /// wait, hold the request (see [`Self::answer_held_leases`]).
    pub(in crate::coordinator::scheduler) fn lease_or_hold(
        &mut self,
        session: SessionId,
        max_jobs: u32,
        wait: Duration,
        reply: Reply<Leases>,
        now: Instant,
    ) {
        let leased = self.lease(&session, max_jobs, now);
        if !matches!(&leased, Ok(l) if nothing(l)) || wait.is_zero() {
            let _ = reply.send(leased);
            return;
        }
        let until = now + wait.min(MAX_LEASE_WAIT);
        let held = &mut self.held_leases;
        if held.held.is_empty() {
            held.queued_seen = self.table.queued_so_far();
        }
        held.next_due = Some(held.next_due.map_or(until, |due| due.min(until)));
        held.held.push(HeldLease { session, max_jobs, until, reply });
    }

    /// Answer the held leases that can be: with jobs when some were queued since they last
    /// looked, empty (ask again at once) when their wait is over (seen at the latest at the
    /// scheduler's next tick). A lease whose worker gave up (its request dropped) is let go
    /// without leasing it anything.
    pub(in crate::coordinator::scheduler) fn answer_held_leases(&mut self) {
        let held = &mut self.held_leases;
        let Some(due) = held.next_due else { return };
        let now = Instant::now();
        let queued = self.table.queued_so_far();
        let look = queued != held.queued_seen;
        if !look && due > now {
            return;
        }
        held.queued_seen = queued;
        let mut still = Vec::with_capacity(held.held.len());
        for lease in std::mem::take(&mut held.held) {
            if lease.reply.is_closed() {
                continue;
            }
            match look.then(|| self.lease(&lease.session, lease.max_jobs, now)) {
                Some(answer) if !matches!(&answer, Ok(l) if nothing(l)) => {
                    let _ = lease.reply.send(answer);
                }
                _ if lease.until > now => still.push(lease),
                _ => {
                    let _ = lease.reply.send(Ok(Leases { leases: Vec::new(), retry_after: Duration::ZERO }));
                }
            }
        }
        let held = &mut self.held_leases;
        held.next_due = still.iter().map(|l| l.until).min();
        held.held = still;
    }
}

/// A lease that found no job to lease (not one refused for the store's trouble).
fn nothing(leases: &Leases) -> bool {
    leases.leases.is_empty() && leases.retry_after == NOTHING_TO_LEASE_RETRY
}
