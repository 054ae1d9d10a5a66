//! The `testkit` family: tiny jobs for exercising the orchestration itself (the
//! distributed tests, the throughput benchmark), not a paper's experiment.
//!
//! * `echo`: metric `value = seed + step + u`, `u ~ U(0, 1)` from an environment stream, so
//!   trajectories are deterministic and differ across seeds;
//! * `slow`: `echo` that sleeps `ms` milliseconds per step (a job that is still running when
//!   a test kills its worker);
//! * `panic`: `echo` that panics at step `at` (a job that fails deterministically).

use armada_core::{
    ComponentDef, Declaration, Episode, Family, JobError, JobStreams, MetricDef, MetricKind, ParamDef, ParamKind,
    StreamRng, ValidJob,
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

const METRICS: [MetricDef; 1] = [MetricDef { name: "value", kind: MetricKind::Float, doc: "seed + step + U(0,1)" }];

struct Echo {
    rng: StreamRng,
    seed: f64,
    sleep: Duration,
    panic_at: Option<u32>,
}

impl Echo {
    fn value(&mut self, step: u32) -> Vec<f64> {
        if self.panic_at == Some(step) {
            panic!("testkit: panic at step {step} on purpose");
        }
        std::thread::sleep(self.sleep);
        vec![self.seed + step as f64 + self.rng.random::<f64>()]
    }
}

impl Episode for Echo {
    fn initial(&mut self) -> Result<Vec<f64>, JobError> {
        Ok(self.value(0))
    }
    fn step(&mut self, step: u32) -> Result<Vec<f64>, JobError> {
        Ok(self.value(step))
    }
}

const DECLARATION: Declaration = Declaration {
    name: "testkit",
    // 2: as every family had before versions were per family.
    version: 2,
    doc: "tiny jobs for testing and benchmarking the orchestration (not a paper)",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: &METRICS,
    headline_metrics: &[],
    summary_axes: &[],
};

impl Family for TestkitFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }
    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn Episode>, JobError> {
        let p = &job.spec.algorithm_params;
        let (sleep, panic_at) = match job.spec.algorithm.as_str() {
            "slow" => (Duration::from_millis(p.int("ms")? as u64), None),
            "panic" => (Duration::ZERO, Some(p.int("at")? as u32)),
            _ => (Duration::ZERO, None),
        };
        Ok(Box::new(Echo { rng: streams.env("value"), seed: job.spec.seed as f64, sleep, panic_at }))
    }
}
