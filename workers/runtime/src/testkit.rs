//! The `testkit` family: tiny jobs for exercising the orchestration itself (the
//! distributed tests, the throughput benchmark), not a paper's experiment.
//!
//! * `echo`: metric `value = seed + step + u`, `u ~ U(0, 1)` from an environment stream, so
//!   trajectories are deterministic and differ across seeds;
//! * `slow`: `echo` that sleeps `ms` milliseconds per step (a job that is still running when
//!   a test kills its worker);
//! * `panic`: `echo` that panics at step `at` (a job that fails deterministically);
//! * `normal`: metric `value = mean + sd * (sqrt(shared) z + sqrt(1 - shared) e)`, with `z`
//!   standard normal from an environment stream (the same for every algorithm at a seed:
//!   common random numbers) and `e` from the algorithm's own: comparisons of known means
//!   and noise, paired by seed, for the sweeps that resolve them.
//!
//! Its sibling `testkit-short` has one algorithm, `short`: `echo` whose episode ends after
//! step `seed % (last + 1)` (jobs of one cell that end early, at different steps).

use armada_core::{AnyEpisode, ComponentDef, Declaration, Episode, Family, JobError, JobStreams, StreamRng, ValidJob};
use armada_math::dist::{Distribution, StandardNormal};
use rand::Rng;
use std::time::Duration;

pub struct TestkitFamily;

const BENCHMARKS: [ComponentDef; 1] =
    [ComponentDef::bare("constant", "no environment beyond one uniform draw per step")];

armada_core::params! {
    /// `slow`'s parameters.
    pub struct SlowParams {
        /// sleep per step
        ms: u64 in [0, 60_000] = 100,
    }
}

armada_core::params! {
    /// `panic`'s parameters.
    pub struct PanicParams {
        /// the step
        at: u32 in [0, 1 << 30] = 1,
    }
}

armada_core::params! {
    /// `short`'s parameters.
    pub struct ShortParams {
        /// the latest step a job may end at
        last: u64 in [0, 1 << 30] = 3,
    }
}

armada_core::params! {
    /// `normal`'s parameters.
    pub struct NormalParams {
        /// the value's mean
        mean: f64 in [-1000000.0, 1000000.0] = 0.0,
        /// its standard deviation
        sd: f64 in [0.0, 1000000.0] = 1.0,
        /// the share of its variance that is the seed's (common to every algorithm)
        shared: f64 in [0.0, 1.0] = 0.5,
        /// sleep per step (a job still running when a test stops its coordinator)
        ms: u64 in [0, 60_000] = 0,
    }
}

const ALGORITHMS: [ComponentDef; 4] = [
    ComponentDef::bare("echo", "value = seed + step + U(0,1)"),
    ComponentDef::new::<SlowParams>("slow", "echo, sleeping `ms` milliseconds per step"),
    ComponentDef::new::<PanicParams>("panic", "echo that panics at step `at`"),
    ComponentDef::new::<NormalParams>(
        "normal",
        "value = mean + sd * (sqrt(shared) z + sqrt(1 - shared) e): z standard normal shared by seed, e the algorithm's own",
    ),
];

/// `testkit-short`'s one algorithm.
const SHORT: ComponentDef = ComponentDef::new::<ShortParams>(
    "short",
    "echo whose episode ends after step `seed % (last + 1)`: jobs of one cell end at different steps",
);

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

/// `normal`: a known mean and noise, part of it common to every algorithm at a seed.
struct Normal {
    seed_noise: StreamRng,
    own_noise: StreamRng,
    params: NormalParams,
}

impl Normal {
    fn value(&mut self) -> EchoMetrics {
        let NormalParams { mean, sd, shared, ms } = self.params;
        std::thread::sleep(Duration::from_millis(ms));
        // armada-math's variates: the same bits on every processor.
        let z: f64 = StandardNormal.sample(&mut self.seed_noise);
        let e: f64 = StandardNormal.sample(&mut self.own_noise);
        EchoMetrics { value: mean + sd * (shared.sqrt() * z + (1.0 - shared).sqrt() * e) }
    }
}

impl Episode for Normal {
    type Metrics = EchoMetrics;
    fn initial(&mut self) -> Result<EchoMetrics, JobError> {
        Ok(self.value())
    }
    fn step(&mut self, _step: u32) -> Result<Option<EchoMetrics>, JobError> {
        Ok(Some(self.value()))
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
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
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
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
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
        let ShortParams { last } = job.spec.algorithm_params.parse()?;
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
            "normal" => {
                let params = p.parse::<NormalParams>()?;
                let (seed_noise, own_noise) = (streams.env("value"), streams.algo("noise"));
                return Ok(Box::new(Normal { seed_noise, own_noise, params }));
            }
            "slow" => sleep = Duration::from_millis(p.parse::<SlowParams>()?.ms),
            "panic" => panic_at = Some(p.parse::<PanicParams>()?.at),
            _ => {}
        }
        Ok(Box::new(Echo { rng: streams.env("value"), seed: job.spec.seed as f64, sleep, panic_at, end_after: None }))
    }
}
