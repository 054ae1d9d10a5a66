//! The `cvs` family as the registry sees it: benchmarks, algorithms, parameters with defaults
//! and cross-field checks (spec §4, §3, Appendix A).

use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Family, JobError, JobSpec, JobStreams, ParamDef, ParamKind, Params,
    SpecError, ValidJob,
};

use crate::algorithms::etc::{Etc, Grouping};
use crate::algorithms::proposed::{AlphaSchedule, CostLog, LcbMode, Mode, Proposed, ProposedConfig, Shift};
use crate::algorithms::psq::{TsPsq, UcbPsq};
use crate::algorithms::ucb_cvs::UcbCvs;
use crate::algorithms::{Algorithm, SearchConfig};
use crate::episode::{BudgetRule, CvsEpisode, CvsMetrics, McConfig};
use crate::maximize::MaximizeConfig;
use crate::problem::{CostNoise, Objective, Problem};
use crate::surrogate::SigmaMode;

const fn float(name: &'static str, min: f64, max: f64, default: f64, doc: &'static str) -> ParamDef {
    ParamDef { name, kind: ParamKind::Float { min, max, default }, doc }
}
const fn int(name: &'static str, min: i64, max: i64, default: i64, doc: &'static str) -> ParamDef {
    ParamDef { name, kind: ParamKind::Int { min, max, default }, doc }
}
const fn choice(
    name: &'static str,
    options: &'static [&'static str],
    default: &'static str,
    doc: &'static str,
) -> ParamDef {
    ParamDef { name, kind: ParamKind::Choice { options, default }, doc }
}

const BENCH_PARAMS: &[ParamDef] = &[
    choice(
        "cost_set",
        &["cheap", "moderate", "expensive", "code-4", "code-5"],
        "cheap",
        "mean costs of the 7 sets (spec 4.7)",
    ),
    // At most 0.08: a truncated normal on [0, 1] has a variance below 1/12, the uniform's.
    float("variance", 0.005, 0.08, 0.02, "variance of every truncated-normal input after truncation (spec 2.5)"),
    float("budget", 0.01, 100_000.0, 100.0, "budget C in cost units"),
    choice("cost_noise", &["paper", "code", "none"], "paper", "realised-cost rule (spec 4.7)"),
    float("noise_std", 0.0, 10.0, 0.01, "observation noise std (CODE-uCVS: 0)"),
    choice(
        "budget_rule",
        &["overshoot", "strict"],
        "overshoot",
        "last play may overshoot C, or stop if it would (spec 2.7)",
    ),
];

const BENCHMARKS: [ComponentDef; 5] = [
    ComponentDef { name: "hartmann6-12d", doc: "Hartmann-6 embedded in 12-D (spec 4.2)", params: BENCH_PARAMS },
    ComponentDef { name: "ackley6-12d", doc: "negated Ackley-6 embedded in 12-D (spec 4.3)", params: BENCH_PARAMS },
    ComponentDef { name: "levy6-12d", doc: "negated Levy-6 embedded in 12-D (spec 4.4)", params: BENCH_PARAMS },
    ComponentDef { name: "plant", doc: "plant-growth SVGP simulator, 5-D (spec 4.5)", params: BENCH_PARAMS },
    ComponentDef {
        name: "airfoil",
        doc: "airfoil self-noise GP simulator, 5-D, no full set (spec 4.6); variance 0.02 or 0.04",
        params: BENCH_PARAMS,
    },
];

macro_rules! common_params {
    ($warm_full:expr, $n_iter:expr $(, $extra:expr)* $(,)?) => {
        &[
            int("n_mc", 1, 100_000, 1024, "MC samples N of the fixed set S (spec 2.3; CODE-uCVS 1500)"),
            int("n_sigma", 1, 100_000, 1024, "samples of S (the first ones) averaged in E[sigma]; < n_mc is a documented reduction"),
            choice("sigma_mode", &["per-sample", "rms"], "per-sample", "E[sigma] as the mean of per-sample sigmas (spec), or sqrt(E[sigma^2]) (fast, not the spec's)"),
            int("n_warmup_full", 1, 1_000_000, $warm_full, "warm-up points when maximising over a full set (spec 2.4)"),
            int("n_warmup_partial", 1, 1_000_000, 100, "warm-up points when maximising over a partial set"),
            int("n_iter", 1, 100, $n_iter, "L-BFGS starts: n_iter - 1 random plus the best warm-up point"),
            $($extra,)*
        ]
    };
}

const BETA: ParamDef = float("beta", 0.0, 100.0, 2.0, "confidence multiplier (spec 2.2)");

const ALGORITHMS: [ComponentDef; 5] = [
    ComponentDef {
        name: "proposed",
        doc: "BO-uCVS (spec 3.2 paper mode, 3.3 code mode)",
        params: common_params!(
            2000,
            2,
            choice(
                "mode",
                &["paper", "code", "code-fixed"],
                "paper",
                "paper: Algorithm 1 as in spec 3.2; code: Fsoft-AIC/BO-uCVS (spec 3.3, Adam refit per exploitation step); code-fixed: code without the refit"
            ),
            BETA,
            float("alpha0", 0.0, 0.99, 0.1, "initial tolerance alpha (paper mode)"),
            float("explore_fraction", 0.0, 1.0, 0.6, "exploration budget fraction rho"),
            choice(
                "lcb_mode",
                &["every_step", "every_round"],
                "every_step",
                "when lcb_bar is updated during exploration"
            ),
            choice("shift", &["worst", "zero", "min-observed"], "worst", "threshold shift (spec 3.2.1)"),
            choice(
                "alpha_schedule",
                &["repeated", "once"],
                "repeated",
                "halve alpha every d exploitation plays, or once"
            ),
            choice("cost_log", &["iteration", "projected"], "iteration", "T in sqrt(2 ln T / T_i): ln t or ln T_hat"),
            int("t_cap", 0, 1_000_000, 450, "code mode: iteration from which sets are random (0 = never)"),
        ),
    },
    ComponentDef { name: "ucb-psq", doc: "UCB-PSQ (spec 3.4)", params: common_params!(10000, 5, BETA) },
    ComponentDef {
        name: "ts-psq",
        doc: "TS-PSQ with random Fourier features (spec 3.5)",
        params: common_params!(10000, 5, int("n_features", 1, 100_000, 1024, "RFF frequencies D_f")),
    },
    ComponentDef {
        name: "etc",
        doc: "ETC-n: UCB-PSQ over groups of sets, n plays per group, then all sets (spec 3.6)",
        params: common_params!(
            10000,
            5,
            BETA,
            int("plays_per_group", 0, 1_000_000, 50, "plays per group (ETC-50)"),
            choice(
                "groups",
                &["size", "tay", "code"],
                "size",
                "size: equal number of variables (paper); tay/code: the reference codes' lists"
            ),
        ),
    },
    ComponentDef {
        name: "ucb-cvs",
        doc: "UCB-CVS with known mean costs, reference only (spec 3.7)",
        params: common_params!(
            10000,
            5,
            BETA,
            float("eps0", 0.0, 1000.0, 0.1, "initial epsilon of the linear schedule"),
            float("eps_cut", 0.001, 1.0, 0.5, "budget fraction at which epsilon reaches 0"),
        ),
    },
];

/// The `cvs` family.
pub struct CvsFamily;

fn problem(spec: &JobSpec) -> Result<(Problem, BudgetRule), JobError> {
    let b = &spec.benchmark_params;
    let objective = Objective::by_name(&spec.benchmark)
        .ok_or_else(|| JobError::Invalid(format!("unknown cvs benchmark `{}`", spec.benchmark)))?;
    let noise = CostNoise::by_name(b.str("cost_noise")?).ok_or_else(|| JobError::Invalid("cost_noise".into()))?;
    let problem = Problem::new(
        objective,
        b.str("cost_set")?,
        noise,
        b.float("variance")?,
        b.float("budget")?,
        b.float("noise_std")?,
    )?;
    let rule = b.choice("budget_rule", &[("overshoot", BudgetRule::Overshoot), ("strict", BudgetRule::Strict)])?;
    Ok((problem, rule))
}

fn usize_param(p: &Params, name: &str) -> Result<usize, JobError> {
    Ok(p.int(name)? as usize)
}

fn algorithm(name: &str, p: &Params, problem: &Problem) -> Result<Box<dyn Algorithm>, JobError> {
    let search = SearchConfig {
        full: MaximizeConfig { n_warmup: usize_param(p, "n_warmup_full")?, n_iter: usize_param(p, "n_iter")? },
        partial: MaximizeConfig { n_warmup: usize_param(p, "n_warmup_partial")?, n_iter: usize_param(p, "n_iter")? },
    };
    let bad = |field: &str| JobError::Invalid(format!("bad value of `{field}`"));
    Ok(match name {
        "proposed" => {
            let config = ProposedConfig {
                mode: p.choice("mode", &[("paper", Mode::Paper), ("code", Mode::Code), ("code-fixed", Mode::Code)])?,
                beta: p.float("beta")?,
                alpha0: p.float("alpha0")?,
                explore_fraction: p.float("explore_fraction")?,
                lcb_mode: p
                    .choice("lcb_mode", &[("every_step", LcbMode::EveryStep), ("every_round", LcbMode::EveryRound)])?,
                shift: p.choice(
                    "shift",
                    &[("worst", Shift::Worst), ("zero", Shift::Zero), ("min-observed", Shift::MinObserved)],
                )?,
                alpha_schedule: p.choice(
                    "alpha_schedule",
                    &[("repeated", AlphaSchedule::Repeated), ("once", AlphaSchedule::Once)],
                )?,
                cost_log: p
                    .choice("cost_log", &[("iteration", CostLog::Iteration), ("projected", CostLog::Projected)])?,
                t_cap: usize_param(p, "t_cap")?,
                refit: p.choice("mode", &[("paper", false), ("code", true), ("code-fixed", false)])?,
                search,
            };
            Box::new(Proposed::new(config, problem.n_sets()))
        }
        "ucb-psq" => Box::new(UcbPsq { beta: p.float("beta")?, search }),
        "ts-psq" => Box::new(TsPsq { n_frequencies: usize_param(p, "n_features")?, search }),
        "etc" => {
            let grouping = Grouping::by_name(p.str("groups")?).ok_or_else(|| bad("groups"))?;
            Box::new(Etc::new(p.float("beta")?, grouping.groups(problem), usize_param(p, "plays_per_group")?, search))
        }
        "ucb-cvs" => {
            Box::new(UcbCvs { beta: p.float("beta")?, eps0: p.float("eps0")?, eps_cut: p.float("eps_cut")?, search })
        }
        other => return Err(JobError::Invalid(format!("unknown cvs algorithm `{other}`"))),
    })
}

/// Build the episode of a validated spec (also used by tests and the bench).
pub fn episode(spec: &JobSpec, streams: &JobStreams) -> Result<CvsEpisode, JobError> {
    let (problem, rule) = problem(spec)?;
    let p = &spec.algorithm_params;
    let algo = algorithm(&spec.algorithm, p, &problem)?;
    let sigma_mode = p.choice("sigma_mode", &[("per-sample", SigmaMode::PerSample), ("rms", SigmaMode::Rms)])?;
    let mc = McConfig { n_mc: usize_param(p, "n_mc")?, n_sigma: usize_param(p, "n_sigma")?, sigma_mode };
    Ok(CvsEpisode::new(problem, rule, algo, mc, streams))
}

const DECLARATION: Declaration = Declaration {
    name: "cvs",
    // 3: `mode = "code"` refits the GP hyperparameters with Adam at every exploitation
    // step, as the reference code (d641ef3); its results of before are not resumed.
    // 4: a run ends once its budget is spent (`ends_early`) instead of repeating its last
    // row with `played = 0` up to the horizon, and the `played` metric is gone (every row
    // after step 0 is a play); the plays themselves are unchanged.
    version: 4,
    doc: "BO with unknown cost-varying variable subsets (Hoang, Nguyen, Tran, AAAI 2025, arXiv:2412.15863) and its baselines",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: CvsMetrics::DEFS,
    // A run stops when its budget is spent, whatever the horizon.
    ends_early: true,
    headline_metrics: &["simple_regret", "n_evals", "cum_cost"],
    summary_axes: &["cum_cost"],
};

impl Family for CvsFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }

    fn check(&self, spec: &JobSpec) -> Result<(), SpecError> {
        let b = &spec.benchmark_params;
        let message = |e: JobError| e.to_string();
        let variance = b.float("variance").map_err(|e| SpecError::new("benchmark_params.variance", message(e)))?;
        if spec.benchmark == "airfoil" && Objective::Airfoil.f_star(variance).is_none() {
            return Err(SpecError::new(
                "benchmark_params.variance",
                format!("airfoil has f* only for variance 0.02 or 0.04, got {variance}"),
            ));
        }
        let a = &spec.algorithm_params;
        let n_mc = a.int("n_mc").map_err(|e| SpecError::new("algorithm_params.n_mc", message(e)))?;
        let n_sigma = a.int("n_sigma").map_err(|e| SpecError::new("algorithm_params.n_sigma", message(e)))?;
        if n_sigma > n_mc {
            return Err(SpecError::new("algorithm_params.n_sigma", format!("{n_sigma} exceeds n_mc = {n_mc}")));
        }
        Ok(())
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        Ok(Box::new(episode(&job.spec, streams)?))
    }
}
