//! A worked example of a family, for "Adding a family" in docs/extending.md: minimise a noisy
//! quadratic `f(x) = |x - x*|^2` on `[-2, 2]^dim`, by random search or by a hill climber.
//! It is not in armada's registry; its test builds a registry of its own, validates a job
//! and runs it, as the coordinator and the workers would.
//!
//! What a family declares, once: its name and version; its benchmarks and algorithms, each
//! with its parameters as a struct made by `armada_core::params!` (type, range, default and
//! doc per field; validation and `armada list` come from it); and its metrics, a struct made
//! by `armada_core::metrics!` and built by name. What it does: `start` parses a validated
//! job's parameters into those structs and turns the job into an [`Episode`] that yields
//! one record per step, step 0 being the state after the initial design. Every random draw
//! comes from the job's [`JobStreams`]: environment streams are the same for every
//! algorithm of a seed (the optimum, the noise), so algorithms are compared on common
//! random numbers. Points are ndarray arrays, as at every family's interfaces: a point an
//! episode keeps is an `Array1<f64>`, one the benchmark reads is an `ArrayView1<'_, f64>`
//! (a set of points would be an `Array2<f64>`, one per row).

use armada_core::{AnyEpisode, ComponentDef, Declaration, Episode, Family, JobError, JobStreams, StreamRng, ValidJob};
use armada_math::dist::{Distribution, Normal};
use ndarray::{Array1, ArrayView1};
use rand::Rng;

pub struct ExampleFamily;

armada_core::params! {
    /// The quadratic's parameters, declared once: each field is a parameter with its range,
    /// default and doc; validation and `armada list` read the schema this makes.
    pub struct QuadraticParams {
        /// dimension
        dim: usize in [1, 100] = 2,
        /// standard deviation of the observation noise
        noise_sd: f64 in [0.0, 10.0] = 0.1,
    }
}

armada_core::params! {
    /// The hill climber's parameters.
    pub struct HillClimbParams {
        /// standard deviation of a step
        step: f64 in [1e-6, 10.0] = 0.5,
    }
}

const BENCHMARKS: [ComponentDef; 1] = [ComponentDef::new::<QuadraticParams>(
    "quadratic",
    "f(x) = |x - x*|^2 on [-2, 2]^dim, x* uniform in [-1, 1]^dim per seed, Gaussian observation noise",
)];

const ALGORITHMS: [ComponentDef; 2] = [
    ComponentDef::bare("random", "a uniform point of the box at every step"),
    ComponentDef::new::<HillClimbParams>(
        "hill-climb",
        "a Gaussian step from the best observed point, kept when its observation is better",
    ),
];

armada_core::metrics! {
    /// The metrics of every step, declared once: each field is a metric (its type decides
    /// float or integer); an episode builds this struct by name.
    pub struct QuadraticMetrics {
        y: f64 = "the noisy observation of this step",
        best_f: f64 = "true f at the best observed point so far",
        evaluations: u32 = "points evaluated so far",
    }
}

const DECLARATION: Declaration = Declaration {
    name: "example",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 2,
    doc: "a worked example: a noisy quadratic, random search against a hill climber",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: QuadraticMetrics::DEFS,
    // Every run takes all `horizon` steps.
    ends_early: false,
    headline_metrics: &[],
    summary_axes: &[],
};

impl Family for ExampleFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }
    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        // Validation filled in every parameter and checked its range: these parse.
        let QuadraticParams { dim, noise_sd } = job.spec.benchmark_params.parse()?;
        let mut optimum_rng = streams.env("optimum");
        let optimum = Array1::from_shape_fn(dim, |_| optimum_rng.random_range(-1.0..=1.0));
        let step = match job.spec.algorithm.as_str() {
            "hill-climb" => Some(job.spec.algorithm_params.parse::<HillClimbParams>()?.step),
            _ => None,
        };
        Ok(Box::new(Quadratic {
            optimum,
            noise_sd,
            noise: streams.env("noise"),
            moves: streams.algo("moves"),
            step,
            best: None,
            evaluations: 0,
        }))
    }
}

struct Quadratic {
    optimum: Array1<f64>,
    noise_sd: f64,
    noise: StreamRng,
    moves: StreamRng,
    /// The hill climber's step; `None` for random search.
    step: Option<f64>,
    /// The best observed point, its observation and its true value.
    best: Option<(Array1<f64>, f64, f64)>,
    evaluations: u32,
}

impl Quadratic {
    fn f(&self, x: ArrayView1<'_, f64>) -> f64 {
        x.iter().zip(&self.optimum).map(|(a, b)| (a - b) * (a - b)).sum()
    }

    /// Evaluate `x`: observe it, keep it if best, and give this step's record.
    fn evaluate(&mut self, x: Array1<f64>) -> Result<QuadraticMetrics, JobError> {
        let noise = Normal::new(0.0, self.noise_sd).map_err(|e| JobError::Invalid(e.to_string()))?;
        let f = self.f(x.view());
        let y = f + noise.sample(&mut self.noise);
        self.evaluations += 1;
        if self.best.as_ref().is_none_or(|(_, best_y, _)| y < *best_y) {
            self.best = Some((x, y, f));
        }
        let best_f = self.best.as_ref().map_or(f64::NAN, |b| b.2);
        Ok(QuadraticMetrics { y, best_f, evaluations: self.evaluations })
    }

    fn uniform(&mut self) -> Array1<f64> {
        Array1::from_shape_fn(self.optimum.len(), |_| self.moves.random_range(-2.0..=2.0))
    }
}

impl Episode for Quadratic {
    type Metrics = QuadraticMetrics;

    fn initial(&mut self) -> Result<QuadraticMetrics, JobError> {
        let x = self.uniform();
        self.evaluate(x)
    }

    fn step(&mut self, _step: u32) -> Result<Option<QuadraticMetrics>, JobError> {
        let x = match (self.step, &self.best) {
            (Some(sd), Some((best, _, _))) => {
                let gauss = Normal::new(0.0, sd).map_err(|e| JobError::Invalid(e.to_string()))?;
                let from = best.clone();
                from.mapv(|v| (v + gauss.sample(&mut self.moves)).clamp(-2.0, 2.0))
            }
            _ => self.uniform(),
        };
        self.evaluate(x).map(Some)
    }
}
