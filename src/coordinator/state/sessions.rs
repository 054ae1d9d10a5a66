//! Worker sessions: who registered, under which secret session credential, for which
//! families. Pure like [`super::job_table`]: the credential is drawn by the caller.

use super::replies::{CommandError, Observed, Registration, WorkerInfo};
use crate::results::Provenance;
use armada_core::Registry;
use armada_proto::ids::SessionId;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A registered worker.
pub struct Worker {
    /// The public id (`w1`, ...) and the worker's own name, for messages.
    pub id: String,
    pub name: String,
    /// The families it runs, by reference ([`armada_core::Family::reference`]).
    pub families: BTreeSet<String>,
    /// Jobs it runs side by side, as it declared (0: not said).
    pub slots: u32,
    /// Its host, what it runs and on which processor, as it said.
    pub host: String,
    pub software: String,
    pub processor: String,
    /// What the coordinator saw of its registration (token label, peer, time).
    pub observed: Observed,
    /// The code digest of each family it declared with one (by reference).
    pub codes: HashMap<String, String>,
    /// Its provenance record for each family it committed jobs of (by reference), made on
    /// first use and shared by those jobs (attempt id 0: each part says its own).
    pub records: HashMap<String, Arc<Provenance>>,
    /// Its last request (registration, lease, heartbeat, commit...).
    pub last_seen: Instant,
    /// It has asked for jobs: a session that never did is a registration its worker gave
    /// up (it died, or registered again), forgotten sooner (see [`Sessions::forget_idle`]).
    pub asked_for_jobs: bool,
}

impl Worker {
    /// The worker as messages name it: `w3 (host-a)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.id, self.name)
    }
}

/// A family a worker declared at its registration: the declaration it runs, by reference
/// (`name+digest`), and its code digest (empty when it gave none).
pub struct Declared {
    pub reference: String,
    pub code: String,
}

/// Registered workers by session credential.
#[derive(Default)]
pub struct Sessions {
    workers: HashMap<SessionId, Worker>,
    /// Workers registered so far (the next id's number is one more).
    registered: u64,
}

impl Sessions {
    /// Register a worker under `session`. Each family it names is a built-in one of
    /// `registry` (it must then run this build: `ours`, and the registry's digest) or one
    /// it declared (`declared`: name -> reference, kept already); the session runs the
    /// families by reference, so a declared family's jobs go only to sessions that declared
    /// the same digest. Answers its public id.
    pub fn register(
        &mut self,
        registration: Registration,
        ours: &str,
        registry: &Registry,
        declared: &HashMap<String, Declared>,
        session: SessionId,
        now: Instant,
    ) -> Result<&Worker, CommandError> {
        let Registration {
            name,
            slots,
            version,
            families,
            build,
            declarations: _,
            host,
            software,
            processor,
            observed,
        } = registration;
        if families.is_empty() {
            return Err(CommandError::invalid_argument("families: name the families this worker runs"));
        }
        let mut references = BTreeSet::new();
        let mut codes = HashMap::new();
        let mut runs_builtin = false;
        for (i, family) in families.iter().enumerate() {
            if let Some(Declared { reference, code }) = declared.get(family) {
                references.insert(reference.clone());
                if !code.is_empty() {
                    codes.insert(reference.clone(), code.clone());
                }
                continue;
            }
            let known = registry
                .family(family)
                .map_err(|e| CommandError::invalid_argument(format!("families[{i}]: {}", e.message)))?;
            if known.declared_digest().is_some() {
                return Err(CommandError::invalid_argument(format!(
                    "families[{i}]: `{family}` is a declared family; a worker that runs it declares it too \
                     (`declarations`), so that it runs the very declaration a sweep was keyed by"
                )));
            }
            runs_builtin = true;
            references.insert(family.clone());
        }
        if runs_builtin {
            if version != ours {
                return Err(CommandError::failed_precondition(format!(
                    "version: worker runs armada {version}, the coordinator {ours}; job keys and results depend on the build"
                )));
            }
            let digest = registry.digest();
            if build != digest {
                return Err(CommandError::failed_precondition(format!(
                    "build: the worker's families digest to `{build}`, the coordinator's to `{digest}`; \
                     run workers of the coordinator's build"
                )));
            }
        }
        self.registered += 1;
        let worker = Worker {
            id: format!("w{}", self.registered),
            name,
            families: references,
            slots,
            host,
            software,
            processor,
            observed,
            codes,
            records: HashMap::new(),
            last_seen: now,
            asked_for_jobs: false,
        };
        Ok(self.workers.entry(session).insert_entry(worker).into_mut())
    }

    /// The registered worker of `session`, with the session's shared handle.
    pub fn get(&self, session: &SessionId) -> Result<(SessionId, &Worker), CommandError> {
        match self.workers.get_key_value(session) {
            Some((key, worker)) => Ok((key.clone(), worker)),
            None => Err(CommandError::not_found(
                "session: not registered here (the coordinator restarted?); register again",
            )),
        }
    }

    /// The worker of `session` was heard from at `now`.
    pub fn touch(&mut self, session: &SessionId, now: Instant) {
        if let Some(worker) = self.workers.get_mut(session) {
            worker.last_seen = now;
        }
    }

    /// Who computes the jobs of `family` (its reference: a declared family's carries its
    /// digest) in `session`, for the parts' provenance (attempt id 0); none for an unknown
    /// session.
    pub fn provenance(&mut self, session: &SessionId, family: &str) -> Option<Arc<Provenance>> {
        let w = self.workers.get_mut(session)?;
        if let Some(record) = w.records.get(family) {
            return Some(record.clone());
        }
        let record = Arc::new(Provenance {
            worker: w.id.clone(),
            name: w.name.clone(),
            host: w.host.clone(),
            software: w.software.clone(),
            processor: w.processor.clone(),
            attempt_id: 0,
            family_digest: family.split_once('+').map_or("", |(_, digest)| digest).to_string(),
            code: w.codes.get(family).cloned().unwrap_or_default(),
            token: w.observed.token.clone(),
            peer: w.observed.peer.clone(),
            registered_ms: w.observed.registered_ms,
        });
        w.records.insert(family.to_string(), record.clone());
        Some(record)
    }

    /// Every registered worker, with its session credential, in registration order.
    pub fn all(&self) -> Vec<(&SessionId, &Worker)> {
        let mut all: Vec<_> = self.workers.iter().collect();
        all.sort_by_key(|(_, w)| w.id[1..].parse::<u64>().unwrap_or(u64::MAX));
        all
    }

    /// What the dashboard shows of every worker: `leased` attempts by session, idle since
    /// it was last heard from, alive while that is within `lease_ttl`.
    pub fn infos(&self, leased: &HashMap<&SessionId, u32>, now: Instant, lease_ttl: Duration) -> Vec<WorkerInfo> {
        self.all()
            .into_iter()
            .map(|(session, w)| {
                let idle = now.saturating_duration_since(w.last_seen);
                WorkerInfo {
                    id: w.id.clone(),
                    name: w.name.clone(),
                    families: w.families.iter().cloned().collect(),
                    slots: w.slots,
                    leased: leased.get(session).copied().unwrap_or(0),
                    idle,
                    alive: idle <= lease_ttl,
                }
            })
            .collect()
    }

    /// The worker of `session` asked for jobs.
    pub fn asked_for_jobs(&mut self, session: &SessionId) {
        if let Some(worker) = self.workers.get_mut(session) {
            worker.asked_for_jobs = true;
        }
    }

    /// Forget the workers silent for longer than `after` whose sessions hold no attempt
    /// (`holds` says which do), so that workers come and gone do not accumulate, and those
    /// that never asked for jobs once silent for longer than `unused_after`; one that comes
    /// back is told its session is unknown and registers again. Answers them as messages
    /// name them.
    pub fn forget_idle(
        &mut self,
        now: Instant,
        after: Duration,
        unused_after: Duration,
        holds: impl Fn(&SessionId) -> bool,
    ) -> Vec<String> {
        let mut forgotten = Vec::new();
        self.workers.retain(|session, w| {
            let allowed = if w.asked_for_jobs { after } else { unused_after.min(after) };
            let keep = now.saturating_duration_since(w.last_seen) <= allowed || holds(session);
            if !keep {
                forgotten.push(w.label());
            }
            keep
        });
        forgotten
    }

    /// Whether any worker has been silent for longer than `silence` (cheap, checked every tick).
    pub fn any_silent(&self, now: Instant, silence: Duration) -> bool {
        self.workers.values().any(|w| now.saturating_duration_since(w.last_seen) > silence)
    }

    /// The worker of `session` as messages name it: `w3 (host-a)`, or `unknown` when gone.
    pub fn describe(&self, session: &SessionId, unknown: &str) -> String {
        self.workers.get(session).map_or_else(|| unknown.to_string(), Worker::label)
    }
}
