//! Loading the store at start: the jobs of a previous life, corrected where the store and
//! the results disagree (see [`Recovery`]).

use super::{release_free_memory, Scheduler, StartError};
use crate::coordinator::durable::summarizer;
use crate::coordinator::state::jobs::{Job, JobIndex};
use crate::coordinator::state::recovery::{Loaded, Recovery, StoreFix};
use crate::coordinator::state::stored::{JobState, StoredJob};
use crate::results;
use armada_proto::ids::SweepId;
use std::collections::HashMap;
use std::sync::Arc;
use tracing::{info, warn};

impl Scheduler {
    /// Load what the store holds: submissions it had not finished storing are dropped,
    /// attempts of the previous life voided (their jobs queued again), and the jobs, sweeps
    /// and summaries made to agree with the results on disk.
    pub(super) fn load(&mut self) -> Result<(), StartError> {
        let voided = self.store.void_running()?;
        if voided > 0 {
            info!(jobs = voided, "jobs running when the previous coordinator stopped are queued again");
        }
        let charged = self.store.charge_open_attempts()?;
        if charged > 0 {
            info!(jobs = charged, "attempts cut short when the previous coordinator stopped count as attempts");
        }
        for (digest, token, declaration) in self.store.families()? {
            if let Err(e) = self.catalog.load(&digest, &token, &declaration) {
                warn!(error = %e, "the store keeps a declaration no longer accepted; its sweeps' jobs cannot run");
            }
        }
        for sweep in self.store.sweeps()? {
            self.sweeps.load(&sweep.id, sweep.family, sweep.cancelled, sweep.summarized, sweep.source.map(Arc::from));
        }
        for id in self.sweeps.ids() {
            let removed = results::remove_temp_files(&self.results_dir.join(id))?;
            if removed > 0 {
                info!(sweep = %id, files = removed, "removed temp files left by an interrupted write");
            }
        }
        let unrecorded = self.unrecorded_parts()?;
        self.warn_of_unknown_sweeps()?;
        let registry = self.catalog.get();
        let mut recovery = Recovery::new(&registry);
        // The jobs come sweep by sweep: each sweep's families and id are looked up once.
        let mut sweep: Option<(SweepId, String, Option<SweepId>)> = None;
        let mut queued = Vec::new();
        let (jobs, abandoned) = self.store.jobs_and_abandoned()?;
        // Removed only when there is something to remove: a scan of every job otherwise.
        if abandoned > 0 || self.store.has_hidden_sweeps()? {
            let abandoned = self.store.abandon_submissions()?;
            info!(
                jobs = abandoned,
                "dropped the jobs of a submission the previous coordinator had not finished storing"
            );
        }
        for stored in jobs {
            if sweep.as_ref().is_none_or(|(id, ..)| !id.same(&stored.sweep_id)) {
                let reference = self.sweeps.get(&stored.sweep_id).map(|s| s.family.clone()).unwrap_or_default();
                sweep = Some((stored.sweep_id.clone(), reference, self.sweeps.id_of(&stored.sweep_id)));
            }
            let (_, reference, id) = sweep.as_ref().expect("set just now");
            let part = unrecorded.get(&*stored.sweep_id).and_then(|parts| parts.get(&stored.key));
            let loaded = recovery.load(&stored, reference, part.map(String::as_str), &mut self.templates);
            if let Some(i) = self.load_job(stored, id.clone(), loaded)? {
                queued.push(i);
            }
        }
        // Queued in their order, a run of one family at a time.
        if !self.config.only_submitted {
            self.table.enqueue_all(&queued);
        }
        drop(queued);
        let ids: Vec<SweepId> = self.sweeps.ids().cloned().collect();
        for id in ids {
            let files = self.sweeps.counts(&id, &self.table).done == 0
                || self.results_dir.join(&id).join(results::FINAL_FILE).is_file();
            // Summaries cut short by the previous coordinator's end (or removed since) are
            // rebuilt; those of a running sweep are live again.
            if self.sweeps.loaded(&id, &self.table, files) {
                let held = summarizer::held_at_start(&self.results_dir.join(&id));
                self.open_live_held(&id, held);
            } else {
                let n_cells = self.cells_of(&id).len() as u32;
                self.sweeps.set_cells(&id, n_cells);
            }
        }
        // A resolving sweep whose round had ended is judged (again): its next round may be
        // owed, or its announcement.
        let resolving: Vec<SweepId> =
            self.sweeps.ids().filter(|id| self.sweeps.get(id).is_ok_and(|s| s.source.is_some())).cloned().collect();
        for id in resolving {
            self.check_finished(&id);
        }
        let reserved = self.store.max_attempt_id()?;
        self.attempt_ids = super::AttemptIds { next: reserved + 1, reserved };
        let next_attempt = reserved + 1;
        info!(sweeps = self.sweeps.len(), jobs = self.table.len(), next_attempt, "scheduler loaded the store");
        // The stored rows read to load the jobs are gone.
        release_free_memory();
        Ok(())
    }

    /// Jobs in parts the store does not know: written, then the coordinator died before
    /// recording them. Sweep -> key -> part file name. On the way, one of the cheap checks
    /// of every start: parts the store records but the disk lacks (their jobs' rows are
    /// lost), reported with what to do.
    fn unrecorded_parts(&self) -> Result<HashMap<SweepId, HashMap<String, String>>, StartError> {
        let mut found = HashMap::new();
        for sweep in self.sweeps.ids() {
            let known = self.store.parts(sweep)?;
            let on_disk: Vec<(String, std::path::PathBuf)> = results::part_files(&self.results_dir.join(sweep))?
                .into_iter()
                .map(|path| (results::file_name(&path), path))
                .collect();
            let present: std::collections::HashSet<&str> = on_disk.iter().map(|(name, _)| name.as_str()).collect();
            let missing: Vec<&String> = known.iter().filter(|p| !present.contains(p.as_str())).collect();
            if let Some(first) = missing.first() {
                warn!(
                    sweep = %sweep,
                    missing = missing.len(),
                    %first,
                    "parts the store records are missing, and their jobs' rows with them: \
                     `armada check --repair` queues those jobs again"
                );
            }
            for (name, path) in on_disk {
                if known.contains(&name) {
                    continue;
                }
                // A damaged part stops nothing but its own jobs (`armada check` reports it).
                let index = match results::read_index(&path) {
                    Err(e @ results::ResultsError::Damaged { .. }) => {
                        warn!(sweep = %sweep, error = %e, "a damaged part is left out: run `armada check`");
                        continue;
                    }
                    index => index?,
                };
                let in_sweep: &mut HashMap<String, String> = found.entry(sweep.clone()).or_default();
                for job in index {
                    in_sweep.insert(job.key, name.clone());
                }
            }
        }
        Ok(found)
    }

    /// Sweep directories with trajectory parts that the store does not know: a store lost
    /// (a new empty one) or restored from a backup older than the sweeps.
    fn warn_of_unknown_sweeps(&self) -> Result<(), StartError> {
        for (name, parts) in results::sweeps_with_parts(&self.results_dir)? {
            if self.sweeps.get(&name).is_err() {
                warn!(
                    sweep = %name,
                    parts,
                    "a sweep directory with trajectories that the store does not know (was the store lost or \
                     replaced?): stop this coordinator and run `armada check --repair` on its data directory \
                     to rebuild the sweep, or resubmit its sweep file"
                );
            }
        }
        Ok(())
    }

    /// Load one stored job of sweep `id` as [`Recovery::load`] found it, writing the
    /// store's correction first: its place in the table if it is queued.
    fn load_job(
        &mut self,
        stored: StoredJob,
        id: Option<SweepId>,
        loaded: Loaded,
    ) -> Result<Option<JobIndex>, StartError> {
        match &loaded.fix {
            Some(StoreFix::Committed { part }) => {
                self.store.commit_jobs(&stored.sweep_id, part, &[(None, stored.key.as_str())])?
            }
            Some(StoreFix::Failed { error }) => {
                self.store.set_job_state(&stored.sweep_id, &stored.key, JobState::Failed, Some(error))?
            }
            None => {}
        }
        let Some(sweep) = id else { return Ok(None) };
        let state = loaded.state;
        let mut job = Job::new(sweep, loaded.template, loaded.seed, loaded.key, state);
        job.attempts = stored.attempts;
        job.error = loaded.error.map(Into::into);
        let i = self.table.push(job);
        self.sweeps.load_job(i, &self.table);
        Ok((state == JobState::Queued).then_some(i))
    }
}
