//! The `testkit` family: tiny jobs for exercising the orchestration itself (the
//! distributed tests, the throughput benchmark), not a paper's experiment.
//!
//! * `echo`: metric `value = seed + step + u`, `u ~ U(0, 1)` from an environment stream, so
//!   trajectories are deterministic and differ across seeds;
//! * `slow`: `echo` that sleeps `ms` milliseconds per step (a job that is still running when
//!   a test kills its worker);
//! * `panic`: `echo` that panics at step `at` (a job that fails deterministically).
//!
//! Its sibling `testkit-short` has one algorithm, `short`: `echo` whose episode ends after
//! step `seed % (last + 1)` (jobs of one cell that end early, at different steps).

use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Episode, Family, JobError, JobStreams, ParamDef, ParamKind, StreamRng,
    ValidJob,
};
use rand::Rng;
use std::time::Duration;

pub struct TestkitFamily;

const BENCHMARKS: [ComponentDef; 1] =
    [ComponentDef { name: "constant", doc: "no environment beyond one uniform draw per step", params: &[] }];

const ALGORITHMS: [ComponentDef; 3] = [
    ComponentDef { name: "echo", doc: "value = seed + step + U(0,1)", params: &[] },
    ComponentDef {
        name: "slow",
        doc: "echo, sleeping `ms` milliseconds per step",
        params: &[ParamDef {
            name: "ms",
            kind: ParamKind::Int { min: 0, max: 60_000, default: 100 },
            doc: "sleep per step",
        }],
    },
    ComponentDef {
        name: "panic",
        doc: "echo that panics at step `at`",
        params: &[ParamDef { name: "at", kind: ParamKind::Int { min: 0, max: 1 << 30, default: 1 }, doc: "the step" }],
    },
];

/// `testkit-short`'s one algorithm.
const SHORT: ComponentDef = ComponentDef {
    name: "short",
    doc: "echo whose episode ends after step `seed % (last + 1)`: jobs of one cell end at different steps",
    params: &[ParamDef {
        name: "last",
        kind: ParamKind::Int { min: 0, max: 1 << 30, default: 3 },
        doc: "the latest step a job may end at",
    }],
};

armada_core::metrics! {
    struct EchoMetrics {
        value: f64 = "seed + step + U(0,1)",
    }
}

struct Echo {
    rng: StreamRng,
    seed: f64,
    sleep: Duration,
    panic_at: Option<u32>,
    /// `testkit-short`: the last step.
    end_after: Option<u32>,
}

impl Echo {
    fn value(&mut self, step: u32) -> EchoMetrics {
        if self.panic_at == Some(step) {
            panic!("testkit: panic at step {step} on purpose");
        }
        std::thread::sleep(self.sleep);
        EchoMetrics { value: self.seed + step as f64 + self.rng.random::<f64>() }
    }
}

impl Episode for Echo {
    type Metrics = EchoMetrics;
    fn initial(&mut self) -> Result<EchoMetrics, JobError> {
        Ok(self.value(0))
    }
    fn step(&mut self, step: u32) -> Result<Option<EchoMetrics>, JobError> {
        if self.end_after.is_some_and(|last| step > last) {
            return Ok(None);
        }
        Ok(Some(self.value(step)))
    }
}

const DECLARATION: Declaration = Declaration {
    name: "testkit",
    // 2: as every family had before versions were per family.
    version: 2,
    doc: "tiny jobs for testing and benchmarking the orchestration (not a paper)",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: EchoMetrics::DEFS,
    // Every run has every step: the orchestration tests rely on a truncated upload of a
    // testkit job being refused.
    ends_early: false,
    headline_metrics: &[],
    summary_axes: &[],
};

/// The same family whose runs end early, at a different step per seed: orchestration
/// and summaries of trajectories of unequal length.
pub struct TestkitShortFamily;

const SHORT_DECLARATION: Declaration = Declaration {
    name: "testkit-short",
    // 1: the first version.
    version: 1,
    doc: "tiny jobs that end before their horizon, for testing the orchestration (not a paper)",
    algorithms: std::slice::from_ref(&SHORT),
    ends_early: true,
    ..DECLARATION
};

impl Family for TestkitShortFamily {
    fn declaration(&self) -> &'static Declaration {
        &SHORT_DECLARATION
    }
    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let last = job.spec.algorithm_params.int("last")? as u64;
        let end_after = Some((job.spec.seed % (last + 1)) as u32);
        Ok(Box::new(Echo {
            rng: streams.env("value"),
            seed: job.spec.seed as f64,
            sleep: Duration::ZERO,
            panic_at: None,
            end_after,
        }))
    }
}

impl Family for TestkitFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }
    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let p = &job.spec.algorithm_params;
        let (mut sleep, mut panic_at) = (Duration::ZERO, None);
        match job.spec.algorithm.as_str() {
            "slow" => sleep = Duration::from_millis(p.int("ms")? as u64),
            "panic" => panic_at = Some(p.int("at")? as u32),
            _ => {}
        }
        Ok(Box::new(Echo { rng: streams.env("value"), seed: job.spec.seed as f64, sleep, panic_at, end_after: None }))
    }
}
