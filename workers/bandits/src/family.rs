//! The `bandits` family: one job = a synthetic environment x a bottom bandit x a tuner x a
//! repetition, run one round per step (paper Section 5, the "Simulation" half of the main grid).
//!
//! * Benchmark `synthetic` (paper Section 5): d = 25, K = 120 by default; parameter `bottom` picks the
//!   bottom algorithm (it belongs to the setting, as in the paper's 14 panels), `rewards` the
//!   reward model (`paper`: linear for LinUCB and LinTS, logistic for the other five, paper Section 5).
//!   The environment (theta*, contexts) comes from the environment stream, so every tuner of a
//!   repetition faces the same instance; reward noise, the bandit's and the tuner's randomness
//!   come from the algorithm's own streams.
//! * Algorithms are the tuners (paper Algorithm 2, Section 5): `theory`, `op`, `tl` (TL for one
//!   hyperparameter, Syndicated for two: the paper's "TL/Syndicated"), `tl-combined`, `cdt`.
//! * Step 0 is the state before any round (regret 0); step t is after round t. The job's
//!   horizon is T (the paper's 14,000).

use crate::cdt::{CdtPreset, WarmupRule};
use crate::env::{Environment, RewardModel, SyntheticConfig, SyntheticEnv};
use crate::episode::TunedLoop;
use crate::methods::TunerKind;
use crate::movielens::{MovieLensConfig, MovieLensEnv, RatingsSource};
use crate::tuner::{CandidateSet, Tuner};
use crate::yahoo::{YahooConfig, YahooData, YahooEnv};
use crate::{BottomBandit, BottomKind};
use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Episode, Family, JobError, JobSpec, JobStreams, Params, StreamRng, ValidJob,
};

/// The family as the registry sees it.
pub struct BanditsFamily;

armada_core::params! {
    /// The bottom bandit of a benchmark: it belongs to the setting, as in the paper's 14 panels.
    pub struct Tuned {
        /// the bottom contextual bandit being tuned
        bottom: BottomKind = BottomKind::LinUcb,
    }
}

armada_core::choice! {
    /// The reward model of a benchmark.
    pub enum Rewards {
        /// linear for linucb/lints, logistic otherwise (paper Section 5)
        Paper = "paper",
        /// linear rewards for every bottom bandit
        Linear = "linear",
        /// logistic rewards for every bottom bandit
        Logistic = "logistic",
    }
}

armada_core::params! {
    /// The bottom bandit and its reward model.
    pub struct Setting {
        #[flatten]
        tuned: Tuned,
        /// reward model; `paper`: linear for linucb/lints, logistic otherwise
        rewards: Rewards = Rewards::Paper,
    }
}

armada_core::params! {
    /// `synthetic`'s parameters.
    pub struct SyntheticParams {
        #[flatten]
        setting: Setting,
        /// context dimension d
        dim: usize in [1, 1000] = 25,
        /// arms per round K
        arms: usize in [2, 100_000] = 120,
    }
}

armada_core::choice! {
    /// The ratings behind the MovieLens environment.
    pub enum Ratings {
        /// the real MovieLens-100K ratings (analysis/fetch_movielens.py)
        Ml100k = "ml-100k",
        /// a generated stand-in of the same shape
        Standin = "standin",
        /// a cross-check, not the paper's setting: the CDT authors' precomputed rank-20 factors
        /// (their data/movie.csv and user.csv), copied into the data directory's cdt-authors/
        CdtAuthorsFactors = "cdt-authors-factors",
    }
}

armada_core::choice! {
    /// The linear reward noise of the MovieLens environment.
    pub enum MovieLensNoise {
        /// std sqrt(0.5), the paper's variance 0.5
        Paper = "paper",
        /// the code's std 0.5
        Code = "code",
    }
}

armada_core::params! {
    /// `movielens`'s parameters.
    pub struct MovieLensParams {
        #[flatten]
        setting: Setting,
        /// the real ratings (analysis/fetch_movielens.py) or a generated stand-in of the same shape
        data: Ratings = Ratings::Ml100k,
        /// linear reward noise: std sqrt(0.5) (the paper's variance 0.5) or the code's std 0.5
        noise: MovieLensNoise = MovieLensNoise::Paper,
        /// movies per round K
        arms: usize in [2, 1682] = 300,
    }
}

armada_core::params! {
    /// `unit-ball`'s parameters.
    pub struct UnitBallParams {
        #[flatten]
        setting: Setting,
        /// context dimension d
        dim: usize in [1, 1000] = 10,
        /// arms per round K (60 or 120 in Table 3)
        arms: usize in [2, 100_000] = 120,
    }
}

armada_core::params! {
    /// `yahoo-standin`'s parameters.
    pub struct YahooParams {
        #[flatten]
        tuned: Tuned,
        /// seed of the generated log (fixed across repetitions, like a real data set)
        dataset_seed: u64 in [0, 1 << 40] = 0,
        /// articles in the universe M
        articles: usize in [1, 100_000] = 270,
        /// articles per round
        pool: usize in [1, 1000] = 20,
    }
}

/// The grid-search environment, also the Lipschitz check's ([`crate::lipschitz_check`]).
pub(crate) const UNIT_BALL: ComponentDef = ComponentDef::new::<UnitBallParams>(
    "unit-ball",
    "the paper's grid-search environment (its appendix A.1): theta* and features uniform in the unit ball",
);

const BENCHMARKS: [ComponentDef; 4] = [
    ComponentDef::new::<SyntheticParams>(
        "synthetic",
        "the synthetic GLM environment (Sim): a fresh theta* and context stream per repetition",
    ),
    ComponentDef::new::<MovieLensParams>(
        "movielens",
        "MovieLens-100K: rank-20 factors, theta* from 300 users, 300 random movies per round",
    ),
    UNIT_BALL,
    ComponentDef::new::<YahooParams>(
        "yahoo-standin",
        "a seeded stand-in for Yahoo! R6A: 6-d article features, pools of 20, Bernoulli(CTR) clicks",
    ),
];

armada_core::params! {
    /// The candidate set of OP, TL and TL-combined.
    pub struct Candidates {
        /// candidate set: C1 = {0.1, 1, ..., 5} (main), C2 = 13 values (Table 4)
        candidates: CandidateSet = CandidateSet::C1,
    }
}

armada_core::params! {
    /// `fixed`'s parameters.
    pub struct FixedParams {
        /// the exploration value (Table 3's grid: 0.1, 0.5, 1, 1.5, ..., 10)
        value: f64 in [0.0, 100.0] = 1.0,
    }
}

armada_core::choice! {
    /// CDT's random phase T1.
    pub enum Warmup {
        /// the preset's
        Preset = "preset",
        /// none: the T1 = 0 ablation of Table 5
        None = "none",
    }
}

armada_core::params! {
    /// `cdt`'s parameters.
    pub struct CdtParams {
        /// the paper's constants, the reference code's, those with the code's fixed index
        /// fhat + sqrt(13/n) (the draw it makes but never adds), or those with the code's map
        /// alpha = 4v (LinUCB) / 5v (others) too
        preset: CdtPreset = CdtPreset::Paper,
        /// random phase T1: the preset's, or none (the T1 = 0 ablation of Table 5)
        warmup: Warmup = Warmup::Preset,
        /// restart epoch T2 = k T^{(p+2)/(p+3)} (Table 6: 1, 2, 3)
        k: f64 in [0.01, 100.0] = 3.0,
    }
}

const ALGORITHMS: [ComponentDef; 6] = [
    ComponentDef::bare("theory", "the bottom bandit's theoretical hyperparameters"),
    ComponentDef::new::<Candidates>(
        "op",
        "OP: Beta-Bernoulli Thompson sampling over the candidates, first hyperparameter only",
    ),
    ComponentDef::new::<Candidates>(
        "tl",
        "TL (EXP3 over the candidates) for one hyperparameter, Syndicated for two",
    ),
    ComponentDef::new::<Candidates>(
        "tl-combined",
        "EXP3 over the product of the candidate sets (the reference code's TL-combined)",
    ),
    ComponentDef::new::<FixedParams>(
        "fixed",
        "a fixed exploration value (first hyperparameter), others at theory values: the grid search of the paper's appendix A.1",
    ),
    ComponentDef::new::<CdtParams>("cdt", "CDT: Zooming TS with restarts over [0.1, 5]^p"),
];

armada_core::metrics! {
    /// The metrics of every round.
    pub struct BanditsMetrics {
        regret: f64 = "cumulative expected regret Reg(t)",
        reward: f64 = "realised reward y_t of round t (NaN at step 0)",
        reward_cum: f64 = "cumulative realised reward (Table 2's metric)",
        expected_cum: f64 = "cumulative expected reward of the pulled arms (the CTR sum on the Yahoo stand-in)",
        arm: Option<usize> = "arm pulled at round t (missing at step 0)",
        hp1: f64 = "first hyperparameter used at round t (NaN in the random phase)",
        hp2: f64 = "second hyperparameter (GLOC, SGD-TS; NaN otherwise and in the random phase)",
    }
}

fn tuner_of(name: &str, params: &Params) -> Result<TunerKind, JobError> {
    let candidates = || params.parse::<Candidates>().map(|c| c.candidates);
    Ok(match name {
        "theory" => TunerKind::Theory,
        "op" => TunerKind::Op(candidates()?),
        "tl" => TunerKind::TlOrSyndicated(candidates()?),
        "tl-combined" => TunerKind::Tl(candidates()?),
        "fixed" => TunerKind::FixedExploration(params.parse::<FixedParams>()?.value),
        "cdt" => {
            let CdtParams { preset, warmup, k } = params.parse()?;
            let mut config = preset.config();
            match warmup {
                Warmup::Preset => {}
                Warmup::None => config.warmup = WarmupRule::Rounds(0),
            }
            config.epoch_multiplier = k;
            TunerKind::Cdt(config)
        }
        other => return Err(JobError::Invalid(format!("unknown bandits tuner `{other}`"))),
    })
}

/// Whether the bottom bandit plays linear rewards: `rewards = paper` follows paper Section 5.
fn linear_rewards(rewards: Rewards, bottom: BottomKind) -> bool {
    match rewards {
        Rewards::Paper => bottom.paper_uses_linear_rewards(),
        Rewards::Linear => true,
        Rewards::Logistic => false,
    }
}

/// The bottom bandit of a validated benchmark's parameters (every benchmark has one).
pub(crate) fn bottom_of(params: &Params) -> Result<BottomKind, JobError> {
    Ok(params.parse::<Tuned>()?.bottom)
}

/// What a `bandits` benchmark owns of a job, apart from the tuner's and the bottom bandit's
/// decisions: the environment (its instance and each round's contexts from the environment
/// stream `environment`; the expected rewards, so the regret, of every arm) and the reward
/// noise, from the algorithm's own stream `noise` (rewards are seeded per run). The built-in
/// episode and armada's Python bindings both start a job's here.
pub struct JobEnvironment {
    pub env: Box<dyn Environment + Send>,
    pub noise: StreamRng,
}

impl JobEnvironment {
    /// The environment of a validated `bandits` job (its horizon is T).
    pub fn of(spec: &JobSpec, streams: &JobStreams) -> Result<Self, JobError> {
        let env =
            environment(&spec.benchmark, &spec.benchmark_params, spec.horizon as usize, streams.env("environment"))?;
        Ok(JobEnvironment { env, noise: streams.algo("noise") })
    }
}

/// The benchmark's environment for one repetition, drawn from the environment stream.
pub(crate) fn environment(
    benchmark: &str,
    bp: &Params,
    horizon: usize,
    stream: StreamRng,
) -> Result<Box<dyn Environment + Send>, JobError> {
    Ok(match benchmark {
        "yahoo-standin" => {
            let p: YahooParams = bp.parse()?;
            let config = YahooConfig { n_articles: p.articles, pool: p.pool, horizon };
            let data = YahooData::generate(config, p.dataset_seed).map_err(JobError::Invalid)?;
            Box::new(YahooEnv::new(std::sync::Arc::new(data)))
        }
        "unit-ball" => {
            let p: UnitBallParams = bp.parse()?;
            let linear = linear_rewards(p.setting.rewards, p.setting.tuned.bottom);
            let base = SyntheticConfig::appendix_grid(p.arms, linear);
            Box::new(SyntheticEnv::new(SyntheticConfig { dim: p.dim, horizon, ..base }, stream))
        }
        "synthetic" => {
            let p: SyntheticParams = bp.parse()?;
            let linear = linear_rewards(p.setting.rewards, p.setting.tuned.bottom);
            let base = if linear { SyntheticConfig::paper_linear() } else { SyntheticConfig::paper_logistic() };
            let config = SyntheticConfig { dim: p.dim, n_arms: p.arms, horizon, ..base };
            Box::new(SyntheticEnv::new(config, stream))
        }
        "movielens" => {
            let p: MovieLensParams = bp.parse()?;
            let source = match p.data {
                Ratings::Standin => RatingsSource::StandIn(0),
                Ratings::Ml100k => RatingsSource::MovieLens,
                Ratings::CdtAuthorsFactors => RatingsSource::CdtAuthorsFactors,
            };
            let factors = crate::movielens::factors(&source).map_err(JobError::MissingData)?;
            let linear = linear_rewards(p.setting.rewards, p.setting.tuned.bottom);
            let rewards = match (linear, p.noise) {
                (false, _) => RewardModel::Logistic,
                (true, MovieLensNoise::Code) => RewardModel::Linear { noise_sd: 0.5 },
                (true, MovieLensNoise::Paper) => MovieLensConfig::paper_linear_noise(),
            };
            let config = MovieLensConfig { n_arms: p.arms, horizon, ..MovieLensConfig::paper(rewards) };
            Box::new(MovieLensEnv::new(config, factors, stream).map_err(JobError::Invalid)?)
        }
        other => return Err(JobError::Invalid(format!("unknown bandits benchmark `{other}`"))),
    })
}

struct BanditsEpisode {
    bandit: Box<dyn BottomBandit>,
    env: Box<dyn Environment + Send>,
    tuner: Box<dyn Tuner>,
    run: TunedLoop,
    algorithm: StreamRng,
    tuning: StreamRng,
    noise: StreamRng,
    reward_cum: f64,
    expected_cum: f64,
}

impl Episode for BanditsEpisode {
    type Metrics = BanditsMetrics;

    fn initial(&mut self) -> Result<BanditsMetrics, JobError> {
        Ok(BanditsMetrics {
            regret: 0.0,
            reward: f64::NAN,
            reward_cum: 0.0,
            expected_cum: 0.0,
            arm: None,
            hp1: f64::NAN,
            hp2: f64::NAN,
        })
    }

    fn step(&mut self, _step: u32) -> Result<Option<BanditsMetrics>, JobError> {
        let r = self.run.play(
            self.bandit.as_mut(),
            self.env.as_mut(),
            self.tuner.as_mut(),
            &mut self.algorithm,
            &mut self.tuning,
            &mut self.noise,
        );
        let hp = self.run.hyperparameters();
        let tuned = |i: usize| if r.tuned { hp.get(i).copied().unwrap_or(f64::NAN) } else { f64::NAN };
        if !r.cumulative_regret.is_finite() {
            return Err(JobError::Numerical(format!("regret became {}", r.cumulative_regret)));
        }
        self.reward_cum += r.reward;
        self.expected_cum += r.expected;
        Ok(Some(BanditsMetrics {
            regret: r.cumulative_regret,
            reward: r.reward,
            reward_cum: self.reward_cum,
            expected_cum: self.expected_cum,
            arm: Some(r.arm),
            hp1: tuned(0),
            hp2: tuned(1),
        }))
    }
}

const DECLARATION: Declaration = Declaration {
    name: "bandits",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 5,
    doc: "online hyperparameter tuning of GLM contextual bandits: CDT and its baselines (Kang, Hsieh, Lee)",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: BanditsMetrics::DEFS,
    ends_early: false,
    headline_metrics: &["regret"],
    summary_axes: &[],
};

impl Family for BanditsFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let spec = &job.spec;
        let bp = &spec.benchmark_params;
        let bottom = bottom_of(bp)?;
        let JobEnvironment { env, noise } = JobEnvironment::of(spec, streams)?;
        let bandit = bottom.build(env.dim(), env.horizon());
        let mut tuner = tuner_of(&spec.algorithm, &spec.algorithm_params)?.build(bandit.hyperparameters().len());
        let run = TunedLoop::start(bandit.as_ref(), env.horizon(), tuner.as_mut());
        Ok(Box::new(BanditsEpisode {
            env,
            bandit,
            tuner,
            run,
            algorithm: streams.algo("bandit"),
            tuning: streams.algo("tuner"),
            noise,
            reward_cum: 0.0,
            expected_cum: 0.0,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::run_tuned;
    use crate::testing::{records, registry};
    use armada_core::{JobSpec, ParamValue};

    fn job(bottom: &str, tuner: &str, horizon: u32, seed: u64) -> ValidJob {
        let mut spec = JobSpec::new("bandits", "synthetic", tuner);
        spec.benchmark_params.insert("bottom".into(), ParamValue::Str(bottom.into()));
        spec.horizon = horizon;
        spec.seed = seed;
        registry().validate(&spec).unwrap()
    }

    /// Through the registry, a job is exactly `run_tuned` on the same streams: the per-step
    /// records are its outcome, one round per step.
    #[test]
    fn a_job_replays_run_tuned_round_by_round() {
        for (bottom, tuner) in [("linucb", "cdt"), ("gloc", "tl"), ("sgd-ts", "op"), ("lints", "theory")] {
            let j = job(bottom, tuner, 400, 3);
            let rows = records(&j);
            assert_eq!(rows.len(), 401);
            assert_eq!(rows[0][0], 0.0);
            let streams = JobStreams::new(&j.spec);
            let alg = bottom_of(&j.spec.benchmark_params).unwrap();
            let base = if alg.paper_uses_linear_rewards() {
                SyntheticConfig::paper_linear()
            } else {
                SyntheticConfig::paper_logistic()
            };
            let config = SyntheticConfig { horizon: 400, ..base };
            let mut bandit = alg.build(25, 400);
            let mut t = tuner_of(tuner, &j.spec.algorithm_params).unwrap().build(bandit.hyperparameters().len());
            let mut env = SyntheticEnv::new(config, streams.env("environment"));
            let out = run_tuned(
                bandit.as_mut(),
                &mut env,
                t.as_mut(),
                &mut streams.algo("bandit"),
                &mut streams.algo("tuner"),
                &mut streams.algo("noise"),
            );
            for (round, row) in rows[1..].iter().enumerate() {
                assert_eq!(row[0].to_bits(), out.cumulative_regret[round].to_bits(), "{bottom}/{tuner} {round}");
                assert_eq!(row[1].to_bits(), out.rewards[round].to_bits());
                assert_eq!(row[4], out.arms[round] as f64);
                assert_eq!(row[2].to_bits(), out.rewards[..=round].iter().sum::<f64>().to_bits());
                match out.hyperparameters_at(round) {
                    Some(hp) => assert_eq!(row[5], hp[0]),
                    None => assert!(row[5].is_nan()),
                }
            }
            // Regret never decreases; hyperparameters stay in the paper's box [0.1, 5] once tuned.
            assert!(rows.windows(2).all(|w| w[1][0] >= w[0][0]));
            assert!(rows.iter().filter(|r| !r[5].is_nan()).all(|r| (0.1..=5.0).contains(&r[5])));
        }
    }

    /// Common random numbers: every tuner of a repetition faces the same theta* and contexts, so
    /// the random phase (uniform arms from the tuner-specific algorithm stream aside) sees the same
    /// environment; a different repetition is a different instance.
    #[test]
    fn tuners_of_a_repetition_share_the_instance() {
        let env_of = |tuner: &str, seed: u64| {
            let j = job("ucb-glm", tuner, 10, seed);
            let streams = JobStreams::new(&j.spec);
            SyntheticEnv::new(
                SyntheticConfig { horizon: 10, ..SyntheticConfig::paper_logistic() },
                streams.env("environment"),
            )
            .theta()
            .to_vec()
        };
        assert_eq!(env_of("cdt", 0), env_of("theory", 0));
        assert_ne!(env_of("cdt", 0), env_of("cdt", 1));
    }

    /// On the Yahoo stand-in, regret + expected reward of the pulled arms = the sum of each round's
    /// best CTR, whatever the policy; the MovieLens stand-in runs through the registry likewise.
    #[test]
    fn other_environments_run_through_the_registry() {
        let registry = registry();
        let mut spec = JobSpec::new("bandits", "yahoo-standin", "cdt");
        spec.benchmark_params.insert("bottom".into(), ParamValue::Str("gloc".into()));
        spec.horizon = 300;
        let j = registry.validate(&spec).unwrap();
        let rows = records(&j);
        let data = YahooData::generate(YahooConfig { horizon: 300, ..YahooConfig::paper() }, 0).unwrap();
        let best: f64 = data.ctrs.iter().map(|c| c.iter().cloned().fold(0.0, f64::max)).sum();
        let last = rows.last().unwrap();
        assert!((last[0] + last[3] - best).abs() < 1e-9, "{} + {} vs {best}", last[0], last[3]);
        assert_eq!(last[2], rows[1..].iter().map(|r| r[1]).sum::<f64>());
        assert!(rows[1..].iter().all(|r| r[1] == 0.0 || r[1] == 1.0));

        let mut spec = JobSpec::new("bandits", "movielens", "tl");
        spec.benchmark_params.insert("bottom".into(), ParamValue::Str("lints".into()));
        spec.benchmark_params.insert("data".into(), ParamValue::Str("standin".into()));
        spec.horizon = 200;
        let rows = records(&registry.validate(&spec).unwrap());
        assert_eq!(rows.len(), 201);
        assert!(rows.windows(2).all(|w| w[1][0] >= w[0][0]) && rows[200][0] > 0.0);
        assert!(rows[1..].iter().all(|r| (0.0..300.0).contains(&r[4])), "arms index the 300 movies");
    }

    /// The grid search's fixed tuner plays its value as the first hyperparameter from round 1 (no
    /// random phase) and the theory value of the second.
    #[test]
    fn fixed_plays_its_value_and_theory_for_the_rest() {
        let registry = registry();
        let mut spec = JobSpec::new("bandits", "unit-ball", "fixed");
        spec.benchmark_params.insert("bottom".into(), ParamValue::Str("gloc".into()));
        spec.algorithm_params.insert("value".into(), ParamValue::Float(2.5));
        spec.horizon = 50;
        let rows = records(&registry.validate(&spec).unwrap());
        let bandit = BottomKind::Gloc.build(10, 50);
        let mut theory = vec![0.0; 2];
        for (round, row) in rows[1..].iter().enumerate() {
            bandit.theory_hyperparameters(round, &mut theory);
            assert_eq!((row[5], row[6]), (2.5, theory[1]), "round {round}");
        }
    }

    #[test]
    fn names_and_models_follow_the_paper() {
        // The inherent list (an array, for loops) is the choice's, in the same order.
        assert_eq!(<BottomKind as armada_core::Choice>::ALL, BottomKind::ALL);
        for alg in BottomKind::ALL {
            assert_eq!(alg.name().replace('-', ""), alg.label().to_lowercase().replace('-', ""));
        }
        // The second hyperparameter is recorded for the two-hyperparameter bandits only.
        let rows = records(&job("gloc", "cdt", 300, 0));
        assert!(rows.iter().any(|r| !r[6].is_nan()));
        let rows = records(&job("linucb", "cdt", 300, 0));
        assert!(rows.iter().all(|r| r[6].is_nan()));
    }
}
