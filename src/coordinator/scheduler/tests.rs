//! The scheduler through its handle: leases, expiry, commits, restarts and crashes, on a
//! real store in a temporary directory, with tokio's clock paused where time matters.

use super::super::state::replies::ErrorKind;
use super::requests::fail::MAX_ERROR_BYTES;
use super::requests::part_written::unwritten_pause;
use super::requests::submit::Submit;
use super::*;
use crate::coordinator::durable::catalog::Declarer;
use crate::coordinator::state::job_table::{Cause, MAX_VOIDED};
use crate::coordinator::state::replies::WorkerInfo;
use crate::coordinator::state::replies::{JobFilter, Lease, Leases, Observed, Registration, SweepState, SweepStatus};
use crate::coordinator::state::stored::SpecTemplate;
use crate::coordinator::state::sweeps::FailurePage;
use crate::results;
use crate::results::Provenance;
use armada_core::{JobSpec, StepRecord, ValidJob};
use armada_proto::ids::{AttemptId, SessionId, SweepId};
use polars::prelude::{ParquetReader, SerReader};

fn job(seed: u64) -> ValidJob {
    let mut spec = JobSpec::new("testkit", "constant", "echo");
    spec.seed = seed;
    spec.horizon = 2;
    crate::registry().validate(&spec).unwrap()
}

fn records(v: f64) -> Vec<StepRecord> {
    (0..3).map(|step| StepRecord { step, elapsed_ms: 0.0, values: vec![v + step as f64] }).collect()
}

async fn start(dir: &std::path::Path, lease_ttl: Duration) -> SchedulerHandle {
    start_with(dir, SchedulerConfig { lease_ttl, ..SchedulerConfig::default() })
}

/// A scheduler on `dir` with `config`, committing after a 5 ms linger.
fn start_with(dir: &std::path::Path, config: SchedulerConfig) -> SchedulerHandle {
    let commit = CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() };
    let config = SchedulerConfig { commit, ..config };
    Scheduler::start(Arc::new(Catalog::new(crate::registry())), Store::open(dir).unwrap(), dir.to_path_buf(), config)
        .unwrap()
}

fn registration(families: &[&str]) -> Registration {
    Registration {
        name: "test".into(),
        slots: 1,
        version: env!("CARGO_PKG_VERSION").to_string(),
        families: families.iter().map(|f| f.to_string()).collect(),
        build: crate::registry().digest(),
        declarations: vec![],
        host: "test-host".into(),
        software: "test".into(),
        processor: "test-processor".into(),
        observed: Observed {
            token: "tokens[1]".into(),
            peer: "127.0.0.1:5000".into(),
            registered_ms: 1_700_000_000_000,
            unlimited: false,
        },
    }
}

/// Register a testkit worker; its session credential.
async fn register(s: &SchedulerHandle) -> SessionId {
    let registration = registration(&["testkit"]);
    s.register(registration).await.unwrap().session
}

async fn lease(s: &SchedulerHandle, session: &SessionId) -> Vec<Lease> {
    let session = session.clone();
    s.lease(session, 8).await.unwrap().leases
}

async fn upload_and_complete(
    s: &SchedulerHandle,
    session: &SessionId,
    attempt: AttemptId,
    v: f64,
) -> Result<bool, ErrorKind> {
    upload_and_complete_records(s, session, attempt, &records(v)).await
}

async fn upload_and_complete_records(
    s: &SchedulerHandle,
    session: &SessionId,
    attempt: AttemptId,
    records: &[StepRecord],
) -> Result<bool, ErrorKind> {
    match s.append(attempt, session, records) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::InvalidArgument => {}
        Err(e) => return Err(e.kind()),
    }
    let (session, n_records) = (session.clone(), records.len() as u32);
    let pending = s.complete(session, attempt, n_records).await.map_err(|e| e.kind())?;
    pending.answer().await.map_err(|e| e.kind())
}

async fn status(s: &SchedulerHandle) -> SweepStatus {
    s.status("t".into(), FailurePage::default()).await.unwrap()
}

/// A sweep's last commits do not wait out the linger: while a job of the sweep is queued,
/// commits wait to share a part (here an hour); once none is queued or running besides
/// those committing, the part is written at once, with every commit waiting for it.
#[tokio::test]
async fn a_sweeps_last_commit_writes_its_part_without_the_linger() {
    let dir = tempfile::tempdir().unwrap();
    let commit = CommitConfig { linger: Duration::from_secs(3600), ..CommitConfig::default() };
    let config = SchedulerConfig { commit, lease_ttl: Duration::from_secs(3600), ..SchedulerConfig::default() };
    let s = Scheduler::start(
        Arc::new(Catalog::new(crate::registry())),
        Store::open(dir.path()).unwrap(),
        dir.path().to_path_buf(),
        config,
    )
    .unwrap();
    let jobs = (0..4).map(job);
    s.submit(Submission::new("t".into(), "testkit".into(), jobs)).await.unwrap();
    let w = register(&s).await;
    let leased = s.lease(w.clone(), 3).await.unwrap().leases;
    assert_eq!(leased.len(), 3, "one job stays queued");
    let mut waiting = Vec::new();
    for l in &leased[..2] {
        s.append(l.attempt_id, &w, &records(1.0)).unwrap();
        waiting.push(s.complete(w.clone(), l.attempt_id, 3).await.unwrap());
    }
    // A job is queued and one runs: the two commits linger.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&s).await.n_done, 0, "written before the linger with a job queued");
    let last = s.lease(w.clone(), 3).await.unwrap().leases;
    assert_eq!(last.len(), 1);
    for l in [&leased[2], &last[0]] {
        s.append(l.attempt_id, &w, &records(2.0)).unwrap();
        waiting.push(s.complete(w.clone(), l.attempt_id, 3).await.unwrap());
    }
    for pending in waiting {
        let answer = tokio::time::timeout(Duration::from_secs(30), pending.answer()).await;
        assert!(answer.expect("answered without the hour's linger").unwrap(), "committed");
    }
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_queued, st.n_running), (4, 0, 0));
    assert_eq!(results::stored_jobs(&dir.path().join("t"), None).unwrap().len(), 4);
}

/// Leases, expiry and the first-commit rule, both ways round. Time is paused: it moves
/// only when every task waits, so the leases expire exactly when the test says.
#[tokio::test(start_paused = true)]
async fn an_expired_attempt_is_requeued_and_the_first_commit_wins() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(10)).await;
    let submitted = s.submit(Submission::new("t".into(), "testkit".into(), vec![job(0), job(1)])).await.unwrap();
    assert_eq!((submitted.n_jobs, submitted.n_added, submitted.n_already_done), (2, 2, 0));
    let (a, b) = (register(&s).await, register(&s).await);
    let first = lease(&s, &a).await;
    assert_eq!(first.len(), 2);
    assert!(lease(&s, &b).await.is_empty(), "nothing left to lease");
    let ids: Vec<AttemptId> = first.iter().map(|l| l.attempt_id).collect();
    s.heartbeat(a.clone(), ids.clone(), ids).await.unwrap();
    // A starts both, then stops heartbeating: both leases expire and the jobs are queued
    // for attempt 2.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(status(&s).await.n_queued, 2);
    let second = lease(&s, &b).await;
    assert_eq!(second.len(), 2);
    assert!(second.iter().all(|l| l.attempt == 2));
    let job0 = |ls: &[Lease]| ls.iter().find(|l| l.spec.seed == 0).unwrap().attempt_id;
    let job1 = |ls: &[Lease]| ls.iter().find(|l| l.spec.seed == 1).unwrap().attempt_id;
    // Job 0: the new attempt commits first; the late one is dropped.
    assert_eq!(upload_and_complete(&s, &b, job0(&second), 10.0).await, Ok(true));
    assert_eq!(upload_and_complete(&s, &a, job0(&first), 20.0).await, Err(ErrorKind::NotFound), "dropped");
    // Job 1: the expired attempt commits first (nobody had); the live one is told to stop.
    assert_eq!(upload_and_complete(&s, &a, job1(&first), 30.0).await, Ok(true));
    let hb = s.heartbeat(b.clone(), vec![job1(&second)], vec![]).await.unwrap();
    assert_eq!(hb, vec![job1(&second)]);
    assert_eq!(upload_and_complete(&s, &b, job1(&second), 40.0).await, Err(ErrorKind::NotFound));
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_queued, st.n_running, st.n_failed), (2, 0, 0, 0));
    // Exactly the winners' records are on disk.
    let sweep_dir = dir.path().join("t");
    let first_values = |key: &armada_core::JobKey| {
        let jobs = results::stored_jobs(&sweep_dir, None).unwrap();
        let stored = jobs.iter().find(|j| j.key == key.0).expect("the job is in a part");
        let df = results::read_jobs(&[stored]).unwrap().remove(0);
        df.column("value").unwrap().f64().unwrap().get(0).unwrap()
    };
    assert_eq!(first_values(&job(0).key), 10.0);
    assert_eq!(first_values(&job(1).key), 30.0);
}

/// A lease lives `lease_ttl` after its lease or its last heartbeat, and no longer (the
/// scheduler looks every 100 ms): heartbeats keep a job running for a virtual hour;
/// without them it is queued again between ttl and ttl + 100 ms, as attempt 2.
#[tokio::test(start_paused = true)]
async fn a_lease_lives_its_ttl_after_the_last_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let ttl = Duration::from_secs(10);
    let s = start(dir.path(), ttl).await;
    submit(&s, vec![job(0)]).await;
    let w = register(&s).await;
    let id = lease(&s, &w).await[0].attempt_id;
    let heartbeat = || {
        let (s, session) = (s.clone(), w.clone());
        async move { s.heartbeat(session, vec![id], vec![id]).await.unwrap() }
    };
    for _ in 0..360 {
        tokio::time::sleep(ttl - Duration::from_millis(150)).await;
        assert!(heartbeat().await.is_empty(), "renewed, not abandoned");
    }
    assert_eq!(status(&s).await.n_running, 1);
    tokio::time::sleep(ttl - Duration::from_millis(50)).await;
    assert_eq!(status(&s).await.n_running, 1, "{:?} before its deadline", Duration::from_millis(50));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let st = status(&s).await;
    assert_eq!((st.n_running, st.n_queued), (0, 1), "expired");
    // Its late heartbeat renews nothing: the job is queued and the attempt may still
    // commit first, so it is not told to abandon either.
    assert!(heartbeat().await.is_empty());
    let again = lease(&s, &w).await;
    assert_eq!((again[0].attempt, again[0].spec.seed), (2, 0));
    assert_eq!(heartbeat().await, Vec::<AttemptId>::new(), "superseded, not settled");
}

/// A part that cannot be written fails the commit: the job is queued again after a pause,
/// nothing is marked done, status and watchers are told what fails, and the next attempt
/// commits once the disk allows it, which ends the trouble.
#[tokio::test]
async fn a_failed_part_write_requeues_the_job_and_a_later_attempt_commits() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    s.submit(Submission::new("t".into(), "testkit".into(), vec![job(0)])).await.unwrap();
    let mut events = s.watch("t".into(), true).await.unwrap().events;
    // A file where the trajectories directory should be.
    let sweep_dir = dir.path().join("t");
    std::fs::create_dir_all(&sweep_dir).unwrap();
    std::fs::write(sweep_dir.join("trajectories"), b"in the way").unwrap();
    let w = register(&s).await;
    let first = lease(&s, &w).await;
    // The coordinator's failure: retryable, and the job queued again with the attempt
    // uncounted.
    let failed_at = Instant::now();
    assert_eq!(upload_and_complete(&s, &w, first[0].attempt_id, 1.0).await, Err(ErrorKind::Unavailable));
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_queued, st.n_running), (0, 1, 0));
    let trouble = &st.write_troubles;
    assert_eq!(trouble.len(), 1, "{trouble:?}");
    assert_eq!((&trouble[0].place, trouble[0].failures), (&Place::Parts("t".into()), 1));
    // Not leased again at once: after the pause (250 ms for a first failure).
    assert!(lease(&s, &w).await.is_empty());
    std::fs::remove_file(sweep_dir.join("trajectories")).unwrap();
    let second = loop {
        let leased = lease(&s, &w).await;
        if !leased.is_empty() {
            break leased;
        }
        assert!(failed_at.elapsed() < Duration::from_secs(5), "the unwritten job is never queued again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(failed_at.elapsed() >= Duration::from_millis(250), "leased again after {:?}", failed_at.elapsed());
    assert_eq!(second[0].attempt, 1, "the unwritten attempt is not counted");
    assert_eq!(upload_and_complete(&s, &w, second[0].attempt_id, 2.0).await, Ok(true));
    let st = status(&s).await;
    assert_eq!((st.n_done, st.write_troubles.len()), (1, 0), "the trouble ends with a written part");
    let stored = results::stored_jobs(&sweep_dir, None).unwrap();
    assert_eq!(stored.len(), 1);
    let df = results::read_jobs(&[&stored[0]]).unwrap().remove(0);
    assert_eq!(df.column("value").unwrap().f64().unwrap().get(0), Some(2.0), "the second attempt's records");
    // The watcher heard the trouble begin, then end.
    let mut told = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let SweepEvent::WriteTroubles(t) = event {
            told.push(t.iter().map(|t| t.place.to_string()).collect::<Vec<_>>());
        }
    }
    assert_eq!(told, vec![vec!["the trajectory parts of sweep t".to_string()], vec![]]);
}

/// Every job's events are built only while someone watches in detail: a watcher that
/// asked for counts hears `Progress` after each part, ending at the sweep's counts; a
/// watcher in detail hears each job start and finish, until its ticket is dropped.
#[tokio::test]
async fn job_events_are_built_only_for_watchers_in_detail_and_counts_come_per_part() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    submit(&s, vec![job(0), job(1), job(2)]).await;
    let counting = s.watch("t".into(), false).await.unwrap();
    assert!(counting.in_detail.is_none());
    let mut counts = counting.events;
    let drain = |rx: &mut broadcast::Receiver<SweepEvent>| {
        let mut heard = Vec::new();
        while let Ok(event) = rx.try_recv() {
            heard.push(match event {
                SweepEvent::JobStarted { .. } => "started".to_string(),
                SweepEvent::JobFinished { .. } => "finished".to_string(),
                SweepEvent::Progress(c) => format!("progress {}/{}", c.n_done, c.n_jobs),
                SweepEvent::SweepFinished(_) => "sweep finished".to_string(),
                other => format!("{other:?}"),
            });
        }
        heard
    };
    let w = register(&s).await;
    let leased = lease(&s, &w).await;
    assert_eq!(leased.len(), 3);
    assert_eq!(upload_and_complete(&s, &w, leased[0].attempt_id, 1.0).await, Ok(true));
    assert_eq!(drain(&mut counts), ["progress 1/3"], "no job event was built");
    let detailed = s.watch("t".into(), true).await.unwrap();
    let (mut details, ticket) = (detailed.events, detailed.in_detail.expect("a ticket"));
    assert_eq!(upload_and_complete(&s, &w, leased[1].attempt_id, 1.0).await, Ok(true));
    // One channel: the counting watcher's stream leaves out what the service filters.
    assert_eq!(drain(&mut details), ["finished", "progress 2/3"]);
    assert_eq!(drain(&mut counts), ["finished", "progress 2/3"]);
    drop(ticket);
    assert_eq!(upload_and_complete(&s, &w, leased[2].attempt_id, 1.0).await, Ok(true));
    assert_eq!(drain(&mut details), ["progress 3/3", "sweep finished"]);
    assert_eq!(drain(&mut counts), ["progress 3/3", "sweep finished"]);
    assert_eq!(status(&s).await.n_done, 3);
}

/// The pause before an unwritten job is leased again doubles with the failures in a row,
/// from 250 ms, and stops at 10 s.
#[test]
fn the_pause_after_unwritten_parts_doubles_to_ten_seconds() {
    let pauses: Vec<u64> = (1..=8).map(|n| unwritten_pause(n).as_millis() as u64).collect();
    assert_eq!(pauses, vec![250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    assert_eq!(unwritten_pause(u64::MAX), Duration::from_secs(10));
}

/// A part written just before a crash, not yet recorded in the store, marks its job
/// done at the next start, and is recorded then.
#[tokio::test]
async fn a_part_the_store_does_not_know_marks_its_jobs_done_at_start() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let jobs = vec![job(0), job(1)];
        s.submit(Submission::new("t".into(), "testkit".into(), jobs)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let metrics = crate::registry().family("testkit").unwrap().metrics();
    results::write_shard(&dir.path().join("t"), &job(1), metrics, &records(5.0)).unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_queued), (1, 1));
    let w = register(&s).await;
    let leases = lease(&s, &w).await;
    assert_eq!(leases.iter().map(|l| l.spec.seed).collect::<Vec<_>>(), vec![0]);
    drop(s);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.parts("t").unwrap().len(), 1, "recorded, so the next start does not read it again");
}

/// The summary files are written when the last job commits, and the store remembers
/// it: a restart leaves them alone, unless they are gone, when it writes them again.
#[tokio::test]
async fn summaries_are_written_with_the_last_commit_and_rebuilt_at_start_only_when_missing() {
    let dir = tempfile::tempdir().unwrap();
    let final_file = dir.path().join("t").join(results::FINAL_FILE);
    let written = {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let jobs = vec![job(0), job(1)];
        s.submit(Submission::new("t".into(), "testkit".into(), jobs)).await.unwrap();
        let w = register(&s).await;
        for l in lease(&s, &w).await {
            assert_eq!(upload_and_complete(&s, &w, l.attempt_id, l.spec.seed as f64).await, Ok(true));
        }
        // The live summaries exist until their files are written.
        if let Some(entry) = s.live_summaries("t") {
            assert_eq!(entry.written().await, Ok(true));
        }
        assert!(final_file.is_file());
        std::fs::read(&final_file).unwrap()
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(Store::open(dir.path()).unwrap().sweeps().unwrap()[0].summarized);
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        assert!(s.live_summaries("t").is_none(), "finished and summarized: nothing to redo");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::remove_file(&final_file).unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    let entry = s.live_summaries("t").expect("its summaries are rebuilt");
    assert_eq!(entry.written().await, Ok(true));
    assert!(std::fs::read(&final_file).unwrap() == written);
}

async fn submit(s: &SchedulerHandle, jobs: Vec<ValidJob>) {
    s.submit(Submission::new("t".into(), "testkit".into(), jobs)).await.unwrap();
}

/// Every call about an attempt names the session that leased it; another session's
/// upload, commit, fail or heartbeat is PERMISSION_DENIED and changes nothing.
#[tokio::test]
async fn another_session_cannot_upload_commit_fail_or_renew_an_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    submit(&s, vec![job(0)]).await;
    let (a, b) = (register(&s).await, register(&s).await);
    assert_ne!(a, b);
    let id = lease(&s, &a).await[0].attempt_id;
    let denied = ErrorKind::PermissionDenied;
    assert_eq!(s.append(id, &b, &records(9.0)).unwrap_err().kind(), denied);
    assert_eq!(upload_and_complete(&s, &b, id, 9.0).await, Err(denied));
    let (session, error) = (b.clone(), "forged".to_string());
    let failed = s.fail(session, id, error, Cause::Worker).await;
    assert_eq!(failed.unwrap_err().kind(), denied);
    let session = b.clone();
    let renewed = s.heartbeat(session, vec![id], vec![]).await;
    assert_eq!(renewed.unwrap_err().kind(), denied);
    let unknown = s.lease("nope".into(), 1).await;
    assert_eq!(unknown.unwrap_err().kind(), ErrorKind::NotFound);
    let st = status(&s).await;
    assert_eq!((st.n_running, st.n_leased, st.n_done, st.n_failed), (0, 1, 0, 0), "nothing changed");
    assert_eq!(upload_and_complete(&s, &a, id, 1.0).await, Ok(true));
}

/// Leased jobs count as leased ahead until their worker says they started; another
/// session cannot say so for them; a job settled or released leaves whichever count held it.
#[tokio::test]
async fn leased_ahead_jobs_are_shown_apart_from_running_ones() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    submit(&s, vec![job(0), job(1), job(2), job(3)]).await;
    let (a, b) = (register(&s).await, register(&s).await);
    let ids: Vec<AttemptId> = lease(&s, &a).await.iter().map(|l| l.attempt_id).collect();
    let counts = |st: SweepStatus| (st.n_running, st.n_leased, st.n_queued, st.n_done);
    assert_eq!(counts(status(&s).await), (0, 4, 0, 0));
    s.heartbeat(b.clone(), vec![], vec![ids[0]]).await.unwrap();
    assert_eq!(counts(status(&s).await), (0, 4, 0, 0), "another session's word changes nothing");
    s.heartbeat(a.clone(), ids.clone(), vec![ids[0], ids[1]]).await.unwrap();
    s.heartbeat(a.clone(), ids.clone(), vec![ids[0], ids[1]]).await.unwrap();
    assert_eq!(counts(status(&s).await), (2, 2, 0, 0), "said twice, counted once");
    // A started and a leased job finish; a leased one is handed back.
    assert_eq!(upload_and_complete(&s, &a, ids[0], 1.0).await, Ok(true));
    assert_eq!(upload_and_complete(&s, &a, ids[2], 1.0).await, Ok(true));
    assert_eq!(s.release(a.clone(), vec![ids[3]]).await.unwrap(), 1);
    assert_eq!(counts(status(&s).await), (1, 0, 1, 2));
    // Leased again: leased, not running, whatever its previous attempt did.
    let again = lease(&s, &b).await;
    assert_eq!(counts(status(&s).await), (1, 1, 0, 2));
    s.heartbeat(b.clone(), vec![again[0].attempt_id], vec![again[0].attempt_id]).await.unwrap();
    assert_eq!(counts(status(&s).await), (2, 0, 0, 2));
}

/// A draining worker hands back jobs it leased ahead: they are queued again, first,
/// and their next attempt is numbered as if the lease had not happened; another
/// session cannot release them, and a finished attempt is skipped.
#[tokio::test]
async fn released_attempts_requeue_their_jobs_uncounted() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    submit(&s, vec![job(0), job(1), job(2)]).await;
    let (a, b) = (register(&s).await, register(&s).await);
    let leases = lease(&s, &a).await;
    assert_eq!(leases.len(), 3);
    let ids: Vec<AttemptId> = leases.iter().map(|l| l.attempt_id).collect();
    let release = |session: &SessionId, attempts: Vec<AttemptId>| s.release(session.clone(), attempts);
    let refused = release(&b, vec![ids[1]]).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::PermissionDenied);
    assert_eq!(upload_and_complete(&s, &a, ids[0], 1.0).await, Ok(true));
    assert_eq!(release(&a, vec![ids[0], ids[1], ids[2]]).await.unwrap(), 2, "the committed one is skipped");
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_queued, st.n_running), (1, 2, 0));
    let again = lease(&s, &b).await;
    let mut seeds: Vec<u64> = again.iter().map(|l| l.spec.seed).collect();
    seeds.sort();
    assert_eq!(seeds, vec![1, 2]);
    assert!(again.iter().all(|l| l.attempt == 1), "a released lease is not an attempt");
    drop(s);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stored = Store::open(dir.path()).unwrap().jobs().unwrap();
    assert!(stored.iter().all(|j| j.attempts <= 1), "the store counts the same");
}

/// Records that break the schema, or a commit without the last steps, void the
/// attempt: the job is queued again and the attempt does not count, until it has been
/// voided MAX_VOIDED times.
#[tokio::test]
async fn records_that_break_the_schema_void_the_attempt_without_counting_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    submit(&s, vec![job(0)]).await;
    let w = register(&s).await;
    let bad = |steps: &[u32]| -> Vec<StepRecord> {
        steps.iter().map(|&step| StepRecord { step, elapsed_ms: 0.0, values: vec![1.0] }).collect()
    };
    // Steps out of order, then a trajectory without its last step (horizon 2: 0..=2).
    for records in [bad(&[0, 0, 1]), bad(&[0, 1])] {
        let l = lease(&s, &w).await;
        assert_eq!(l[0].attempt, 1, "a voided attempt does not count");
        let outcome = upload_and_complete_records(&s, &w, l[0].attempt_id, &records).await;
        assert_eq!(outcome, Err(ErrorKind::InvalidArgument));
        assert_eq!(status(&s).await.n_queued, 1);
    }
    // Through the upload stream: the service voids the attempt as the records arrive.
    let l = lease(&s, &w).await;
    assert!(s.append(l[0].attempt_id, &w, &bad(&[1])).is_err());
    s.refused(l[0].attempt_id).await.unwrap();
    assert_eq!(status(&s).await.n_queued, 1);
    // Voided again and again: the job fails, with the reason.
    for _ in 3..MAX_VOIDED {
        let l = lease(&s, &w).await;
        assert_eq!(
            upload_and_complete_records(&s, &w, l[0].attempt_id, &bad(&[5])).await,
            Err(ErrorKind::InvalidArgument)
        );
    }
    let st = status(&s).await;
    assert_eq!((st.n_queued, st.n_failed), (0, 1));
    let error = &st.failures[0].error;
    assert!(error.contains("step 5 is past the horizon 2") && error.contains("refused 10 times"), "{error}");
}

/// A worker is leased only jobs of the families it registered; registration checks
/// the build digest and the families.
#[tokio::test]
async fn workers_get_only_their_families_and_registration_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    submit(&s, vec![job(0), job(1)]).await;
    let registration_lse = registration(&["lse"]);
    let lse_only = s.register(registration_lse).await.unwrap().session;
    assert!(lease(&s, &lse_only).await.is_empty());
    let w = register(&s).await;
    assert_eq!(lease(&s, &w).await.len(), 2);
    let refused = |registration: Registration| {
        let s = s.clone();
        async move { s.register(registration).await.unwrap_err() }
    };
    let e = refused(Registration { build: "0123".into(), ..registration(&["testkit"]) }).await;
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    assert!(e.message().starts_with("build: the worker's families digest to `0123`"), "{}", e.message());
    let e = refused(registration(&[])).await;
    assert_eq!((e.kind(), e.message()), (ErrorKind::InvalidArgument, "families: name the families this worker runs"));
    let e = refused(registration(&["testkit", "nope"])).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().starts_with("families[1]: unknown family `nope`"), "{}", e.message());
}

/// A declared family's jobs go only to sessions that declared that very digest; a
/// worker cannot run a declared family without declaring it; the declaration and the
/// sweep's jobs, keyed by its digest, survive a restart.
#[tokio::test]
async fn declared_families_are_leased_by_digest_and_survive_a_restart() {
    use crate::coordinator::state::declared;
    let dir = tempfile::tempdir().unwrap();
    let catalog = || Arc::new(Catalog::new(crate::registry()));
    let declaration = |version: u32| {
        let mut info = declared::family_info(crate::registry().family("testkit").unwrap());
        (info.name, info.version, info.code) = ("mybo".into(), version, "c0de".into());
        declared::check(info, &crate::registry()).unwrap()
    };
    let config = SchedulerConfig {
        commit: CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() },
        ..SchedulerConfig::default()
    };
    let first = catalog();
    let s = Scheduler::start(first.clone(), Store::open(dir.path()).unwrap(), dir.path().into(), config).unwrap();
    let v1 = declaration(1);
    let declaration_v1 = v1.clone();
    let declared = s.declare(declaration_v1, Declarer::unlimited("test")).await.unwrap();
    assert!(declared.created);
    let reference = format!("mybo+{}", declared.digest);
    let jobs: Vec<ValidJob> = (0..2)
        .map(|seed| {
            let mut spec = JobSpec::new("mybo", "constant", "echo");
            (spec.seed, spec.horizon) = (seed, 2);
            first.get().validate(&spec).unwrap()
        })
        .collect();
    assert_ne!(jobs[0].key, job(0).key, "the digest salts the key");
    let keys: BTreeSet<String> = jobs.iter().map(|j| j.key.0.clone()).collect();
    let submission = Submission::new("mine".into(), reference.clone(), jobs);
    s.submit(submission).await.unwrap();
    let with = |families: &[&str], declarations: Vec<declared::Checked>| Registration {
        declarations,
        build: String::new(),
        version: String::new(),
        ..registration(families)
    };
    let register_as = |registration: Registration| {
        let s = s.clone();
        async move { s.register(registration).await }
    };
    // Built-in workers and workers of another version of the family get none of them.
    let builtin = register(&s).await;
    assert!(lease(&s, &builtin).await.is_empty());
    let v2 = register_as(with(&["mybo"], vec![declaration(2)])).await.unwrap().session;
    assert!(lease(&s, &v2).await.is_empty());
    // Naming it without declaring it is refused; a worker of declared families only
    // needs neither armada's version nor its build.
    let e = register_as(with(&["mybo"], vec![])).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().starts_with("families[0]: `mybo` is a declared family"), "{}", e.message());
    let mut changed = v1.clone();
    changed.info.algorithms[1].params[0].default =
        Some(armada_proto::wire::param_to_wire(&armada_core::ParamValue::Int(7)));
    let changed = declared::check(changed.info, &crate::registry()).unwrap();
    let e = register_as(with(&["mybo"], vec![changed])).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
    assert!(e.message().starts_with("declarations[0]: family `mybo` version 1 is declared already"), "{}", e.message());
    let mine = register_as(with(&["mybo"], vec![v1.clone()])).await.unwrap().session;
    let leased = lease(&s, &mine).await;
    assert_eq!(leased.iter().map(|l| l.job_key.clone()).collect::<BTreeSet<_>>(), keys);
    // Its trajectory records who produced it, under which declaration.
    assert_eq!(upload_and_complete(&s, &mine, leased[0].attempt_id, 1.0).await, Ok(true));
    let parts = results::part_files(&dir.path().join("mine")).unwrap();
    let provenance = results::read_provenance(&parts[0]).unwrap();
    let expected = Provenance {
        worker: "w3".into(),
        name: "test".into(),
        host: "test-host".into(),
        software: "test".into(),
        processor: "test-processor".into(),
        attempt_id: leased[0].attempt_id.0,
        family_digest: declared.digest.clone(),
        code: "c0de".into(),
        token: "tokens[1]".into(),
        peer: "127.0.0.1:5000".into(),
        registered_ms: 1_700_000_000_000,
    };
    assert_eq!(provenance.into_iter().collect::<Vec<_>>(), vec![(leased[0].job_key.clone(), expected)]);
    let keys: BTreeSet<String> = keys.into_iter().filter(|k| *k != leased[0].job_key).collect();
    // Restart on the same store with a catalog of the built-in families only.
    drop(s);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = catalog();
    let s = Scheduler::start(second.clone(), Store::open(dir.path()).unwrap(), dir.path().into(), config).unwrap();
    assert_eq!(second.get().resolve(&reference).unwrap().version(), 1);
    let again = s.register(with(&["mybo"], vec![v1])).await;
    let leased = lease(&s, &again.unwrap().session).await;
    assert_eq!(leased.iter().map(|l| l.job_key.clone()).collect::<BTreeSet<_>>(), keys, "queued again, same keys");
}

/// A sweep of a built-in family that names an extension's algorithm beside the family's
/// own: the extension's jobs go only to sessions that declared it, the family's only to
/// its workers; both survive a restart under the keys they were stored with; a
/// resubmission without the extension drops its jobs and the sweep forgets it.
#[tokio::test]
async fn an_extensions_jobs_share_a_sweep_and_go_to_its_workers_only() {
    use crate::coordinator::durable::catalog::tests::extension;
    use crate::coordinator::state::declared;
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        commit: CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() },
        ..SchedulerConfig::default()
    };
    let start = |catalog: Arc<Catalog>| {
        Scheduler::start(catalog, Store::open(dir.path()).unwrap(), dir.path().into(), config).unwrap()
    };
    let ext = declared::check(extension("my-testkit", "testkit", &["mine"]), &crate::registry()).unwrap();
    let catalog = Arc::new(Catalog::new(crate::registry()));
    let s = start(catalog.clone());
    let digest = s.declare(ext.clone(), Declarer::unlimited("test")).await.unwrap().digest;
    let jobs_of = |algorithm: &str| -> Vec<ValidJob> {
        (0..2)
            .map(|seed| {
                let mut spec = JobSpec::new("testkit", "constant", algorithm);
                (spec.seed, spec.horizon) = (seed, 2);
                catalog.get().validate(&spec).unwrap()
            })
            .collect()
    };
    let keys = |jobs: &[ValidJob]| jobs.iter().map(|j| j.key.0.clone()).collect::<BTreeSet<_>>();
    let (echo, mine) = (jobs_of("echo"), jobs_of("mine"));
    assert_eq!(echo[0].key, job(0).key, "the family's own jobs keep their keys");
    let all = [echo.clone(), mine.clone()].concat();
    let submission = Submission::with_extensions("t".into(), "testkit".into(), all, &catalog.get()).unwrap();
    s.submit(submission).await.unwrap();
    assert_eq!(status(&s).await.family, format!("testkit my-testkit+{digest}"));
    let extension_worker = Registration {
        declarations: vec![ext.clone()],
        build: String::new(),
        version: String::new(),
        ..registration(&["my-testkit"])
    };
    let builtin = register(&s).await;
    let leased_keys = |leases: &[Lease]| leases.iter().map(|l| l.job_key.clone()).collect::<BTreeSet<_>>();
    assert_eq!(leased_keys(&lease(&s, &builtin).await), keys(&echo));
    let theirs = s.register(extension_worker.clone()).await.unwrap().session;
    let leased = lease(&s, &theirs).await;
    assert_eq!(leased_keys(&leased), keys(&mine));
    assert!(leased.iter().all(|l| l.spec.family == "testkit" && l.spec.algorithm == "mine"));
    // Its records are checked against the family's metrics, and record the extension.
    assert_eq!(upload_and_complete(&s, &theirs, leased[0].attempt_id, 1.0).await, Ok(true));
    let part = results::part_files(&dir.path().join("t")).unwrap().remove(0);
    let provenance = results::read_provenance(&part).unwrap();
    assert_eq!(provenance[&leased[0].job_key].family_digest, digest);

    // Restart with the built-in families only: the store brings the extension back, and
    // each job goes to its own workers again under its key.
    drop(s);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = start(Arc::new(Catalog::new(crate::registry())));
    let theirs = s.register(extension_worker.clone()).await.unwrap().session;
    let rest: BTreeSet<String> = keys(&mine).into_iter().filter(|k| *k != leased[0].job_key).collect();
    assert_eq!(leased_keys(&lease(&s, &theirs).await), rest);
    assert_eq!(leased_keys(&lease(&s, &register(&s).await).await), keys(&echo));
    assert_eq!(status(&s).await.n_done, 1);

    // Resubmitted without the extension: its jobs leave the sweep, which forgets it.
    s.submit(Submission::with_extensions("t".into(), "testkit".into(), echo.clone(), &crate::registry()).unwrap())
        .await
        .unwrap();
    assert_eq!((status(&s).await.family, status(&s).await.n_jobs), ("testkit".to_string(), 2));
    drop(s);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = start(Arc::new(Catalog::new(crate::registry())));
    assert_eq!((status(&s).await.family, status(&s).await.n_jobs), ("testkit".to_string(), 2));
}

/// A worker silent for `forget_worker_after` is dropped from the list once it holds no
/// lease, and must register again; one that keeps heartbeating stays, and so does a
/// silent one while it still holds a lease.
#[tokio::test(start_paused = true)]
async fn silent_workers_holding_nothing_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        lease_ttl: Duration::from_secs(100),
        forget_worker_after: Duration::from_secs(30),
        ..SchedulerConfig::default()
    };
    let s = start_with(dir.path(), config);
    submit(&s, vec![job(0)]).await;
    let (holder, idle, live) = (register(&s).await, register(&s).await, register(&s).await);
    assert_eq!(lease(&s, &holder).await.len(), 1);
    let heartbeat = |session: &SessionId| {
        let (s, session) = (s.clone(), session.clone());
        async move { s.heartbeat(session, vec![], vec![]).await }
    };
    let listed = || async { s.workers().await.unwrap() };
    let ids = |workers: Vec<WorkerInfo>| workers.into_iter().map(|w| w.id).collect::<Vec<_>>();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        heartbeat(&live).await.unwrap();
    }
    // 40 s on: `idle` is gone, `holder` still holds its lease (100 s), `live` spoke.
    assert_eq!(ids(listed().await), ["w1", "w3"]);
    let e = heartbeat(&idle).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.message().contains("register again"), "{}", e.message());
    // The lease expires at 100 s; 30 s later the holder, silent since 0 s, is gone too.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        heartbeat(&live).await.unwrap();
    }
    assert_eq!(ids(listed().await), ["w3"]);
    assert_eq!(status(&s).await.n_queued, 1, "the expired lease's job is queued again");
    // A forgotten worker that comes back registers under a new id.
    let back = register(&s).await;
    assert_eq!(lease(&s, &back).await.len(), 1);
    assert_eq!(ids(listed().await), ["w3", "w4"]);
}

/// Workers come and go by the thousand (a Slurm array's tasks): 10,000 sessions that asked
/// for jobs and fell silent are all forgotten, twice over, so the sessions a coordinator
/// keeps do not grow with the workers it has seen.
#[tokio::test(start_paused = true)]
async fn ten_thousand_sessions_registered_and_gone_are_all_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig { forget_worker_after: Duration::from_secs(30), ..SchedulerConfig::default() };
    let s = start_with(dir.path(), config);
    for round in 0..2 {
        let mut sessions = Vec::new();
        for _ in 0..10_000 {
            let session = register(&s).await;
            assert!(lease(&s, &session).await.is_empty(), "nothing to lease, but it asked");
            sessions.push(session);
        }
        assert_eq!(s.workers().await.unwrap().len(), 10_000, "round {round}");
        tokio::time::sleep(Duration::from_secs(31)).await;
        assert!(s.workers().await.unwrap().is_empty(), "round {round}: every silent session forgotten");
        for session in [&sessions[0], &sessions[9_999]] {
            let e = s.heartbeat(session.clone(), vec![], vec![]).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotFound, "round {round}");
        }
    }
}

/// A session that never asked for jobs (its worker died after registering, or registered
/// again) is forgotten after a minute of silence, not ten: a worker that keeps losing its
/// connection does not pile sessions up. One that asked stays for `forget_worker_after`.
#[tokio::test(start_paused = true)]
async fn sessions_that_never_asked_for_jobs_are_forgotten_after_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let s = start_with(dir.path(), SchedulerConfig::default());
    let (given_up, asked) = (register(&s).await, register(&s).await);
    assert!(lease(&s, &asked).await.is_empty(), "nothing to lease, but it asked");
    let ids = || async { s.workers().await.unwrap().into_iter().map(|w| w.id).collect::<Vec<_>>() };
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert_eq!(ids().await, ["w1", "w2"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(ids().await, ["w2"], "the session that never asked is gone after a minute");
    assert_eq!(s.heartbeat(given_up, vec![], vec![]).await.unwrap_err().kind(), ErrorKind::NotFound);
    tokio::time::sleep(Duration::from_secs(600 - 61)).await;
    assert_eq!(ids().await, ["w2"], "one that asked stays for forget_worker_after");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(ids().await.is_empty());
}

/// A lease answers at most what the session's slots and the prefetch depth justify
/// (513 jobs a slot; one slot when it did not say), whatever it asks for.
#[tokio::test]
async fn a_lease_takes_at_most_what_the_sessions_slots_justify() {
    let dir = tempfile::tempdir().unwrap();
    let s = start_with(dir.path(), SchedulerConfig::default());
    submit(&s, (0..3000).map(job).collect()).await;
    let mut leased = Vec::new();
    for slots in [1, 2, 0] {
        let session = s.register(Registration { slots, ..registration(&["testkit"]) }).await.unwrap().session;
        leased.push(s.lease(session, u32::MAX).await.unwrap().leases.len());
    }
    assert_eq!(leased, [513, 1026, 513]);
    assert_eq!(status(&s).await.n_queued, 3000 - 2052);
}

/// A status lists a page of the failures (100 by default) and says how many it left
/// out; an error a worker reports is clipped to MAX_ERROR_BYTES.
#[tokio::test]
async fn statuses_page_their_failures_and_clip_long_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = start_with(dir.path(), SchedulerConfig { max_attempts: 1, ..SchedulerConfig::default() });
    submit(&s, (0..150).map(job).collect()).await;
    let w = register(&s).await;
    let long = "é".repeat(MAX_ERROR_BYTES); // 2 bytes each
    loop {
        let session = w.clone();
        let leases = s.lease(session, 64).await.unwrap().leases;
        if leases.is_empty() {
            break;
        }
        for l in leases {
            let (session, error) = (w.clone(), long.clone());
            s.fail(session, l.attempt_id, error, Cause::Worker).await.unwrap();
        }
    }
    let st = status(&s).await;
    assert_eq!((st.n_failed, st.failures.len(), st.n_failures_omitted), (150, 100, 50));
    let error = &st.failures[0].error;
    assert!(error.len() <= MAX_ERROR_BYTES + 40, "{}", error.len());
    assert!(
        error.ends_with(&format!(" ... ({} more bytes)", 2 * MAX_ERROR_BYTES - MAX_ERROR_BYTES)),
        "{}",
        &error[error.len() - 40..]
    );
    let failures = FailurePage { offset: 120, limit: 100 };
    let page = s.status("t".into(), failures).await.unwrap();
    assert_eq!((page.failures.len(), page.n_failures_omitted), (30, 120));
    assert_eq!(page.failures[0].job_key, job(120).key.0, "in job order");
    // A list of every sweep carries counts, not failures: its size does not grow with them.
    let listed = s.list().await.unwrap();
    assert_eq!((listed[0].n_failed, listed[0].failures.len(), listed[0].n_failures_omitted), (150, 0, 150));
}

/// Temp files a killed writer left in a sweep's directories are removed at start-up;
/// other files stay.
#[tokio::test]
async fn leftover_temp_files_are_removed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, vec![job(0)]).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sweep_dir = dir.path().join("t");
    let trajectories = results::trajectories_dir(&sweep_dir);
    std::fs::create_dir_all(&trajectories).unwrap();
    let temp = [sweep_dir.join(".summary.parquet.77.0.tmp"), trajectories.join(".part-ab.parquet.77.1.tmp")];
    for path in &temp {
        std::fs::write(path, b"half a file").unwrap();
    }
    std::fs::write(sweep_dir.join("notes.txt"), b"mine").unwrap();
    let _s = start(dir.path(), Duration::from_secs(60)).await;
    assert!(temp.iter().all(|p| !p.exists()));
    assert!(sweep_dir.join("notes.txt").exists());
}

/// A finished sweep can be deleted (not a running one): it is gone from the scheduler
/// and the store, and its name can be used afresh.
#[tokio::test]
async fn a_settled_sweep_is_deleted_from_the_store_and_a_running_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut first_ids = Vec::new();
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, vec![job(0), job(1)]).await;
        let refused = s.delete("t".into()).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::FailedPrecondition);
        let w = register(&s).await;
        for l in lease(&s, &w).await {
            first_ids.push(l.attempt_id);
            assert_eq!(upload_and_complete(&s, &w, l.attempt_id, 1.0).await, Ok(true));
        }
        let (sweep_dir, n_jobs) = s.delete("t".into()).await.unwrap();
        assert_eq!((sweep_dir, n_jobs), (dir.path().join("t"), 2));
        let gone = s.status("t".into(), FailurePage::default());
        assert_eq!(gone.await.unwrap_err().kind(), ErrorKind::NotFound);
        let missing = s.delete("t".into()).await.unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert!(s.live_summaries("t").is_none());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let store = Store::open(dir.path()).unwrap();
    assert!(store.sweeps().unwrap().is_empty() && store.jobs().unwrap().is_empty());
    drop(store);
    // The same name again: a new sweep, whose jobs are found done on disk (results kept).
    let s = start(dir.path(), Duration::from_secs(60)).await;
    let jobs = vec![job(0), job(1)];
    let again = s.submit(Submission::new("t".into(), "testkit".into(), jobs)).await.unwrap();
    assert_eq!((again.n_added, again.n_already_done), (2, 2));
    // No attempt id of the deleted sweep is used again.
    s.submit(Submission::new("u".into(), "testkit".into(), vec![job(7)])).await.unwrap();
    let later = lease(&s, &register(&s).await).await;
    assert_eq!(first_ids.len(), 2);
    assert!(later.len() == 1 && later[0].attempt_id > *first_ids.iter().max().unwrap(), "{first_ids:?} then {later:?}");
}

/// Attempt ids are reserved a block at a time: each new life starts after the block the
/// last one reserved, so ids grow across restarts and within a life, never repeating, and
/// the store is written once per block, not per lease.
#[tokio::test]
async fn attempt_ids_grow_across_restarts_and_are_reserved_a_block_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen: Vec<u64> = Vec::new();
    for life in 0..3u64 {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let name = format!("s{life}");
        let jobs: Vec<ValidJob> = (10 * life..10 * life + 6).map(job).collect();
        s.submit(Submission::new(name.clone(), "testkit".into(), jobs)).await.unwrap();
        let w = register(&s).await;
        let mut ids: Vec<u64> = Vec::new();
        // Leases of one job at a time: ids in order, with no gaps within a life.
        for _ in 0..6 {
            ids.extend(s.lease(w.clone(), 1).await.unwrap().leases.iter().map(|l| l.attempt_id.0));
        }
        assert_eq!(ids.len(), 6, "life {life}");
        assert!(ids.windows(2).all(|p| p[1] == p[0] + 1), "life {life}: {ids:?}");
        assert!(seen.last().is_none_or(|&last| ids[0] > last), "life {life}: {ids:?} after {seen:?}");
        seen.extend(&ids);
        drop(s);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let reserved = Store::open(dir.path()).unwrap().max_attempt_id().unwrap();
        assert_eq!(reserved, ids[0] + ATTEMPT_ID_BLOCK, "life {life}: one block reserved from its first id");
    }
}

/// A worker that dies holding jobs it leased ahead is charged only for those it said it
/// started: with one attempt a job, the started one fails, the others are leased again as
/// their first attempt.
#[tokio::test(start_paused = true)]
async fn a_lease_that_expires_before_its_job_started_is_not_charged() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig { lease_ttl: Duration::from_secs(10), max_attempts: 1, ..SchedulerConfig::default() };
    let s = start_with(dir.path(), config);
    submit(&s, (0..5).map(job).collect()).await;
    let w = register(&s).await;
    let leased = lease(&s, &w).await;
    assert_eq!(leased.len(), 5);
    let ids: Vec<AttemptId> = leased.iter().map(|l| l.attempt_id).collect();
    s.heartbeat(w.clone(), ids.clone(), vec![ids[0]]).await.unwrap();
    assert_eq!(status(&s).await.n_leased, 4);
    tokio::time::sleep(Duration::from_secs(11)).await;
    let st = status(&s).await;
    assert_eq!((st.n_failed, st.n_queued, st.n_running), (1, 4, 0), "only the started job is charged");
    assert!(st.failures[0].error.starts_with("lease expired: worker"), "{}", st.failures[0].error);
    let again = lease(&s, &register(&s).await).await;
    assert_eq!(again.len(), 4);
    assert!(again.iter().all(|l| l.attempt == 1), "uncharged: still their first attempt");
}

/// The README's promise: a late result commits if no other attempt did, even when the
/// job failed meanwhile because that attempt was its last (and the worker's heartbeat is
/// not told to abandon it); the sweep's summaries then include it.
#[tokio::test(start_paused = true)]
async fn a_late_result_on_the_last_attempt_commits_when_nothing_else_did() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig { lease_ttl: Duration::from_secs(10), max_attempts: 1, ..SchedulerConfig::default() };
    let s = start_with(dir.path(), config);
    submit(&s, vec![job(0)]).await;
    let w = register(&s).await;
    let id = lease(&s, &w).await[0].attempt_id;
    s.heartbeat(w.clone(), vec![id], vec![id]).await.unwrap();
    tokio::time::sleep(Duration::from_secs(11)).await;
    let st = status(&s).await;
    assert_eq!((st.n_failed, st.n_running), (1, 0), "its only attempt expired");
    assert!(st.failures[0].error.contains("lease expired"));
    // Its heartbeat is not told to abandon the work: a result may still come, and count.
    assert_eq!(s.heartbeat(w.clone(), vec![id], vec![]).await.unwrap(), Vec::<AttemptId>::new());
    assert_eq!(upload_and_complete(&s, &w, id, 4.0).await, Ok(true));
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_failed), (1, 0));
    if let Some(entry) = s.live_summaries("t") {
        assert_eq!(entry.written().await, Ok(true));
    }
    let summary = dir.path().join("t").join(results::SUMMARY_FILE);
    let rows = ParquetReader::new(std::fs::File::open(&summary).unwrap()).finish().unwrap();
    let n: Vec<Option<i64>> = rows.column("n").unwrap().i64().unwrap().iter().collect();
    assert_eq!(n, vec![Some(1); 3], "the revived job is in the summaries");
}

/// A large sweep is stored a chunk at a time, answering other commands in between:
/// heartbeats sent while it is stored are answered before it is, and keep their lease.
#[tokio::test]
async fn heartbeats_are_answered_while_a_large_sweep_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_millis(400)).await;
    submit(&s, vec![job(0)]).await;
    let w = register(&s).await;
    let id = lease(&s, &w).await[0].attempt_id;
    let jobs: Vec<ValidJob> = (1..60_001).map(job).collect();
    let submission = Submission::new("big".into(), "testkit".into(), jobs);
    let mut submitted = s.send(Submit { submission }).await.unwrap();
    let mut answered_meanwhile = 0;
    while submitted.is_pending() {
        let session = w.clone();
        let renewed = s.heartbeat(session, vec![id], vec![id]).await.unwrap();
        assert!(renewed.is_empty());
        answered_meanwhile += usize::from(submitted.is_pending());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answered_meanwhile > 0, "no heartbeat was answered while the sweep was stored");
    assert_eq!(status(&s).await.n_running, 1);
    assert_eq!(upload_and_complete(&s, &w, id, 1.0).await, Ok(true));
    let big = s.status("big".into(), FailurePage::default());
    assert_eq!(big.await.unwrap().n_queued, 60_000);
}

/// A resubmission larger than a store chunk keeps the jobs it shares with the sweep,
/// adds the others, drops the ones it lacks and queues cancelled jobs again; the store
/// holds exactly that, in run order, after a restart.
#[tokio::test]
async fn a_resubmission_adds_drops_and_requeues_and_the_store_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = |range: std::ops::Range<u64>| range.map(job).collect::<Vec<_>>();
    async fn resubmit(s: &SchedulerHandle, jobs: Vec<ValidJob>) -> Result<Submitted, CommandError> {
        let submission = Submission::new("t".into(), "testkit".into(), jobs);
        s.submit(submission).await
    }
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        let first = resubmit(&s, seeds(0..5000)).await.unwrap();
        assert_eq!((first.n_jobs, first.n_added), (5000, 5000));
        let cancelled = s.cancel("t".into()).await.unwrap();
        assert_eq!(cancelled.n_cancelled, 5000);
        let again = resubmit(&s, seeds(2000..7000)).await.unwrap();
        assert_eq!((again.n_jobs, again.n_added, again.n_already_done), (5000, 2000, 0));
        let st = status(&s).await;
        assert_eq!((st.n_queued, st.n_cancelled), (5000, 0));
        let w = register(&s).await;
        let first_seeds: Vec<u64> = lease(&s, &w).await.iter().map(|l| l.spec.seed).collect();
        assert_eq!(first_seeds, (2000..2008).collect::<Vec<_>>(), "kept jobs first, in run order");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let store = Store::open(dir.path()).unwrap();
    let stored: Vec<(u64, String)> =
        store.jobs().unwrap().into_iter().map(|j| (SpecTemplate::decode(&j.spec).unwrap().1, j.key)).collect();
    let expected: Vec<(u64, String)> = seeds(2000..7000).into_iter().map(|j| (j.spec.seed, j.key.0)).collect();
    assert!(stored == expected, "the store holds the resubmitted jobs, in run order, each under its key");
    drop(store);
    let s = start(dir.path(), Duration::from_secs(60)).await;
    let st = status(&s).await;
    assert_eq!((st.n_jobs, st.n_queued, st.n_running), (5000, 5000, 0), "the leased jobs are queued again");
}

/// A restarted scheduler finds the sweep, voids the running attempt and re-queues its job.
#[tokio::test]
async fn a_restart_requeues_running_jobs_and_keeps_done_ones() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        s.submit(Submission::new("t".into(), "testkit".into(), vec![job(0), job(1)])).await.unwrap();
        let w = register(&s).await;
        let leases = lease(&s, &w).await;
        assert_eq!(upload_and_complete(&s, &w, leases[0].attempt_id, 1.0).await, Ok(true));
        // leases[1] is running when this scheduler goes away, as if killed; the next opens its store.
    }
    // The dropped handle stops the actor, which closes (and unlocks) the store.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let s = start(dir.path(), Duration::from_secs(60)).await;
    let st = status(&s).await;
    assert_eq!((st.n_done, st.n_queued, st.n_running), (1, 1, 0));
    let w = register(&s).await;
    let leases = lease(&s, &w).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].attempt, 2, "the voided attempt counts");
    // Attempt ids never repeat across restarts.
    assert!(leases[0].attempt_id > AttemptId(2));
}

/// `armada run`'s coordinator runs its own sweep only, leaving other sweeps' queued jobs
/// in the store untouched; a second coordinator cannot open a store that is in use.
#[tokio::test]
async fn an_embedded_coordinator_leases_only_submitted_sweeps_and_the_store_is_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    let submit = |s: &SchedulerHandle, name: &str, jobs: Vec<ValidJob>| {
        let (s, name) = (s.clone(), name.to_string());
        async move { s.submit(Submission::new(name, "testkit".into(), jobs)).await.unwrap() }
    };
    {
        let s = start(dir.path(), Duration::from_secs(60)).await;
        submit(&s, "a", vec![job(0), job(1)]).await;
        // While this coordinator lives, nobody else opens its store.
        let err = Store::open(dir.path()).err().expect("the store is locked").to_string();
        assert!(err.contains("in use by another coordinator"), "{err}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let config = SchedulerConfig { only_submitted: true, ..SchedulerConfig::default() };
    let s = Scheduler::start(
        Arc::new(Catalog::new(crate::registry())),
        Store::open(dir.path()).unwrap(),
        dir.path().into(),
        config,
    )
    .unwrap();
    submit(&s, "b", vec![job(5)]).await;
    let w = register(&s).await;
    let leases = lease(&s, &w).await;
    assert_eq!(leases.iter().map(|l| l.sweep_id.as_str()).collect::<Vec<_>>(), vec!["b"]);
    // Sweep a is still there, queued; resubmitting it runs it.
    let st = s.status("a".into(), FailurePage::default()).await.unwrap();
    assert_eq!((st.n_queued, st.n_running), (2, 0));
    submit(&s, "a", vec![job(0), job(1)]).await;
    assert_eq!(lease(&s, &w).await.len(), 2);
}

/// The store of `dir`, once the killed coordinator's actor has stopped and unlocked it
/// (it stops once its handles are gone: within 30 s, which a loaded machine may need).
async fn reopen(dir: &std::path::Path) -> Result<Store, StoreError> {
    let mut reopened = Store::open(dir);
    for _ in 0..3000 {
        if reopened.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        reopened = Store::open(dir);
    }
    reopened
}

/// The keys of the jobs in the parts of `sweep_dir`, sorted (a key in two parts twice).
fn keys_in_parts(sweep_dir: &std::path::Path) -> Vec<String> {
    let mut keys = Vec::new();
    for part in results::part_files(sweep_dir).unwrap() {
        keys.extend(results::read_index(&part).unwrap().into_iter().map(|j| j.key));
    }
    keys.sort();
    keys
}

/// A coordinator started on what a killed one left in `dir`, made to run every job left:
/// none that the dead one wrote to a part of `sweeps` runs again, and every one commits.
async fn restart_and_run_the_rest(
    catalog: Arc<Catalog>,
    dir: &std::path::Path,
    config: SchedulerConfig,
    sweeps: &[&str],
    context: &str,
) -> SchedulerHandle {
    let reopened = reopen(dir).await;
    let reopened = reopened.unwrap_or_else(|e| panic!("{context}: the killed coordinator's store: {e}"));
    let left: BTreeSet<String> = sweeps.iter().flat_map(|name| keys_in_parts(&dir.join(name))).collect();
    let s = Scheduler::start(catalog, reopened, dir.to_path_buf(), config).unwrap();
    let session = register(&s).await;
    loop {
        let leases = lease(&s, &session).await;
        if leases.is_empty() {
            return s;
        }
        for l in leases {
            assert!(!left.contains(&l.job_key), "{context}: {} ran again", l.job_key);
            assert_eq!(upload_and_complete(&s, &session, l.attempt_id, 3.0).await, Ok(true), "{context}");
        }
    }
}

/// The history the crash test kills at every write: two submissions, a commit, a failure,
/// a release, another commit. True when every step was answered without an error.
async fn crash_history(s: &SchedulerHandle) -> bool {
    let sweep =
        |name: &str, seeds: std::ops::Range<u64>| Submission::new(name.into(), "testkit".into(), seeds.map(job));
    let mut ok = s.submit(sweep("a", 0..4)).await.is_ok();
    let Ok(registered) = s.register(registration(&["testkit"])).await else { return false };
    let session = registered.session;
    let leases = s.lease(session.clone(), 3).await.map(|l| l.leases).unwrap_or_default();
    ok &= leases.len() == 3;
    for (i, l) in leases.iter().enumerate() {
        ok &= match i {
            0 => upload_and_complete(s, &session, l.attempt_id, 1.0).await == Ok(true),
            1 => s.fail(session.clone(), l.attempt_id, "boom".into(), Cause::Worker).await.is_ok(),
            _ => s.release(session.clone(), vec![l.attempt_id]).await.is_ok(),
        };
    }
    ok &= s.submit(sweep("b", 10..13)).await.is_ok();
    let leases = s.lease(session.clone(), 1).await.map(|l| l.leases).unwrap_or_default();
    for l in &leases {
        ok &= upload_and_complete(s, &session, l.attempt_id, 2.0).await == Ok(true);
    }
    ok && leases.len() == 1
}

/// A coordinator killed between any two of its store writes (every later write refused,
/// as if the process had stopped there), then started again on what it left: each
/// submission is there whole or not at all, no trajectory the dead one wrote is run again
/// (a part it did not live to record marks its jobs done), and once the new coordinator
/// has run what is left, every job of a sweep is done, its trajectory in exactly one part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_killed_between_any_two_store_writes_recovers() {
    let expected: [(&str, std::ops::Range<u64>); 2] = [("a", 0..4), ("b", 10..13)];
    let commit = CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() };
    let config = SchedulerConfig { commit, ..SchedulerConfig::default() };
    let (mut crash_after, mut present) = (0, [0; 2]);
    loop {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.crash_after(crash_after);
        let catalog = Arc::new(Catalog::new(crate::registry()));
        let whole = match Scheduler::start(catalog.clone(), store, dir.path().to_path_buf(), config) {
            Ok(s) => crash_history(&s).await,
            Err(_) => false,
        };
        let context = format!("crash after {crash_after} writes");
        let names: Vec<&str> = expected.iter().map(|(name, _)| *name).collect();
        let s = restart_and_run_the_rest(catalog, dir.path(), config, &names, &context).await;
        let keys_in_parts = |name: &str| keys_in_parts(&dir.path().join(name));
        for (n, (name, seeds)) in expected.iter().enumerate() {
            let context = format!("crash after {crash_after} writes, sweep {name}");
            let Ok(st) = s.status(SweepId::from(name.to_string()), FailurePage::default()).await else { continue };
            present[n] += 1;
            let n_jobs = seeds.clone().count() as u32;
            assert_eq!((st.n_jobs, st.n_done, st.n_failed), (n_jobs, n_jobs, 0), "{context}: whole and done");
            let in_parts = keys_in_parts(name);
            let mut keys: Vec<String> = seeds.clone().map(|seed| job(seed).key.to_string()).collect();
            keys.sort();
            assert_eq!(in_parts, keys, "{context}: each job in exactly one part");
        }
        drop(s);
        if whole {
            break;
        }
        crash_after += 1;
    }
    // The history made that many writes; each sweep was lost to an early crash and kept
    // after a later one.
    assert!(crash_after >= 10, "only {crash_after} writes: is the crash hook in place?");
    assert!(present.iter().all(|&p| p > 0 && p <= crash_after), "{present:?} of {}", crash_after + 1);
}

/// What a random history asked for: each sweep's submissions in order (their keys), and
/// how many of them were answered.
#[derive(Default)]
struct Asked {
    submitted: HashMap<&'static str, Vec<BTreeSet<String>>>,
    answered: HashMap<&'static str, usize>,
}

/// A random history of requests, drawn from `seed`: submissions and resubmissions of two
/// sweeps (random subsets of their seeds), leases of a few jobs whose attempts commit,
/// fail or are released, and cancels. True when every request was answered.
async fn random_history(s: &SchedulerHandle, seed: u64, asked: &mut Asked) -> bool {
    let mut rng = crate::testing::Gen::new(seed);
    let Ok(registered) = s.register(registration(&["testkit"])).await else { return false };
    let session = registered.session;
    let mut ok = true;
    for _ in 0..12 {
        let name = *rng.pick(&["a", "b"]);
        let base = if name == "a" { 0 } else { 100 };
        match rng.below(10) {
            0..=2 => {
                let seeds: Vec<u64> = (base..base + 6).filter(|_| rng.chance(70)).collect();
                let keys = seeds.iter().map(|&seed| job(seed).key.to_string()).collect();
                asked.submitted.entry(name).or_default().push(keys);
                let submission = Submission::new(name.into(), "testkit".into(), seeds.into_iter().map(job));
                if s.submit(submission).await.is_ok() {
                    *asked.answered.entry(name).or_default() = asked.submitted[name].len();
                } else {
                    ok = false;
                }
            }
            3..=8 => {
                let max_jobs = 1 + rng.below(3) as u32;
                let Ok(leases) = s.lease(session.clone(), max_jobs).await else { return false };
                for l in leases.leases {
                    ok &= match rng.below(10) {
                        0..=5 => upload_and_complete(s, &session, l.attempt_id, 1.0).await.is_ok(),
                        6..=7 => s.fail(session.clone(), l.attempt_id, "boom".into(), Cause::Worker).await.is_ok(),
                        _ => s.release(session.clone(), vec![l.attempt_id]).await.is_ok(),
                    };
                }
            }
            _ => ok &= s.cancel(name.into()).await.is_ok() || !asked.answered.contains_key(name),
        }
    }
    ok
}

/// Random histories with the coordinator killed between two of its store writes (every
/// later write refused), then started again on what it left and made to run what is
/// left: each sweep holds one of its submissions whole (the last answered or a later
/// one), nothing the dead coordinator wrote to disk is run again, and every job is
/// settled, each done one in exactly one part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_killed_between_any_two_store_writes_recover() {
    let commit = CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() };
    let config = SchedulerConfig { commit, ..SchedulerConfig::default() };
    let (mut crashes, mut kept) = (0, 0);
    for seed in 1..=6u64 {
        let mut rng = crate::testing::Gen::new(1000 + seed);
        let mut crash_after = rng.below(3) as usize;
        loop {
            let context = format!("seed {seed}, crash after {crash_after} writes");
            let dir = tempfile::tempdir().unwrap();
            let mut store = Store::open(dir.path()).unwrap();
            store.crash_after(crash_after);
            let catalog = Arc::new(Catalog::new(crate::registry()));
            let mut asked = Asked::default();
            let whole = match Scheduler::start(catalog.clone(), store, dir.path().to_path_buf(), config) {
                Ok(s) => random_history(&s, seed, &mut asked).await,
                Err(_) => false,
            };
            let s = restart_and_run_the_rest(catalog, dir.path(), config, &["a", "b"], &context).await;
            let keys_in_parts = |name: &str| keys_in_parts(&dir.path().join(name));
            for name in ["a", "b"] {
                let submitted = asked.submitted.get(name).map_or(&[][..], |v| &v[..]);
                let Ok(st) = s.status(SweepId::from(name.to_string()), FailurePage::default()).await else {
                    assert_eq!(asked.answered.get(name), None, "{context}: answered sweep {name} lost");
                    continue;
                };
                kept += 1;
                let jobs = s.jobs(SweepId::from(name.to_string()), JobFilter::default(), 1000).await.unwrap();
                let keys: BTreeSet<String> = jobs.iter().map(|j| j.key.clone()).collect();
                let from = asked.answered.get(name).copied().unwrap_or(1).max(1) - 1;
                assert!(submitted[from..].contains(&keys), "{context}: sweep {name} holds {keys:?}");
                assert_eq!((st.n_queued, st.n_running), (0, 0), "{context}: {name} left unsettled");
                assert_eq!(st.n_done + st.n_failed + st.n_cancelled, st.n_jobs, "{context}: {name}");
                let done: Vec<String> = jobs.iter().filter(|j| j.state == "done").map(|j| j.key.clone()).collect();
                let in_parts = keys_in_parts(name);
                let in_parts_once: BTreeSet<&String> = in_parts.iter().collect();
                assert_eq!(in_parts_once.len(), in_parts.len(), "{context}: {name}: a job in two parts");
                for key in &done {
                    assert!(in_parts_once.contains(key), "{context}: {name}: done {key} in no part");
                }
            }
            drop(s);
            if whole {
                break;
            }
            crashes += 1;
            crash_after += 1 + rng.below(3) as usize;
        }
    }
    // The histories crashed often and kept sweeps (floors chosen, not measured).
    assert!(crashes >= 20 && kept >= 20, "{crashes} crashes, {kept} sweeps kept");
}

/// The event channels of sweeps no one watches any more are dropped, those still watched
/// kept (the tick calls this every 100 ms).
#[test]
fn unwatched_event_channels_are_dropped_and_watched_ones_kept() {
    let mut watchers = HashMap::new();
    let (kept, left) = (Watchers::new(), Watchers::new());
    let (_kept_rx, left_rx) = (kept.events.subscribe(), left.events.subscribe());
    watchers.insert(SweepId::from("watched"), kept);
    watchers.insert(SweepId::from("finished"), left);
    assert_eq!(prune_unwatched(&mut watchers), 0, "both are watched");
    drop(left_rx);
    assert_eq!(prune_unwatched(&mut watchers), 1);
    assert_eq!(watchers.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["watched"]);
}

/// A declaration the store cannot record (a full disk) is the coordinator's trouble: the
/// worker's Register is answered UNAVAILABLE (try again later) naming the family, and no
/// session is made.
#[tokio::test]
async fn a_declaration_the_store_cannot_record_is_answered_unavailable() {
    use crate::coordinator::state::declared;
    // A store that refuses every write after those of the start (the fewest that let it start).
    let dir = tempfile::tempdir().unwrap();
    let s = (0..32)
        .find_map(|writes| {
            let mut store = Store::open(dir.path()).unwrap();
            store.crash_after(writes);
            let catalog = Arc::new(Catalog::new(crate::registry()));
            Scheduler::start(catalog, store, dir.path().into(), SchedulerConfig::default()).ok()
        })
        .expect("a scheduler starts with some writes allowed");
    let mut info = declared::family_info(crate::registry().family("testkit").unwrap());
    info.name = "mybo".into();
    let declaration = declared::check(info, &crate::registry()).unwrap();
    let registration = Registration {
        declarations: vec![declaration],
        build: String::new(),
        version: String::new(),
        ..registration(&["mybo"])
    };
    let e = s.register(registration).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{}", e.message());
    assert!(
        e.message()
            .starts_with("declarations[0]: the coordinator cannot record the declaration of `mybo` in its store"),
        "{}",
        e.message()
    );
    assert!(s.workers().await.unwrap().is_empty(), "no session was made");
}

/// A resubmission planned off the scheduler (against the sweep's jobs as they stood) is
/// taken as planned while the sweep has not changed since, and planned again by the
/// scheduler when it has: a stale plan would have added nothing here.
#[tokio::test]
async fn a_plan_made_off_the_scheduler_is_used_only_at_the_sweeps_revision() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(30)).await;
    let submission = |seeds: std::ops::Range<u64>| Submission::new("t".into(), "testkit".into(), seeds.map(job));
    let prepared = |seeds: std::ops::Range<u64>| {
        let s = s.clone();
        async move {
            let (keys, dir) = s.sweep_keys("t".into()).await.unwrap();
            submission(seeds).prepare(keys, &dir).unwrap()
        }
    };
    // A new sweep, planned against no sweep.
    let first = s.submit(prepared(0..4).await).await.unwrap();
    assert_eq!((first.n_jobs, first.n_added), (4, 4));
    // Planned against the sweep as it is: two dropped, two added.
    let second = s.submit(prepared(2..6).await).await.unwrap();
    assert_eq!((second.n_jobs, second.n_added), (4, 2));
    // Planned against 2..6, submitted after the sweep became 2..4: planned again.
    let stale = prepared(2..6).await;
    let third = s.submit(submission(2..4)).await.unwrap();
    assert_eq!((third.n_jobs, third.n_added), (2, 0));
    let fourth = s.submit(stale).await.unwrap();
    assert_eq!((fourth.n_jobs, fourth.n_added), (4, 2), "the stale plan knew 4 and 5 and would have added none");
    let status = s.status("t".into(), FailurePage::default()).await.unwrap();
    assert_eq!(status.n_jobs, 4);
}

/// A scheduler on `dir` with nothing to lease, a registered session, and that session's
/// lease, asked with a wait and held by the time this answers.
async fn a_held_lease(
    dir: &std::path::Path,
) -> (SchedulerHandle, SessionId, tokio::task::JoinHandle<Result<Leases, CommandError>>) {
    let s = start(dir, Duration::from_secs(60)).await;
    let w = register(&s).await;
    let held = tokio::spawn({
        let (s, w) = (s.clone(), w.clone());
        async move { s.lease_within(w, 8, Duration::from_secs(60)).await }
    });
    // The lease reaches the scheduler first, finds nothing and is held.
    tokio::time::sleep(Duration::from_millis(50)).await;
    (s, w, held)
}

/// An idle worker's lease held open is answered with the jobs of a sweep submitted while it
/// waits, without a poll.
#[tokio::test]
async fn a_held_lease_is_answered_when_a_sweep_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _, held) = a_held_lease(dir.path()).await;
    s.submit(Submission::new("t".into(), "testkit".into(), (0..3).map(job))).await.unwrap();
    let leases = held.await.unwrap().unwrap();
    assert_eq!(leases.leases.len(), 3, "the held lease took the sweep's jobs");
    assert_eq!(leases.retry_after, Duration::ZERO);
    let after = status(&s).await;
    assert_eq!((after.n_queued, after.n_running + after.n_leased), (0, 3));
}

/// A held lease that finds nothing comes back empty once its wait is over (capped by the
/// scheduler), to be asked again at once; a lease that does not wait is answered at once,
/// with a time to ask again.
#[tokio::test]
async fn a_held_lease_with_nothing_queued_comes_back_empty_after_its_wait() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), Duration::from_secs(60)).await;
    let w = register(&s).await;
    let asked = std::time::Instant::now();
    let leases = s.lease_within(w.clone(), 8, Duration::from_millis(300)).await.unwrap();
    assert!(asked.elapsed() >= Duration::from_millis(300), "answered after {:?}", asked.elapsed());
    assert!(leases.leases.is_empty());
    assert_eq!(leases.retry_after, Duration::ZERO);
    let now = s.lease(w.clone(), 8).await.unwrap();
    assert!(now.leases.is_empty());
    assert_eq!(now.retry_after, super::requests::lease::NOTHING_TO_LEASE_RETRY);
    let capped = tokio::time::timeout(Duration::from_secs(30), s.lease_within(w, 8, Duration::from_secs(3600))).await;
    assert!(capped.expect("held for at most the scheduler's cap").unwrap().leases.is_empty());
}

/// A held lease whose worker gave up waiting (its request dropped) leases nothing: the
/// jobs queued later go to the next lease.
#[tokio::test]
async fn a_held_lease_given_up_takes_no_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let (s, w, held) = a_held_lease(dir.path()).await;
    held.abort();
    assert!(held.await.unwrap_err().is_cancelled());
    s.submit(Submission::new("t".into(), "testkit".into(), (0..3).map(job))).await.unwrap();
    assert_eq!(lease(&s, &w).await.len(), 3, "a lease dropped while held took jobs");
}

/// A resolving sweep of three cells whose comparisons stay open for rounds: the values
/// [`round_value`] gives its jobs are noise about the same mean.
const ROUNDS: &str = r#"
name = "rounds"
family = "testkit"
horizon = 1
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "normal"
params = { mean = 0.0 }
[[algorithms]]
name = "normal"
params = { mean = 0.1 }
[[algorithms]]
name = "normal"
params = { mean = 0.2 }
[resolve]
metric = "value"
compare = "all-pairs"
tolerance = 0.3
min_seeds = 5
batch = 5
max_seeds = 20
"#;

/// A job's value: uniform noise in [-1, 1) drawn from its key, so the same at every run.
fn round_value(key: &str) -> f64 {
    let bytes = blake3::hash(key.as_bytes());
    let x = u64::from_le_bytes(bytes.as_bytes()[..8].try_into().unwrap());
    (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// The status of the sweep [`ROUNDS`] defines, if the scheduler has it.
async fn rounds_status(s: &SchedulerHandle) -> Option<SweepStatus> {
    s.status(SweepId::from("rounds".to_string()), FailurePage::default()).await.ok()
}

/// Run the resolving sweep's jobs as a worker would until its rounds end: true when they
/// did, false when a request failed (a crashed store) or they did not end.
async fn run_rounds(s: &SchedulerHandle) -> bool {
    let Ok(registered) = s.register(registration(&["testkit"])).await else { return false };
    let session = registered.session;
    for _ in 0..2000 {
        let Ok(leases) = s.lease(session.clone(), 4).await.map(|l| l.leases) else { return false };
        if leases.is_empty() {
            let Some(st) = rounds_status(s).await else { return false };
            if st.state == SweepState::Finished {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        for l in leases {
            let v = round_value(&l.job_key);
            let records: Vec<StepRecord> =
                (0..=1).map(|step| StepRecord { step, elapsed_ms: 0.0, values: vec![v] }).collect();
            if upload_and_complete_records(s, &session, l.attempt_id, &records).await != Ok(true) {
                return false;
            }
        }
    }
    false
}

/// A coordinator of a resolving sweep killed between any two of its store writes (among
/// them: after judging a round, before its next round is stored), then started again on
/// what it left and run to the end, ends the rounds where the uninterrupted run did: the
/// same jobs, every one done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolving_sweep_killed_between_any_two_store_writes_resumes_its_rounds() {
    let commit = CommitConfig { linger: Duration::from_millis(5), ..CommitConfig::default() };
    let config = SchedulerConfig { commit, ..SchedulerConfig::default() };
    let catalog = Arc::new(Catalog::new(crate::registry()));
    let submission = || {
        let registry = catalog.get();
        let cells = crate::sweep::parse_sweep_cells(ROUNDS, "rounds", &registry, usize::MAX).unwrap();
        let family = registry.family(&cells.family).unwrap().reference();
        let mut submission =
            Submission::with_extensions(cells.name.clone(), family, cells.into_jobs(), &registry).unwrap();
        submission.source = Some(Arc::from(ROUNDS));
        submission
    };
    // The uninterrupted run, which must have gone past its first round to test anything.
    let dir = tempfile::tempdir().unwrap();
    let s =
        Scheduler::start(catalog.clone(), Store::open(dir.path()).unwrap(), dir.path().to_path_buf(), config).unwrap();
    s.submit(submission()).await.unwrap();
    assert!(run_rounds(&s).await, "the uninterrupted rounds end");
    let whole = rounds_status(&s).await.unwrap();
    assert!(whole.n_jobs > 15 && whole.n_done == whole.n_jobs, "{whole:?}");
    drop(s);

    let mut crash_after = 0;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.crash_after(crash_after);
        let finished = match Scheduler::start(catalog.clone(), store, dir.path().to_path_buf(), config) {
            Ok(s) => s.submit(submission()).await.is_ok() && run_rounds(&s).await,
            Err(_) => false,
        };
        let context = format!("crash after {crash_after} writes");
        let reopened = reopen(dir.path()).await.unwrap_or_else(|e| panic!("{context}: {e}"));
        let s = Scheduler::start(catalog.clone(), reopened, dir.path().to_path_buf(), config).unwrap();
        if rounds_status(&s).await.is_some() {
            assert!(run_rounds(&s).await, "{context}: the resumed rounds end");
            let resumed = rounds_status(&s).await.unwrap();
            assert_eq!((resumed.n_jobs, resumed.n_done), (whole.n_jobs, whole.n_jobs), "{context}");
            let keys = keys_in_parts(&dir.path().join("rounds"));
            assert_eq!(keys.len(), whole.n_jobs as usize, "{context}: each job in exactly one part");
        }
        drop(s);
        if finished {
            break;
        }
        crash_after += 1;
    }
    assert!(crash_after >= 10, "only {crash_after} writes: is the crash hook in place?");
}
