//! The `safe` family as the registry sees it: benchmarks of paper Section 5 and Appendix B,
//! rules of paper Section 3 and Appendix B.2.2, the metrics of
//! [`crate::episode::SafeMetrics`].
//!
//! Algorithms: `msafeopt-case1`, `msafeopt-case2`, `msafeopt-case3a`, `msafeopt-case3b`,
//! `safeopt-mc`, `predvar`. Every rule takes `beta_f`, `beta_g` (3, paper App. B.2.2),
//! `refit` (`multistart` as Trieste, `warm`, `fixed`) and `restarts_per_param` (10); M-SafeOpt
//! Cases 1, 2, 3a also take `l_scale` (the c of paper App. B.1) and `refined_acquisition`
//! (36); Cases 1 and 3a take `elimination` (`robust` as the experiments, or `progressive` as
//! Algorithm 1).

use crate::algorithms::{Algorithm, Case, Elimination};
use crate::benchmarks::{Benchmark, Settings, BENCHMARKS};
use crate::episode::{RunConfig, SafeEpisode, SafeMetrics};
use crate::surrogate::RefitMode;
use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Family, JobError, JobSpec, JobStreams, Params, SpecError, ValidJob,
};

/// The family as the registry sees it.
pub struct SafeFamily;

armada_core::params! {
    /// What every rule takes: the confidence multipliers and the refit of the hyperparameters.
    pub struct ConfidenceParams {
        /// confidence multiplier of f (constant 3 in the experiments)
        beta_f: f64 in [0.0, 100.0] = 3.0,
        /// confidence multiplier of g
        beta_g: f64 in [0.0, 100.0] = 3.0,
        /// hyperparameter refit each round: Trieste's prior-screened multi-start, warm start only, or none
        refit: RefitMode = RefitMode::Multistart,
        /// prior draws per hyperparameter screened before L-BFGS (Trieste num_kernel_samples = 10)
        restarts_per_param: usize in [0, 1000] = 10,
    }
}

armada_core::params! {
    /// M-SafeOpt Case 2's parameters (and the base of Cases 1 and 3a's).
    pub struct MSafeOptParams {
        #[flatten]
        confidence: ConfidenceParams,
        /// misspecification c: the rule uses c * l_f and l_g / c
        l_scale: f64 in [1e-3, 1e3] = 1.0,
        /// expanders scored by max{w_f, (L_f/L'_g) w_g} (eq. 36) instead of max{w_f, w_g}
        refined_acquisition: bool = false,
    }
}

armada_core::params! {
    /// M-SafeOpt Cases 1 and 3a's parameters: Case 2's and the elimination rule.
    pub struct EliminatingParams {
        #[flatten]
        msafeopt: MSafeOptParams,
        /// recompute elimination over all of D_X each round (experiments) or remove x for good (Alg. 1)
        elimination: Elimination = Elimination::Robust,
    }
}

const ALGORITHMS: [ComponentDef; 6] = [
    ComponentDef::new::<EliminatingParams>(
        "msafeopt-case1",
        "M-SafeOpt Case 1: global safe optimum, elimination (20)-(21), expansion (22)",
    ),
    ComponentDef::new::<MSafeOptParams>(
        "msafeopt-case2",
        "M-SafeOpt Case 2: best safe s for every x, expansion (24), no elimination",
    ),
    ComponentDef::new::<EliminatingParams>(
        "msafeopt-case3a",
        "M-SafeOpt Case 3a: f and g increasing in s, global optimum on the boundary",
    ),
    ComponentDef::new::<ConfidenceParams>(
        "msafeopt-case3b",
        "M-SafeOpt Case 3b (= M-SafeUCB): f and g increasing, best s per x, uses g only",
    ),
    ComponentDef::new::<ConfidenceParams>(
        "safeopt-mc",
        "SafeOpt-MC as the authors modified it: monotone boundary expanders, blind to f",
    ),
    ComponentDef::new::<ConfidenceParams>(
        "predvar",
        "PredVar: the certified point of largest confidence width, pure exploration",
    ),
];

/// The largest grid a job may tabulate (the 3-D paper grid is 75^3 = 421,875 points).
const MAX_GRID_POINTS: usize = 500_000;

/// The rule and run settings of validated algorithm parameters.
pub fn run_config(name: &str, p: &Params) -> Result<RunConfig, JobError> {
    let msafeopt = |case, elimination, m: MSafeOptParams| {
        (m.confidence, m.l_scale, Algorithm::MSafeOpt { case, elimination, refined: m.refined_acquisition })
    };
    let eliminating = |case| -> Result<_, JobError> {
        let EliminatingParams { msafeopt: m, elimination } = p.parse()?;
        Ok(msafeopt(case, elimination, m))
    };
    // Cases 3b, SafeOpt-MC and PredVar have no `l_scale` (no misspecification: c = 1), no
    // refined acquisition and no elimination.
    let (confidence, l_scale, algorithm) = match name {
        "msafeopt-case1" => eliminating(Case::One)?,
        "msafeopt-case2" => msafeopt(Case::Two, Elimination::Robust, p.parse()?),
        "msafeopt-case3a" => eliminating(Case::ThreeA)?,
        "msafeopt-case3b" => (
            p.parse()?,
            1.0,
            Algorithm::MSafeOpt { case: Case::ThreeB, elimination: Elimination::Robust, refined: false },
        ),
        "safeopt-mc" => (p.parse()?, 1.0, Algorithm::SafeOptMc),
        "predvar" => (p.parse()?, 1.0, Algorithm::PredVar),
        other => return Err(JobError::Invalid(format!("unknown safe algorithm `{other}`"))),
    };
    let ConfidenceParams { beta_f, beta_g, refit, restarts_per_param } = confidence;
    Ok(RunConfig { algorithm, beta_f, beta_g, l_scale, refit, draws_per_param: restarts_per_param })
}

const DECLARATION: Declaration = Declaration {
    name: "safe",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 4,
    doc: "safe Bayesian optimisation with monotonicity constraints: M-SafeOpt and baselines (Losalka & Scarlett, AISTATS 2024)",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: SafeMetrics::DEFS,
    ends_early: false,
    headline_metrics: &["regret_avg", "regret2_avg", "regretx_avg", "violations_cum"],
    summary_axes: &[],
};

impl Family for SafeFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }

    /// Refuses a multi-start with nothing to start from, and what `check_benchmark` refuses.
    fn check(&self, spec: &JobSpec) -> Result<(), SpecError> {
        self.check_benchmark(spec)?;
        // Every algorithm has both.
        let ConfidenceParams { refit, restarts_per_param, .. } =
            spec.algorithm_params.parse().map_err(|e| SpecError::new("algorithm_params", e.to_string()))?;
        if restarts_per_param == 0 && refit == RefitMode::Multistart {
            return Err(SpecError::new(
                "algorithm_params.restarts_per_param",
                "must be at least 1 with refit = \"multistart\" (use refit = \"warm\" to start from the previous estimate only)",
            ));
        }
        Ok(())
    }

    /// Refuses grids too large to tabulate and a threshold under which the seed column
    /// s = 0 is unsafe (assumption 3).
    fn check_benchmark(&self, spec: &JobSpec) -> Result<(), SpecError> {
        let settings = Settings::of(&spec.benchmark, &spec.benchmark_params)
            .map_err(|e| SpecError::new("benchmark_params", e.to_string()))?;
        let n = settings.grid;
        let x_dims = if spec.benchmark == "synthetic-3d" { 2 } else { 1 };
        let points = n.saturating_pow(1 + x_dims);
        if points > MAX_GRID_POINTS {
            return Err(SpecError::new(
                "benchmark_params.grid",
                format!("{n} points per axis make {points} candidates; at most {MAX_GRID_POINTS} are allowed"),
            ));
        }
        Benchmark::check_seed_column(&spec.benchmark, &spec.benchmark_params).map_err(|e| {
            let message = match e {
                JobError::Invalid(m) => m,
                other => other.to_string(),
            };
            SpecError::new("benchmark_params.h", message)
        })
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let spec = &job.spec;
        let bench = Benchmark::from_params(&spec.benchmark, &spec.benchmark_params)?;
        let config = run_config(&spec.algorithm, &spec.algorithm_params)?;
        Ok(Box::new(SafeEpisode::new(bench, config, streams)?))
    }
}
