//! The `cvs` family as the registry sees it: benchmarks, algorithms, parameters with defaults
//! and cross-field checks (the paper's Experiments section, Algorithm 1 and its appendix).

use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Family, JobError, JobSpec, JobStreams, Params, SpecError, ValidJob,
};

use crate::algorithms::etc::{Etc, Grouping};
use crate::algorithms::proposed::{AlphaSchedule, CostLog, LcbMode, Mode, Proposed, ProposedConfig, Shift};
use crate::algorithms::psq::{TsPsq, UcbPsq};
use crate::algorithms::ucb_cvs::UcbCvs;
use crate::algorithms::{Algorithm, SearchConfig};
use crate::episode::{BudgetRule, CvsEpisode, CvsMetrics, McConfig};
use crate::maximize::MaximizeConfig;
use crate::problem::{CostNoise, CostSet, Objective, Problem};
use crate::surrogate::SigmaMode;

armada_core::params! {
    /// The parameters every benchmark takes (the paper's Experiments section).
    pub struct BenchParams {
        /// mean costs of the 7 sets
        cost_set: CostSet = CostSet::Cheap,
        /// variance of every truncated-normal input after truncation; at most 0.08: a
        /// truncated normal on [0, 1] has a variance below 1/12, the uniform's
        variance: f64 in [0.005, 0.08] = 0.02,
        /// budget C in cost units
        budget: f64 in [0.01, 100_000.0] = 100.0,
        /// realised-cost rule
        cost_noise: CostNoise = CostNoise::Paper,
        /// observation noise std (the authors' code: 0)
        noise_std: f64 in [0.0, 10.0] = 0.01,
        /// last play may overshoot C, or stop if it would
        budget_rule: BudgetRule = BudgetRule::Overshoot,
    }
}

const BENCHMARKS: [ComponentDef; 5] = [
    ComponentDef::new::<BenchParams>("hartmann6-12d", "Hartmann-6 embedded in 12-D"),
    ComponentDef::new::<BenchParams>("ackley6-12d", "negated Ackley-6 embedded in 12-D"),
    ComponentDef::new::<BenchParams>("levy6-12d", "negated Levy-6 embedded in 12-D"),
    ComponentDef::new::<BenchParams>("plant", "plant-growth SVGP simulator, 5-D"),
    ComponentDef::new::<BenchParams>(
        "airfoil",
        "airfoil self-noise GP simulator, 5-D, no full set; variance 0.02 or 0.04",
    ),
];

armada_core::params! {
    /// The Monte Carlo sets every algorithm takes.
    pub struct McParams {
        /// MC samples N of the fixed set S (the authors' code: 1500)
        n_mc: usize in [1, 100_000] = 1024,
        /// samples of S (the first ones) averaged in E[sigma]; < n_mc is a documented reduction
        n_sigma: usize in [1, 100_000] = 1024,
        /// E[sigma] as the mean of per-sample sigmas (the paper's), or sqrt(E[sigma^2]) (fast, not the paper's)
        sigma_mode: SigmaMode = SigmaMode::PerSample,
    }
}

/// The inner optimiser's parameters (the reference codes'), under a name of their own for each
/// set of defaults: the proposed method searches less widely than the baselines.
macro_rules! search_params {
    ($(#[$meta:meta])* $name:ident: n_warmup_full = $full:literal, n_iter = $n_iter:literal) => {
        armada_core::params! {
            $(#[$meta])*
            pub struct $name {
                /// warm-up points when maximising over a full set
                n_warmup_full: usize in [1, 1_000_000] = $full,
                /// warm-up points when maximising over a partial set
                n_warmup_partial: usize in [1, 1_000_000] = 100,
                /// L-BFGS starts: n_iter - 1 random plus the best warm-up point
                n_iter: usize in [1, 100] = $n_iter,
            }
        }

        impl $name {
            fn config(&self) -> SearchConfig {
                SearchConfig {
                    full: MaximizeConfig { n_warmup: self.n_warmup_full, n_iter: self.n_iter },
                    partial: MaximizeConfig { n_warmup: self.n_warmup_partial, n_iter: self.n_iter },
                }
            }
        }
    };
}

search_params! {
    /// The proposed method's inner optimiser.
    ProposedSearch: n_warmup_full = 2000, n_iter = 2
}

search_params! {
    /// The baselines' inner optimiser.
    BaselineSearch: n_warmup_full = 10000, n_iter = 5
}

armada_core::params! {
    /// The UCB confidence multiplier.
    pub struct Ucb {
        /// confidence multiplier
        beta: f64 in [0.0, 100.0] = 2.0,
    }
}

armada_core::choice! {
    /// Which BO-uCVS the proposed method runs.
    pub enum ProposedMode {
        /// the paper's Algorithm 1, with its Experiments section's settings
        Paper = "paper",
        /// the authors' code, Fsoft-AIC/BO-uCVS (Adam refit per exploitation step)
        Code = "code",
        /// code without the refit
        CodeFixed = "code-fixed",
    }
}

armada_core::params! {
    /// `proposed`'s parameters.
    pub struct ProposedParams {
        #[flatten]
        mc: McParams,
        #[flatten]
        search: ProposedSearch,
        /// paper: Algorithm 1 as the paper states it; code: as the authors' code (Fsoft-AIC/BO-uCVS) runs
        /// it, with an Adam refit per exploitation step; code-fixed: code without the refit
        mode: ProposedMode = ProposedMode::Paper,
        #[flatten]
        ucb: Ucb,
        /// initial tolerance alpha (paper mode)
        alpha0: f64 in [0.0, 0.99] = 0.1,
        /// exploration budget fraction rho
        explore_fraction: f64 in [0.0, 1.0] = 0.6,
        /// when lcb_bar is updated during exploration
        lcb_mode: LcbMode = LcbMode::EveryStep,
        /// threshold shift
        shift: Shift = Shift::Worst,
        /// halve alpha every d exploitation plays, or once
        alpha_schedule: AlphaSchedule = AlphaSchedule::Repeated,
        /// T in sqrt(2 ln T / T_i): ln t or ln T_hat
        cost_log: CostLog = CostLog::Iteration,
        /// code mode: iteration from which sets are random (0 = never)
        t_cap: usize in [0, 1_000_000] = 450,
    }
}

armada_core::params! {
    /// `ucb-psq`'s parameters.
    pub struct UcbPsqParams {
        #[flatten]
        mc: McParams,
        #[flatten]
        search: BaselineSearch,
        #[flatten]
        ucb: Ucb,
    }
}

armada_core::params! {
    /// `ts-psq`'s parameters.
    pub struct TsPsqParams {
        #[flatten]
        mc: McParams,
        #[flatten]
        search: BaselineSearch,
        /// RFF frequencies D_f
        n_features: usize in [1, 100_000] = 1024,
    }
}

armada_core::params! {
    /// `etc`'s parameters.
    pub struct EtcParams {
        #[flatten]
        mc: McParams,
        #[flatten]
        search: BaselineSearch,
        #[flatten]
        ucb: Ucb,
        /// plays per group (ETC-50)
        plays_per_group: usize in [0, 1_000_000] = 50,
        /// size: equal number of variables (paper); tay/code: the reference codes' lists
        groups: Grouping = Grouping::Size,
    }
}

armada_core::params! {
    /// `ucb-cvs`'s parameters.
    pub struct UcbCvsParams {
        #[flatten]
        mc: McParams,
        #[flatten]
        search: BaselineSearch,
        #[flatten]
        ucb: Ucb,
        /// initial epsilon of the linear schedule
        eps0: f64 in [0.0, 1000.0] = 0.1,
        /// budget fraction at which epsilon reaches 0
        eps_cut: f64 in [0.001, 1.0] = 0.5,
    }
}

const ALGORITHMS: [ComponentDef; 5] = [
    ComponentDef::new::<ProposedParams>("proposed", "BO-uCVS (mode: the paper's rules or its reference code's)"),
    ComponentDef::new::<UcbPsqParams>("ucb-psq", "UCB-PSQ"),
    ComponentDef::new::<TsPsqParams>("ts-psq", "TS-PSQ with random Fourier features"),
    ComponentDef::new::<EtcParams>("etc", "ETC-n: UCB-PSQ over groups of sets, n plays per group, then all sets"),
    ComponentDef::new::<UcbCvsParams>("ucb-cvs", "UCB-CVS with known mean costs, reference only"),
];

/// The `cvs` family.
pub struct CvsFamily;

/// The benchmark of a validated job: its problem and how its last play is treated.
pub fn problem(spec: &JobSpec) -> Result<(Problem, BudgetRule), JobError> {
    let objective = Objective::by_name(&spec.benchmark)
        .ok_or_else(|| JobError::Invalid(format!("unknown cvs benchmark `{}`", spec.benchmark)))?;
    let b: BenchParams = spec.benchmark_params.parse()?;
    let problem = Problem::new(objective, b.cost_set, b.cost_noise, b.variance, b.budget, b.noise_std)?;
    Ok((problem, b.budget_rule))
}

fn algorithm(name: &str, p: &Params, problem: &Problem) -> Result<Box<dyn Algorithm>, JobError> {
    Ok(match name {
        "proposed" => {
            let p: ProposedParams = p.parse()?;
            let (mode, refit) = match p.mode {
                ProposedMode::Paper => (Mode::Paper, false),
                ProposedMode::Code => (Mode::Code, true),
                ProposedMode::CodeFixed => (Mode::Code, false),
            };
            let config = ProposedConfig {
                mode,
                beta: p.ucb.beta,
                alpha0: p.alpha0,
                explore_fraction: p.explore_fraction,
                lcb_mode: p.lcb_mode,
                shift: p.shift,
                alpha_schedule: p.alpha_schedule,
                cost_log: p.cost_log,
                t_cap: p.t_cap,
                refit,
                search: p.search.config(),
            };
            Box::new(Proposed::new(config, problem.n_sets()))
        }
        "ucb-psq" => {
            let p: UcbPsqParams = p.parse()?;
            Box::new(UcbPsq { beta: p.ucb.beta, search: p.search.config() })
        }
        "ts-psq" => {
            let p: TsPsqParams = p.parse()?;
            Box::new(TsPsq { n_frequencies: p.n_features, search: p.search.config() })
        }
        "etc" => {
            let p: EtcParams = p.parse()?;
            Box::new(Etc::new(p.ucb.beta, p.groups.groups(problem), p.plays_per_group, p.search.config()))
        }
        "ucb-cvs" => {
            let p: UcbCvsParams = p.parse()?;
            Box::new(UcbCvs { beta: p.ucb.beta, eps0: p.eps0, eps_cut: p.eps_cut, search: p.search.config() })
        }
        other => return Err(JobError::Invalid(format!("unknown cvs algorithm `{other}`"))),
    })
}

/// Build the episode of a validated spec (also used by tests and the bench).
pub fn episode(spec: &JobSpec, streams: &JobStreams) -> Result<CvsEpisode, JobError> {
    let (problem, rule) = problem(spec)?;
    let p = &spec.algorithm_params;
    let algo = algorithm(&spec.algorithm, p, &problem)?;
    // Every algorithm takes the Monte Carlo parameters.
    let McParams { n_mc, n_sigma, sigma_mode } = p.parse()?;
    let mc = McConfig { n_mc, n_sigma, sigma_mode };
    Ok(CvsEpisode::new(problem, rule, algo, mc, streams))
}

const DECLARATION: Declaration = Declaration {
    name: "cvs",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 6,
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
        self.check_benchmark(spec)?;
        let McParams { n_mc, n_sigma, .. } =
            spec.algorithm_params.parse().map_err(|e| SpecError::new("algorithm_params", e.to_string()))?;
        if n_sigma > n_mc {
            return Err(SpecError::new("algorithm_params.n_sigma", format!("{n_sigma} exceeds n_mc = {n_mc}")));
        }
        Ok(())
    }

    fn check_benchmark(&self, spec: &JobSpec) -> Result<(), SpecError> {
        let BenchParams { variance, .. } =
            spec.benchmark_params.parse().map_err(|e| SpecError::new("benchmark_params", e.to_string()))?;
        if spec.benchmark == "airfoil" && Objective::Airfoil.f_star(variance).is_none() {
            return Err(SpecError::new(
                "benchmark_params.variance",
                format!("airfoil has f* only for variance 0.02 or 0.04, got {variance}"),
            ));
        }
        Ok(())
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        Ok(Box::new(episode(&job.spec, streams)?))
    }
}
