//! The session machine held to the shared table of cases, to a few rules too large for the
//! table (commit batches, the pending-commit cap), and to its invariants over random histories.

use super::*;
use armada_proto::lease::{BATCH_MOST, PREFETCH_PER_SLOT};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn ms(v: &Value) -> Duration {
    Duration::from_millis(v.as_u64().expect("a whole number of milliseconds"))
}

fn ids(v: &Value) -> Vec<AttemptId> {
    v.as_array().expect("a list of attempts").iter().map(|id| AttemptId(id.as_u64().expect("an attempt"))).collect()
}

/// An event of the case table.
fn event(v: &Value) -> Event<()> {
    if let Some(name) = v.as_str() {
        return match name {
            "wake" => Event::Wake,
            "heartbeat_due" => Event::HeartbeatDue,
            "drain" => Event::Drain,
            "lost" => Event::Lost,
            other => panic!("unknown event {other}"),
        };
    }
    let (name, body) = v.as_object().and_then(|o| o.iter().next()).expect("an event");
    match name.as_str() {
        "leased" => Event::Leased {
            leases: body["leases"]
                .as_array()
                .expect("leases")
                .iter()
                .map(|l| Lease {
                    attempt: AttemptId(l[0].as_u64().unwrap()),
                    sweep: l[1].as_str().unwrap().into(),
                    job: (),
                })
                .collect(),
            retry_after_ms: body["retry_after_ms"].as_u64().expect("retry_after_ms") as u32,
        },
        "heartbeat_answered" => Event::HeartbeatAnswered { abandon: ids(body) },
        "committed" => Event::Committed(ids(body)),
        "task_ended" => Event::TaskEnded(
            body.as_array()
                .expect("jobs")
                .iter()
                .map(|r| Ran {
                    attempt: AttemptId(r["attempt"].as_u64().unwrap()),
                    outcome: match r["outcome"].as_str().unwrap() {
                        "ready" => Outcome::Ready { n_values: r["values"].as_u64().unwrap() as usize },
                        "ended" => Outcome::Ended,
                        "run_again_alone" => Outcome::RunAgainAlone(()),
                        other => panic!("unknown outcome {other}"),
                    },
                    took: ms(&r["took_ms"]),
                })
                .collect(),
        ),
        other => panic!("unknown event {other}"),
    }
}

/// An action as the case table writes it.
fn written(action: &Action<()>) -> Value {
    let ids = |ids: &[AttemptId]| ids.iter().map(|id| id.0).collect::<Vec<u64>>();
    match action {
        Action::Lease { max_jobs, wait_ms } => json!({"lease": {"max_jobs": max_jobs, "wait_ms": wait_ms}}),
        Action::Start { jobs, batched } => {
            json!({"start": {"attempts": jobs.iter().map(|j| j.attempt.0).collect::<Vec<_>>(), "batched": batched}})
        }
        Action::Heartbeat { attempts, started } => {
            json!({"heartbeat": {"attempts": ids(attempts), "started": ids(started)}})
        }
        Action::Cancel(a) => json!({"cancel": ids(a)}),
        Action::Commit(a) => json!({"commit": ids(a)}),
        Action::Release(a) => json!({"release": ids(a)}),
        Action::Drained => json!("drained"),
        Action::Register => json!("register"),
        Action::Exit => json!("exit"),
    }
}

/// The table both workers' session machines are held to (the Python SDK's tests run it too).
#[test]
fn the_shared_case_table_holds() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../session_cases.json");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = table["cases"].as_array().unwrap();
    assert!(cases.len() >= 12, "the table has its cases");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let mut session = Session::<()>::new(case["slots"].as_u64().unwrap() as usize, false);
        for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let actions = session.handle(ms(&step["at_ms"]), event(&step["event"]));
            let got: Vec<Value> = actions.iter().map(written).collect();
            assert_eq!(Value::from(got), step["actions"], "case {name:?}, step {i}: the actions");
            if let Some(wake) = step.get("wake_at_ms") {
                let got = session.wake_at().map(|d| d.as_millis() as u64);
                assert_eq!(got, wake.as_u64(), "case {name:?}, step {i}: when it next wakes");
            }
        }
    }
}

/// A commit request carries at most COMMIT_BATCH attempts; the rest wait for the next
/// batch's turn (here: 20 ms after the first finished, a task still running).
#[test]
fn a_commit_carries_at_most_256_attempts() {
    let mut s = Session::<()>::new(2, false);
    let long = Lease { attempt: AttemptId(1_000_000), sweep: "s".into(), job: () };
    s.handle(Duration::ZERO, Event::Leased { leases: vec![long], retry_after_ms: 0 });
    let n = COMMIT_BATCH as u64 + 1;
    for id in 1..=n {
        s.held.insert(AttemptId(id), Held { sweep: "s".into(), phase: Phase::Ready, job: None });
        s.ready.push((AttemptId(id), 1));
    }
    let commits = |actions: Vec<Action<()>>| -> Vec<usize> {
        actions.iter().filter_map(|a| if let Action::Commit(ids) = a { Some(ids.len()) } else { None }).collect()
    };
    assert_eq!(commits(s.handle(Duration::from_millis(1), Event::Wake)), vec![COMMIT_BATCH]);
    assert_eq!(s.wake_at(), Some(COMMIT_BATCH_WAIT));
    assert_eq!(commits(s.handle(Duration::from_millis(19), Event::Wake)), Vec::<usize>::new());
    assert_eq!(commits(s.handle(COMMIT_BATCH_WAIT, Event::Wake)), vec![1]);
}

/// Past MAX_PENDING_COMMITS attempts awaiting their commit, nothing is leased; the first
/// commit answered lets a lease out.
#[test]
fn too_many_commits_awaited_stop_leasing() {
    let mut s = Session::<()>::new(1, false);
    for id in 1..=MAX_PENDING_COMMITS as u64 {
        s.held.insert(AttemptId(id), Held { sweep: "s".into(), phase: Phase::Committing, job: None });
    }
    s.committing = MAX_PENDING_COMMITS;
    assert_eq!(s.handle(Duration::ZERO, Event::Wake), vec![]);
    assert_eq!(s.wake_at(), None);
    let actions = s.handle(Duration::ZERO, Event::Committed(vec![AttemptId(1)]));
    assert_eq!(actions, vec![Action::Lease { max_jobs: 1, wait_ms: 0 }]);
}

/// A splitmix64 stream: the histories are the same on every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Where the model says an attempt is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Is {
    Waiting,
    Running { cancelled: bool },
    Ready,
    Committing,
}

/// The loop and the coordinator around a session, kept by hand: what it was asked for,
/// what runs, what is out.
#[derive(Default)]
struct World {
    next_id: u64,
    /// The lease asked for and not answered: its size.
    lease_out: Option<usize>,
    attempts: BTreeMap<AttemptId, (String, Is)>,
    tasks: Vec<(Vec<AttemptId>, bool)>,
    commits_out: Vec<Vec<AttemptId>>,
    ever_started: BTreeSet<AttemptId>,
    handed_back: BTreeSet<AttemptId>,
    committed: BTreeSet<AttemptId>,
    draining: bool,
    over: bool,
}

impl World {
    fn held(&self) -> Vec<AttemptId> {
        self.attempts.keys().copied().collect()
    }

    /// Check `actions` against what the world allows, and carry them out. `offered`: the
    /// attempts the event just leased.
    fn carry_out(&mut self, slots: usize, actions: &[Action<()>], offered: &BTreeSet<AttemptId>, context: &str) {
        for action in actions {
            assert!(!self.over, "{context}: {action:?} after the session ended");
            match action {
                Action::Lease { max_jobs, wait_ms } => {
                    assert!(!self.draining, "{context}: leasing while draining");
                    assert!(self.lease_out.is_none(), "{context}: a second lease before the first was answered");
                    assert!((1..=slots * (1 + PREFETCH_PER_SLOT)).contains(max_jobs), "{context}: {action:?}");
                    assert_eq!(*wait_ms == IDLE_LEASE_WAIT_MS, self.attempts.is_empty(), "{context}: waits only idle");
                    self.lease_out = Some(*max_jobs);
                }
                Action::Start { jobs, batched } => {
                    assert!(self.tasks.len() < slots, "{context}: a task beyond the slots");
                    let sweep = &jobs[0].sweep;
                    assert!(jobs.iter().all(|j| &j.sweep == sweep), "{context}: a batch is one sweep's");
                    assert!(*batched || jobs.len() == 1, "{context}: {action:?}");
                    assert!(jobs.len() <= BATCH_MOST, "{context}: {action:?}");
                    for job in jobs {
                        let (s, is) = self.attempts.get_mut(&job.attempt).expect("a started attempt is held");
                        assert_eq!((&*s, *is), (sweep, Is::Waiting), "{context}: started {}", job.attempt);
                        *is = Is::Running { cancelled: false };
                        let again = self.handed_back.remove(&job.attempt);
                        assert!(self.ever_started.insert(job.attempt) || again, "{context}: started twice");
                    }
                    self.tasks.push((jobs.iter().map(|j| j.attempt).collect(), *batched));
                }
                Action::Heartbeat { attempts, started } => {
                    assert_eq!(attempts, &self.held(), "{context}: a heartbeat names what is held");
                    let s: Vec<AttemptId> =
                        self.attempts.iter().filter(|(_, (_, is))| *is != Is::Waiting).map(|(&id, _)| id).collect();
                    assert_eq!(started, &s, "{context}: and says what started");
                }
                Action::Cancel(ids) => {
                    for id in ids {
                        let is = &mut self.attempts.get_mut(id).expect("a cancelled attempt is held").1;
                        assert_eq!(*is, Is::Running { cancelled: false }, "{context}: cancel {id}");
                        *is = Is::Running { cancelled: true };
                    }
                }
                Action::Commit(ids) => {
                    assert!(!ids.is_empty() && ids.len() <= COMMIT_BATCH, "{context}: {action:?}");
                    for id in ids {
                        let is = &mut self.attempts.get_mut(id).expect("a committed attempt is held").1;
                        assert_eq!(*is, Is::Ready, "{context}: commit {id}");
                        *is = Is::Committing;
                        assert!(self.committed.insert(*id), "{context}: {id} committed twice");
                    }
                    self.commits_out.push(ids.clone());
                }
                Action::Release(ids) => {
                    for id in ids {
                        match self.attempts.get(id) {
                            Some((_, Is::Waiting)) => {
                                self.attempts.remove(id);
                            }
                            None => assert!(offered.contains(id), "{context}: released {id}, never leased"),
                            Some(other) => panic!("{context}: released {id}, {other:?}"),
                        }
                        let waits = !self.ever_started.contains(id) || self.handed_back.remove(id);
                        assert!(waits, "{context}: released {id} while it ran");
                    }
                }
                Action::Drained => {
                    assert!(
                        self.draining && self.attempts.is_empty() && self.tasks.is_empty(),
                        "{context}: drained early"
                    );
                    self.over = true;
                }
                Action::Register | Action::Exit => {
                    assert_eq!(matches!(action, Action::Exit), self.draining, "{context}: {action:?}");
                    self.over = true;
                }
            }
        }
    }
}

/// Random histories of leases answered with jobs of two sweeps (or none), heartbeats and
/// the coordinator's abandons, tasks ending (ready, failed, handed back, at random
/// lengths, short and long), commits answered in any order, a drain and a lost
/// connection, against the invariants in the module's docs. No I/O, no clock.
#[test]
fn random_histories_keep_the_session_invariants() {
    let (mut batches, mut cancels, mut drained, mut handed_back, mut split_commits) = (0, 0, 0, 0, 0);
    for seed in 1..=400u64 {
        let mut rng = Gen(seed);
        let slots = 1 + rng.below(3) as usize;
        let mut s = Session::<()>::new(slots, false);
        let mut w = World { next_id: 1, ..World::default() };
        let mut now = Duration::ZERO;
        for step in 0..300 {
            if w.over {
                break;
            }
            let context = format!("seed {seed} step {step}");
            now += Duration::from_millis(rng.below(40));
            let mut offered = BTreeSet::new();
            let event = match rng.below(100) {
                0..=24 if w.lease_out.is_some() => {
                    let asked = w.lease_out.take().unwrap();
                    let n = if rng.chance(20) { 0 } else { 1 + rng.below(asked as u64) as usize };
                    let sweep = if rng.chance(50) { "a" } else { "b" };
                    let leases: Vec<Lease<()>> = (0..n)
                        .map(|_| {
                            w.next_id += 1;
                            offered.insert(AttemptId(w.next_id));
                            Lease { attempt: AttemptId(w.next_id), sweep: sweep.into(), job: () }
                        })
                        .collect();
                    for l in &leases {
                        w.attempts.insert(l.attempt, (l.sweep.clone(), Is::Waiting));
                    }
                    Event::Leased { leases, retry_after_ms: rng.below(1000) as u32 }
                }
                25..=54 if !w.tasks.is_empty() => {
                    let (ids, batched) = w.tasks.remove(rng.below(w.tasks.len() as u64) as usize);
                    let short = rng.chance(70);
                    let ran = ids
                        .iter()
                        .map(|&attempt| {
                            let outcome = match rng.below(10) {
                                0 => Outcome::Ended,
                                1 if batched => Outcome::RunAgainAlone(()),
                                _ => {
                                    let most = if rng.chance(5) { 200_000 } else { 100 };
                                    Outcome::Ready { n_values: rng.below(most) as usize }
                                }
                            };
                            let took =
                                Duration::from_millis(if short { 1 + rng.below(60) } else { 250 + rng.below(500) });
                            Ran { attempt, outcome, took }
                        })
                        .collect::<Vec<_>>();
                    for r in &ran {
                        let (_, is) = w.attempts.get(&r.attempt).cloned().unwrap();
                        match (&r.outcome, is) {
                            (Outcome::Ready { .. }, _) => w.attempts.get_mut(&r.attempt).unwrap().1 = Is::Ready,
                            (Outcome::Ended, _) | (Outcome::RunAgainAlone(()), Is::Running { cancelled: true }) => {
                                w.attempts.remove(&r.attempt);
                            }
                            (Outcome::RunAgainAlone(()), _) => {
                                handed_back += 1;
                                w.handed_back.insert(r.attempt);
                                w.attempts.get_mut(&r.attempt).unwrap().1 = Is::Waiting;
                            }
                        }
                    }
                    Event::TaskEnded(ran)
                }
                55..=69 if !w.commits_out.is_empty() => {
                    let ids = w.commits_out.remove(rng.below(w.commits_out.len() as u64) as usize);
                    for id in &ids {
                        w.attempts.remove(id);
                    }
                    Event::Committed(ids)
                }
                70..=79 => Event::HeartbeatDue,
                80..=87 => {
                    // Some held attempts (in any phase), and one never leased.
                    let mut abandon: Vec<AttemptId> = w.held().into_iter().filter(|_| rng.chance(30)).collect();
                    abandon.push(AttemptId(w.next_id + 1000));
                    let expect_cancel: Vec<AttemptId> = abandon
                        .iter()
                        .filter(|id| w.attempts.get(id).is_some_and(|(_, is)| *is == Is::Running { cancelled: false }))
                        .copied()
                        .collect();
                    for id in &abandon {
                        if w.attempts.get(id).is_some_and(|(_, is)| *is == Is::Waiting) {
                            w.attempts.remove(id);
                        }
                    }
                    let actions = s.handle(now, Event::HeartbeatAnswered { abandon });
                    let cancelled: Vec<AttemptId> = actions
                        .iter()
                        .filter_map(|a| if let Action::Cancel(ids) = a { Some(ids.clone()) } else { None })
                        .flatten()
                        .collect();
                    assert_eq!(cancelled, expect_cancel, "{context}: every running attempt abandoned is cancelled");
                    cancels += cancelled.len();
                    w.carry_out(slots, &actions, &offered, &context);
                    continue;
                }
                88..=89 if !w.draining && step > 50 => {
                    w.draining = true;
                    Event::Drain
                }
                90 if rng.chance(10) => Event::Lost,
                _ => Event::Wake,
            };
            let lost = event == Event::Lost;
            let running_before: Vec<AttemptId> = w
                .attempts
                .iter()
                .filter(|(_, (_, is))| *is == Is::Running { cancelled: false })
                .map(|(&id, _)| id)
                .collect();
            let actions = s.handle(now, event);
            split_commits += usize::from(actions.iter().filter(|a| matches!(a, Action::Commit(_))).count() > 1);
            batches += actions.iter().filter(|a| matches!(a, Action::Start { batched: true, .. })).count();
            w.carry_out(slots, &actions, &offered, &context);
            if lost {
                let cancel: Vec<AttemptId> = actions
                    .iter()
                    .filter_map(|a| if let Action::Cancel(ids) = a { Some(ids.clone()) } else { None })
                    .flatten()
                    .collect();
                assert_eq!(cancel, running_before, "{context}: a lost session stops all that runs");
                assert!(w.over, "{context}: and ends");
                break;
            }
            drained += usize::from(w.over);
            assert_eq!(s.n_tasks(), w.tasks.len(), "{context}: tasks");
            assert_eq!(s.n_held(), w.attempts.len(), "{context}: attempts held");
            // Nothing stalls: with nothing out (no lease, task or commit awaited) a live
            // session has a reason to wake.
            if !w.over && w.lease_out.is_none() && w.tasks.is_empty() && w.commits_out.is_empty() {
                assert!(
                    s.wake_at().is_some() || (w.draining && w.attempts.is_empty()),
                    "{context}: a session with nothing out and no wake-up"
                );
            }
        }
        // Run it out: drain, end every task, answer every commit: it says drained.
        if !w.over {
            let mut guard = 0;
            while !w.over {
                guard += 1;
                assert!(guard < 10_000, "seed {seed}: the drain does not end");
                let context = format!("seed {seed} drain {guard}");
                now += Duration::from_millis(5);
                let mut offered = BTreeSet::new();
                let event = if !w.draining {
                    w.draining = true;
                    Event::Drain
                } else if let Some(asked) = w.lease_out.take() {
                    let leases = (0..asked.min(2))
                        .map(|_| {
                            w.next_id += 1;
                            offered.insert(AttemptId(w.next_id));
                            Lease { attempt: AttemptId(w.next_id), sweep: "a".into(), job: () }
                        })
                        .collect();
                    Event::Leased { leases, retry_after_ms: 0 }
                } else if let Some((ids, _)) = w.tasks.pop() {
                    for id in &ids {
                        w.attempts.get_mut(id).unwrap().1 = Is::Ready;
                    }
                    let ready = |attempt| Ran {
                        attempt,
                        outcome: Outcome::Ready { n_values: 3 },
                        took: Duration::from_millis(3),
                    };
                    Event::TaskEnded(ids.into_iter().map(ready).collect())
                } else if let Some(ids) = w.commits_out.pop() {
                    for id in &ids {
                        w.attempts.remove(id);
                    }
                    Event::Committed(ids)
                } else {
                    Event::Wake
                };
                let actions = s.handle(now, event);
                w.carry_out(slots, &actions, &offered, &context);
            }
            drained += 1;
        }
    }
    // The histories reach what they are for.
    assert!(batches > 200 && cancels > 100 && handed_back > 20 && split_commits > 0 && drained > 300, "{batches} batches, {cancels} cancels, {handed_back} handed back, {split_commits} split commits, {drained} drained");
}

#[test]
fn a_slot_holds_about_100_ms_of_short_jobs_ahead_and_runs_them_as_a_batch() {
    let mut lengths = JobLengths::default();
    assert_eq!((lengths.batch("s"), lengths.depth("s", 2)), (None, 2), "not measured: one a slot, streamed");
    lengths.record("s", Duration::from_millis(10));
    assert_eq!((lengths.batch("s"), lengths.depth("s", 2)), (Some(10), 22));
    lengths.record("t", Duration::from_micros(10));
    assert_eq!(lengths.batch("t"), Some(BATCH_MOST), "held ahead deeper than a batch runs");
    assert_eq!(lengths.depth("t", 3), 3 * (1 + PREFETCH_PER_SLOT));
    lengths.record("v", Duration::from_millis(40));
    assert_eq!((lengths.batch("v"), lengths.depth("v", 1)), (Some(2), 3), "100 ms is two 40 ms jobs");
    lengths.record("w", Duration::from_millis(200));
    assert_eq!((lengths.batch("w"), lengths.depth("w", 1)), (Some(1), 2), "short: one ahead, kept records");
    lengths.record("u", Duration::from_millis(300));
    assert_eq!((lengths.batch("u"), lengths.depth("u", 2)), (None, 2), "long: one a slot, streamed");
    lengths.record_streaming("s");
    assert_eq!((lengths.batch("s"), lengths.depth("s", 2)), (None, 22), "records beyond a batch's: streamed");
}
