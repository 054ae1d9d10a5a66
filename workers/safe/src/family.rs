//! The `safe` family as the registry sees it: benchmarks of spec 4, rules of spec 3, the
//! metrics of [`crate::episode::SafeMetrics`].
//!
//! Algorithms: `msafeopt-case1`, `msafeopt-case2`, `msafeopt-case3a`, `msafeopt-case3b`,
//! `safeopt-mc`, `predvar`. Every rule takes `beta_f`, `beta_g` (3, spec 2.3), `refit`
//! (`multistart` as Trieste, `warm`, `fixed`) and `restarts_per_param` (10); M-SafeOpt Cases
//! 1, 2, 3a also take `l_scale` (the c of spec 5.1) and `refined_acquisition` (36); Cases 1
//! and 3a take `elimination` (`robust` as the experiments, or `progressive` as Algorithm 1).

use crate::algorithms::{Algorithm, Case, Elimination};
use crate::benchmarks::{Benchmark, BENCHMARKS};
use crate::episode::{RunConfig, SafeEpisode, SafeMetrics};
use crate::surrogate::RefitMode;
use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Family, JobError, JobSpec, JobStreams, ParamDef, ParamKind, Params,
    SpecError, ValidJob,
};

/// The family as the registry sees it.
pub struct SafeFamily;

const BETA_F: ParamDef = ParamDef {
    name: "beta_f",
    kind: ParamKind::Float { min: 0.0, max: 100.0, default: 3.0 },
    doc: "confidence multiplier of f (constant 3 in the experiments, spec 2.3)",
};
const BETA_G: ParamDef = ParamDef {
    name: "beta_g",
    kind: ParamKind::Float { min: 0.0, max: 100.0, default: 3.0 },
    doc: "confidence multiplier of g",
};
const REFIT: ParamDef = ParamDef {
    name: "refit",
    kind: ParamKind::Choice { options: &["multistart", "warm", "fixed"], default: "multistart" },
    doc: "hyperparameter refit each round: Trieste's prior-screened multi-start, warm start only, or none",
};
const RESTARTS: ParamDef = ParamDef {
    name: "restarts_per_param",
    kind: ParamKind::Int { min: 0, max: 1000, default: 10 },
    doc: "prior draws per hyperparameter screened before L-BFGS (Trieste num_kernel_samples = 10)",
};
const L_SCALE: ParamDef = ParamDef {
    name: "l_scale",
    kind: ParamKind::Float { min: 1e-3, max: 1e3, default: 1.0 },
    doc: "misspecification c (spec 5.1): the rule uses c * l_f and l_g / c",
};
const REFINED: ParamDef = ParamDef {
    name: "refined_acquisition",
    kind: ParamKind::Bool { default: false },
    doc: "expanders scored by max{w_f, (L_f/L'_g) w_g} (eq. 36) instead of max{w_f, w_g}",
};
const ELIMINATION: ParamDef = ParamDef {
    name: "elimination",
    kind: ParamKind::Choice { options: &["robust", "progressive"], default: "robust" },
    doc: "recompute elimination over all of D_X each round (experiments) or remove x for good (Alg. 1)",
};

const ALGORITHMS: [ComponentDef; 6] = [
    ComponentDef {
        name: "msafeopt-case1",
        doc: "M-SafeOpt Case 1 (spec 3.3): global safe optimum, elimination (20)-(21), expansion (22)",
        params: &[BETA_F, BETA_G, REFIT, RESTARTS, L_SCALE, REFINED, ELIMINATION],
    },
    ComponentDef {
        name: "msafeopt-case2",
        doc: "M-SafeOpt Case 2 (spec 3.4): best safe s for every x, expansion (24), no elimination",
        params: &[BETA_F, BETA_G, REFIT, RESTARTS, L_SCALE, REFINED],
    },
    ComponentDef {
        name: "msafeopt-case3a",
        doc: "M-SafeOpt Case 3a (spec 3.5): f and g increasing in s, global optimum on the boundary",
        params: &[BETA_F, BETA_G, REFIT, RESTARTS, L_SCALE, REFINED, ELIMINATION],
    },
    ComponentDef {
        name: "msafeopt-case3b",
        doc: "M-SafeOpt Case 3b (spec 3.5, = M-SafeUCB): f and g increasing, best s per x, uses g only",
        params: &[BETA_F, BETA_G, REFIT, RESTARTS],
    },
    ComponentDef {
        name: "safeopt-mc",
        doc: "SafeOpt-MC as the authors modified it (spec 3.9): monotone boundary expanders, blind to f",
        params: &[BETA_F, BETA_G, REFIT, RESTARTS],
    },
    ComponentDef {
        name: "predvar",
        doc: "PredVar (spec 3.9): the certified point of largest confidence width, pure exploration",
        params: &[BETA_F, BETA_G, REFIT, RESTARTS],
    },
];

/// The largest grid a job may tabulate (the 3-D paper grid is 75^3 = 421,875 points).
const MAX_GRID_POINTS: usize = 500_000;

/// The rule and run settings of validated algorithm parameters.
pub fn run_config(name: &str, p: &Params) -> Result<RunConfig, JobError> {
    // Cases 3b, SafeOpt-MC and PredVar have no `l_scale`: no misspecification, c = 1.
    let optional_float = |key: &str, default: f64| if p.get(key).is_some() { p.float(key) } else { Ok(default) };
    // Only the cases that eliminate have the parameter.
    let elimination = match p.get("elimination") {
        Some(_) => {
            p.choice("elimination", &[("robust", Elimination::Robust), ("progressive", Elimination::Progressive)])?
        }
        None => Elimination::Robust,
    };
    let refined = if p.get("refined_acquisition").is_some() { p.bool("refined_acquisition")? } else { false };
    let msafeopt = |case| Algorithm::MSafeOpt { case, elimination, refined };
    let algorithm = match name {
        "msafeopt-case1" => msafeopt(Case::One),
        "msafeopt-case2" => msafeopt(Case::Two),
        "msafeopt-case3a" => msafeopt(Case::ThreeA),
        "msafeopt-case3b" => msafeopt(Case::ThreeB),
        "safeopt-mc" => Algorithm::SafeOptMc,
        "predvar" => Algorithm::PredVar,
        other => return Err(JobError::Invalid(format!("unknown safe algorithm `{other}`"))),
    };
    let refit = p.choice(
        "refit",
        &[("multistart", RefitMode::Multistart), ("warm", RefitMode::Warm), ("fixed", RefitMode::Fixed)],
    )?;
    Ok(RunConfig {
        algorithm,
        beta_f: p.float("beta_f")?,
        beta_g: p.float("beta_g")?,
        l_scale: optional_float("l_scale", 1.0)?,
        refit,
        draws_per_param: p.int("restarts_per_param")? as usize,
    })
}

const DECLARATION: Declaration = Declaration {
    name: "safe",
    // 2: as every family had before versions were per family.
    version: 2,
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

    /// Refuses grids too large to tabulate, a threshold under which the seed column s = 0 is
    /// unsafe (assumption 3), and a multi-start with nothing to start from.
    fn check(&self, spec: &JobSpec) -> Result<(), SpecError> {
        let n =
            spec.benchmark_params.int("grid").map_err(|e| SpecError::new("benchmark_params.grid", e.to_string()))?;
        let x_dims = if spec.benchmark == "synthetic-3d" { 2 } else { 1 };
        let points = (n as usize).saturating_pow(1 + x_dims);
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
        })?;
        // Every algorithm has both, filled in by validation.
        let field = |name: &str, e: JobError| SpecError::new(format!("algorithm_params.{name}"), e.to_string());
        let draws = spec.algorithm_params.int("restarts_per_param").map_err(|e| field("restarts_per_param", e))?;
        let refit = spec.algorithm_params.str("refit").map_err(|e| field("refit", e))?;
        if draws == 0 && refit == "multistart" {
            return Err(SpecError::new(
                "algorithm_params.restarts_per_param",
                "must be at least 1 with refit = \"multistart\" (use refit = \"warm\" to start from the previous estimate only)",
            ));
        }
        Ok(())
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let spec = &job.spec;
        let bench = Benchmark::from_params(&spec.benchmark, &spec.benchmark_params)?;
        let config = run_config(&spec.algorithm, &spec.algorithm_params)?;
        Ok(Box::new(SafeEpisode::new(bench, config, streams)?))
    }
}
