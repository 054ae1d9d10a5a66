//! Randomized property tests of the two parsers of untrusted input: sweep files and the
//! records a worker uploads. Each case is generated from a seeded generator (the seed is
//! printed on failure), checked against a model of the rules, and never allowed to panic.
//! A few thousand cases run in well under a minute.

use armada::coordinator::durable::spool::{RecordSchema, Spools};
use armada::coordinator::state::replies::ErrorKind;
use armada::sweep::{parse_sweep, parse_sweep_limited};
use armada::testing::Gen;
use armada_core::{MetricDef, MetricKind, StepRecord};
use armada_proto::ids::AttemptId;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

const METRICS: [MetricDef; 2] = [
    MetricDef { name: "x", kind: MetricKind::Float, doc: "" },
    MetricDef { name: "k", kind: MetricKind::Int, doc: "" },
];

/// The first record (by position) that breaks the rules, and the text its refusal holds.
fn first_violation(records: &[StepRecord], horizon: u32) -> Option<(usize, String)> {
    for (i, r) in records.iter().enumerate() {
        if r.step as usize != i || r.step > horizon {
            return Some((i, format!("step {}", r.step)));
        }
        if r.values.len() != METRICS.len() {
            return Some((i, format!("step {} has {} values", r.step, r.values.len())));
        }
        let k = r.values[1];
        if !(k.is_nan() || (k.fract() == 0.0 && k.abs() <= (1u64 << 53) as f64)) {
            return Some((i, format!("step {}, column `k`", r.step)));
        }
    }
    None
}

/// Mostly well-formed trajectories with one fault now and then: a repeated, skipped or
/// out-of-range step, a wrong arity, a fractional or huge Int value; sent in random batches.
#[test]
fn the_record_validator_accepts_exactly_the_whole_trajectories() {
    let dir = tempfile::tempdir().unwrap();
    let spools = Spools::open(dir.path()).unwrap();
    let seed0 = 0x5eed_0001;
    for case in 0..20_000u64 {
        let mut g = Gen(seed0 + case * 7919);
        let horizon = g.below(40) as u32;
        let length = (horizon as u64 + 1 + g.below(3)).saturating_sub(g.below(3)) as usize;
        let mut records: Vec<StepRecord> = (0..length)
            .map(|i| StepRecord {
                step: i as u32,
                elapsed_ms: 0.25,
                values: vec![
                    g.below(1000) as f64 / 7.0,
                    if g.chance(10) { f64::NAN } else { g.below(50) as f64 - 25.0 },
                ],
            })
            .collect();
        if !records.is_empty() && g.chance(40) {
            let at = g.below(records.len() as u64) as usize;
            match g.below(6) {
                0 => records[at].step = records[at].step.wrapping_add(1),
                1 => records[at].step = at.saturating_sub(1) as u32,
                2 => records[at].step = *g.pick(&[u32::MAX, horizon + 1, horizon + 1000]),
                3 => records[at].values.push(1.0),
                4 => records[at].values[1] = *g.pick(&[0.5, -2.25, 1e300, f64::INFINITY]),
                _ => records[at].values.truncate(1),
            }
        }
        let attempt = AttemptId(case);
        // Half the cases are of a family whose episodes may end early.
        let ends_early = g.chance(50);
        spools.create(attempt, "s".into(), RecordSchema { metrics: &METRICS, horizon, ends_early });
        let expected = first_violation(&records, horizon);
        let mut sent = 0;
        let mut refused = None;
        while sent < records.len() {
            let batch = 1 + g.below(8) as usize;
            let end = (sent + batch).min(records.len());
            let outcome = catch_unwind(AssertUnwindSafe(|| spools.append(attempt, &"s".into(), &records[sent..end])));
            let outcome = outcome.unwrap_or_else(|_| panic!("case {case}: append panicked"));
            if let Err(e) = outcome {
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "case {case}");
                refused = Some((sent, end, e.message().to_string()));
                break;
            }
            sent = end;
        }
        match (&expected, &refused) {
            (None, None) => {
                let spool = spools.take(attempt).unwrap();
                // A whole trajectory: steps 0..=horizon, or 0..=last (any last) if it may end early.
                let whole = if ends_early { !records.is_empty() } else { records.len() == horizon as usize + 1 };
                assert_eq!(
                    spool.incomplete().is_none(),
                    whole,
                    "case {case}: {} records, horizon {horizon}",
                    records.len()
                );
                drop(spool.into_records());
            }
            (Some((at, text)), Some((from, to, message))) => {
                assert!((from..to).contains(&at), "case {case}: refused batch {from}..{to}, first fault at {at}");
                assert!(message.contains(text.as_str()), "case {case}: {message:?} should name {text:?}");
                spools.discard(attempt);
            }
            _ => panic!("case {case}: expected {expected:?}, got {refused:?}"),
        }
    }
}

const BASE: &str = r#"
family = "lse"
seeds = 2
horizon = 5
[[benchmarks]]
name = "sinusoidal"
[[algorithms]]
name = "straddle"
params = { beta_sqrt = [1.0, 2.0] }
[[algorithms]]
name = "random"
"#;

/// Sweep texts built from valid and invalid pieces, and byte-level mutations of a valid
/// one: the parser never panics; a refusal names a field (or says what is malformed); an
/// acceptance has the model's number of jobs, all distinct, within the cap.
#[test]
fn the_sweep_parser_never_panics_and_counts_jobs_before_expanding() {
    let registry = armada::registry();
    let names = ["straddle", "random", "us", "lse", "nope"];
    let params = ["", "beta_sqrt = [1.0, 2.0, 3.0]", "beta_sqrt = 2000.0", "tie_break = \"random\"", "p = [1, 2]"];
    let seeds = ["1", "3", "[0, 5, 9]", "0", "[1, 1]", "\"two\"", "[-1]"];
    let horizons = ["1", "10", "0", "100000001", "\"5\""];
    for case in 0..10_000u64 {
        let mut g = Gen(0xabcdef + case * 104_729);
        let mut text = format!("family = \"lse\"\nseeds = {}\nhorizon = {}\n", g.pick(&seeds), g.pick(&horizons));
        if g.chance(20) {
            text.push_str(&format!("name = \"{}\"\n", g.pick(&["ok-name", "armada.sqlite", ".x", "a/b", "fine_2"])));
        }
        text.push_str(&format!("[[benchmarks]]\nname = \"{}\"\n", g.pick(&["sinusoidal", "himmelblau", "nope"])));
        let n_algorithms = 1 + g.below(3);
        for _ in 0..n_algorithms {
            text.push_str(&format!("[[algorithms]]\nname = \"{}\"\n", g.pick(&names)));
            let p = g.pick(&params);
            if !p.is_empty() {
                text.push_str(&format!("params = {{ {p} }}\n"));
            }
        }
        if g.chance(30) {
            // Byte-level damage: drop, duplicate or replace a few bytes.
            let mut bytes = text.into_bytes();
            for _ in 0..1 + g.below(4) {
                let at = g.below(bytes.len() as u64) as usize;
                match g.below(3) {
                    0 => {
                        bytes.remove(at);
                    }
                    1 => bytes.insert(at, bytes[at]),
                    _ => bytes[at] = *g.pick(b"[]{}=\"\n#0a,.9"),
                }
            }
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        let max_jobs = *g.pick(&[3usize, 10, 1000]);
        let parsed = catch_unwind(AssertUnwindSafe(|| parse_sweep_limited(&text, "t", &registry, max_jobs)))
            .unwrap_or_else(|_| panic!("case {case}: the parser panicked on\n{text}"));
        match parsed {
            Ok(sweep) => {
                assert!(
                    !sweep.jobs.is_empty() && sweep.jobs.len() <= max_jobs,
                    "case {case}: {} jobs",
                    sweep.jobs.len()
                );
                let keys: HashSet<&str> = sweep.jobs.iter().map(|j| j.key.0.as_str()).collect();
                assert_eq!(keys.len(), sweep.jobs.len(), "case {case}: duplicate jobs");
                // The limit is a bound on what was accepted, not a change of meaning.
                let unlimited = parse_sweep(&text, "t", &registry).unwrap();
                assert_eq!(unlimited.jobs.len(), sweep.jobs.len(), "case {case}");
            }
            Err(e) => {
                let message = e.to_string();
                assert!(!message.is_empty(), "case {case}");
                // A field path before the colon, or the sweep's size, which all fields make.
                let named = message.contains(": ") || message.starts_with("the sweep has ");
                assert!(named, "case {case}: {message}");
            }
        }
    }
    // The base text itself is fine: 1 benchmark x (2 + 1) variants x 2 seeds.
    assert_eq!(parse_sweep(BASE, "t", &registry).unwrap().jobs.len(), 6);
}
