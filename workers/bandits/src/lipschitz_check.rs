//! The Lipschitzness check of the CDT paper's Appendix A.2 (Figure 3): along a CDT
//! trajectory of LinUCB or LinTS, every round also asks the bandit which arm each fixed exploration
//! value `alpha in {0.30, 0.45, ..., 9.00}` (59 values) would pull from the same history, and records
//! that arm's expected reward. The analysis centres those rewards within groups of 20 rounds and
//! plots their mean and spread against `alpha`.
//!
//! * Environment: the unit-ball environment (d = 6, K = 60 in the paper; linear rewards).
//! * CDT with its first `warmup` rounds (default 200) uniformly random, as the paper does.
//! * LinTS uses common random numbers: every alpha of a round scales the same `z ~ N(0, I)`, drawn
//!   from a stream of its own so the CDT run itself is unchanged by the check.
//! * The paper says "obtained reward". With the round's noise shared by
//!   every alpha, an obtained reward is the expected reward plus the same noise, which the centring
//!   removes exactly, so only expected rewards are recorded.

use crate::cdt::{CdtConfig, WarmupRule};
use crate::env::Environment;
use crate::episode::TunedLoop;
use crate::family::{bottom_of, environment, UNIT_BALL};
use crate::methods::TunerKind;
use crate::tuner::Tuner;
use crate::{BottomBandit, BottomKind};
use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Episode, Family, JobError, JobSpec, JobStreams, MetricDef, MetricKind,
    Metrics, SpecError, StreamRng, ValidJob,
};
use std::sync::OnceLock;

/// The paper's exploration values: 0.30 to 9.00 in steps of 0.15.
pub fn alphas() -> Vec<f64> {
    (0..59).map(|i| (30 + 15 * i) as f64 / 100.0).collect()
}

/// The family as the registry sees it.
pub struct LipschitzCheckFamily;

armada_core::choice! {
    /// CDT's constants in the check.
    pub enum CheckPreset {
        /// the paper's
        Paper = "paper",
        /// the reference code's
        Refcode = "refcode",
    }
}

armada_core::params! {
    /// The check's CDT.
    pub struct CheckParams {
        /// CDT's constants
        preset: CheckPreset = CheckPreset::Paper,
        /// uniformly random rounds before CDT starts (the paper: 200)
        warmup: usize in [0, 1 << 30] = 200,
    }
}

const ALGORITHMS: [ComponentDef; 1] = [ComponentDef::new::<CheckParams>(
    "cdt",
    "CDT on LinUCB or LinTS, recording every fixed alpha's counterfactual expected reward",
)];

fn metrics() -> &'static [MetricDef] {
    static METRICS: OnceLock<Vec<MetricDef>> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut m = vec![
            MetricDef { name: "regret", kind: MetricKind::Float, doc: "the CDT run's cumulative expected regret" },
            MetricDef {
                name: "alpha",
                kind: MetricKind::Float,
                doc: "CDT's exploration value this round (NaN while random)",
            },
        ];
        for a in alphas() {
            let name: &'static str = Box::leak(format!("exp_{a:.2}").into_boxed_str());
            m.push(MetricDef {
                name,
                kind: MetricKind::Float,
                doc: "expected reward of the arm this fixed alpha would pull from the same history",
            });
        }
        m
    })
}

/// A round's metrics: named at run time (one per fixed alpha), so declared by hand.
struct CheckMetrics {
    regret: f64,
    /// CDT's exploration value (NaN while random).
    alpha: f64,
    /// The expected reward each fixed alpha's arm would have had, in [`alphas`] order.
    counterfactual: Vec<f64>,
}

impl Metrics for CheckMetrics {
    fn defs() -> &'static [MetricDef] {
        metrics()
    }
    fn into_values(self) -> Vec<f64> {
        let mut row = vec![self.regret, self.alpha];
        row.extend(self.counterfactual);
        row
    }
}

struct CheckEpisode {
    bandit: Box<dyn BottomBandit>,
    env: Box<dyn Environment + Send>,
    tuner: Box<dyn Tuner>,
    run: TunedLoop,
    algorithm: StreamRng,
    tuning: StreamRng,
    noise: StreamRng,
    counterfactual: StreamRng,
    alphas: Vec<f64>,
}

impl Episode for CheckEpisode {
    type Metrics = CheckMetrics;

    fn initial(&mut self) -> Result<CheckMetrics, JobError> {
        Ok(CheckMetrics { regret: 0.0, alpha: f64::NAN, counterfactual: vec![f64::NAN; self.alphas.len()] })
    }

    fn step(&mut self, _step: u32) -> Result<Option<CheckMetrics>, JobError> {
        let (bandit, env) = (self.bandit.as_mut(), self.env.as_mut());
        let arm = self.run.choose(bandit, env, self.tuner.as_mut(), &mut self.algorithm, &mut self.tuning);
        let mut counterfactual = Vec::with_capacity(self.alphas.len());
        let common = self.counterfactual.clone();
        let mut last = common.clone();
        for &alpha in &self.alphas {
            let mut rng = common.clone();
            let a = bandit.choose(env.contexts(), &[alpha], &mut rng);
            counterfactual.push(env.expected_reward(a));
            last = rng;
        }
        self.counterfactual = last;
        let r = self.run.complete(
            arm,
            bandit,
            env,
            self.tuner.as_mut(),
            &mut self.algorithm,
            &mut self.tuning,
            &mut self.noise,
        );
        let alpha = if r.tuned { self.run.hyperparameters()[0] } else { f64::NAN };
        Ok(Some(CheckMetrics { regret: r.cumulative_regret, alpha, counterfactual }))
    }
}

const DECLARATION: Declaration = Declaration {
    name: "lipschitz-check",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 4,
    doc: "the CDT paper's Lipschitzness check (Appendix A.2, Figure 3): counterfactual rewards of fixed exploration values along a CDT run",
    benchmarks: std::slice::from_ref(&UNIT_BALL),
    algorithms: &ALGORITHMS,
    // One metric per fixed alpha, named at run time: filled in by `declaration`.
    metrics: &[],
    ends_early: false,
    headline_metrics: &["regret"],
    summary_axes: &[],
};

impl Family for LipschitzCheckFamily {
    fn declaration(&self) -> &'static Declaration {
        static WITH_METRICS: OnceLock<Declaration> = OnceLock::new();
        WITH_METRICS.get_or_init(|| Declaration { metrics: metrics(), ..DECLARATION })
    }

    fn check(&self, spec: &JobSpec) -> Result<(), SpecError> {
        let bottom =
            bottom_of(&spec.benchmark_params).map_err(|e| SpecError::new("benchmark_params.bottom", e.to_string()))?;
        if !matches!(bottom, BottomKind::LinUcb | BottomKind::LinTs) {
            return Err(SpecError::new(
                "benchmark_params.bottom",
                format!("the Lipschitz check runs LinUCB or LinTS (one exploration value), not `{bottom}`"),
            ));
        }
        Ok(())
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let spec = &job.spec;
        let bottom = bottom_of(&spec.benchmark_params)?;
        if !matches!(bottom, BottomKind::LinUcb | BottomKind::LinTs) {
            return Err(JobError::Invalid("the Lipschitz check needs LinUCB or LinTS".into()));
        }
        let horizon = spec.horizon as usize;
        let env = environment(&spec.benchmark, &spec.benchmark_params, horizon, streams.env("environment"))?;
        let bandit = bottom.build(env.dim(), horizon);
        let ap = &spec.algorithm_params;
        let CheckParams { preset, warmup } = ap.parse()?;
        let mut config = match preset {
            CheckPreset::Paper => CdtConfig::paper(),
            CheckPreset::Refcode => CdtConfig::refcode(),
        };
        config.warmup = WarmupRule::Rounds(warmup);
        let mut tuner = TunerKind::Cdt(config).build(bandit.hyperparameters().len());
        let run = TunedLoop::start(bandit.as_ref(), horizon, tuner.as_mut());
        Ok(Box::new(CheckEpisode {
            env,
            bandit,
            tuner,
            run,
            algorithm: streams.algo("bandit"),
            tuning: streams.algo("tuner"),
            noise: streams.algo("noise"),
            counterfactual: streams.algo("counterfactual"),
            alphas: alphas(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::run_tuned;
    use crate::testing::{records, registry};
    use armada_core::ParamValue;
    use rand::SeedableRng;

    fn job(bottom: &str, horizon: u32) -> ValidJob {
        let mut spec = JobSpec::new("lipschitz-check", "unit-ball", "cdt");
        spec.benchmark_params.insert("bottom".into(), ParamValue::Str(bottom.into()));
        spec.benchmark_params.insert("dim".into(), ParamValue::Int(6));
        spec.benchmark_params.insert("arms".into(), ParamValue::Int(60));
        spec.horizon = horizon;
        registry().validate(&spec).unwrap()
    }

    #[test]
    fn the_grid_is_the_papers() {
        let a = alphas();
        assert_eq!((a.len(), a[0], a[1], a[58]), (59, 0.3, 0.45, 9.0));
        assert_eq!(metrics().len(), 61);
        assert_eq!((metrics()[2].name, metrics()[60].name), ("exp_0.30", "exp_9.00"));
    }

    /// The check does not disturb the CDT run (its regret equals `run_tuned` on the same streams), and
    /// each recorded counterfactual is the expected reward of LinUCB's argmax for that alpha on the
    /// history before the round (recomputed here on a replayed bandit, before `complete`).
    #[test]
    fn counterfactuals_leave_the_run_unchanged_and_match_a_replay() {
        for bottom in ["linucb", "lints"] {
            let j = job(bottom, 260);
            let rows = records(&j);
            let streams = JobStreams::new(&j.spec);
            let alg = bottom_of(&j.spec.benchmark_params).unwrap();
            let mut env =
                environment(&j.spec.benchmark, &j.spec.benchmark_params, 260, streams.env("environment")).unwrap();
            let mut bandit = alg.build(6, 260);
            let mut config = CdtConfig::paper();
            config.warmup = WarmupRule::Rounds(200);
            let mut tuner = TunerKind::Cdt(config).build(1);
            let out = run_tuned(
                bandit.as_mut(),
                env.as_mut(),
                tuner.as_mut(),
                &mut streams.algo("bandit"),
                &mut streams.algo("tuner"),
                &mut streams.algo("noise"),
            );
            for (t, row) in rows[1..].iter().enumerate() {
                assert_eq!(row[0].to_bits(), out.cumulative_regret[t].to_bits(), "{bottom} round {t}");
                assert_eq!(row[1].is_nan(), t < 200);
                assert_eq!(row.len(), 61);
            }
        }
        // LinUCB replay: rebuild the history from the recorded arms and check two alphas at one round.
        let j = job("linucb", 230);
        let rows = records(&j);
        let streams = JobStreams::new(&j.spec);
        let mut env =
            environment(&j.spec.benchmark, &j.spec.benchmark_params, 230, streams.env("environment")).unwrap();
        let mut bandit = BottomKind::LinUcb.build(6, 230);
        let mut config = CdtConfig::paper();
        config.warmup = WarmupRule::Rounds(200);
        let mut tuner = TunerKind::Cdt(config).build(1);
        let mut run = TunedLoop::start(bandit.as_ref(), 230, tuner.as_mut());
        let (mut alg_rng, mut tun_rng, mut noise) =
            (streams.algo("bandit"), streams.algo("tuner"), streams.algo("noise"));
        for t in 0..230 {
            let arm = run.choose(bandit.as_mut(), env.as_mut(), tuner.as_mut(), &mut alg_rng, &mut tun_rng);
            if t == 220 {
                let ctx = env.contexts();
                for (i, alpha) in [(0usize, 0.3), (58, 9.0)] {
                    // LinUCB ignores the rng: its choice is the UCB argmax on this history.
                    let chosen = bandit.choose(ctx, &[alpha], &mut StreamRng::seed_from_u64(0));
                    assert_eq!(rows[t + 1][2 + i], env.expected_reward(chosen), "alpha {alpha}");
                }
            }
            run.complete(arm, bandit.as_mut(), env.as_mut(), tuner.as_mut(), &mut alg_rng, &mut tun_rng, &mut noise);
        }
    }

    #[test]
    fn only_one_hyperparameter_bandits_are_accepted() {
        let mut spec = JobSpec::new("lipschitz-check", "unit-ball", "cdt");
        spec.benchmark_params.insert("bottom".into(), ParamValue::Str("gloc".into()));
        spec.horizon = 10;
        let err = registry().validate(&spec).unwrap_err();
        assert_eq!(err.field_path, "benchmark_params.bottom", "{err}");
    }
}
