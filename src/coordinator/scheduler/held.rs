//! Leases held open: a worker with nothing to do may ask to wait for jobs, and its lease is
//! answered the moment some are queued (a sweep stored, a job queued again) rather than at
//! its next poll. An idle worker then costs one request per wait, not one per poll, and
//! starts on a new sweep's jobs without the poll's delay.

use super::requests::NOTHING_TO_LEASE_RETRY;
use super::Scheduler;
use crate::coordinator::handle::Reply;
use crate::coordinator::replies::Leases;
use armada_proto::ids::SessionId;
use std::time::{Duration, Instant};

/// The longest a lease is held: a worker's request must come back well within its RPC
/// deadlines and the session's silence limit, and a draining worker waits for it.
pub(super) const MAX_LEASE_WAIT: Duration = Duration::from_secs(1);

/// A lease that found nothing and waits for jobs until `until`.
struct HeldLease {
    session: SessionId,
    max_jobs: u32,
    until: Instant,
    reply: Reply<Leases>,
}

/// The leases held, in the order they came.
#[derive(Default)]
pub(super) struct HeldLeases {
    held: Vec<HeldLease>,
    /// The job table's count of jobs queued so far when the held leases last looked: they
    /// look again only when it has changed, or when one's wait is over.
    queued_seen: u64,
    /// The earliest `until` of those held.
    next_due: Option<Instant>,
}

impl Scheduler {
    /// Lease up to `max_jobs` jobs to `session`; when nothing can be leased and it may
    /// wait, hold the request (see [`Self::answer_held_leases`]).
    pub(super) fn lease_or_hold(
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
    pub(super) fn answer_held_leases(&mut self) {
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
