//! One run of a bottom bandit on a synthetic environment: [`run`] with a fixed hyperparameter schedule
//! (the "Theory" baseline of paper Section 5, or a fixed value for the grid search of Appendix A.1), and
//! [`run_tuned`], an episode = environment x bottom algorithm x tuner (CDT, paper Algorithm 2; OP / TL /
//! Syndicated, Section 5).
//!
//! Regret is the cumulative pseudo-regret of Eq. (1), with expected rewards, including warm-up rounds.

use crate::env::Environment;
use crate::tuner::{Tuner, TuningPlan};
use crate::{random_arm, BottomBandit};
use rand::RngCore;

/// Hyperparameters of each round of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum HyperparameterSchedule {
    /// The bandit's own theory values at each round.
    Theory,
    /// The same values every round.
    Fixed(Vec<f64>),
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeOutcome {
    /// `Reg(t)` for t = 1..T.
    pub cumulative_regret: Vec<f64>,
    /// Sum of realised rewards.
    pub total_reward: f64,
    /// Arm pulled at each round.
    pub arms: Vec<usize>,
}

impl EpisodeOutcome {
    pub fn final_regret(&self) -> f64 {
        self.cumulative_regret.last().copied().unwrap_or(0.0)
    }
}

/// Runs `bandit` for the environment's horizon (from its current round on). `algorithm` drives the
/// bandit's own randomness, `noise` the rewards.
pub fn run(
    bandit: &mut dyn BottomBandit,
    env: &mut dyn Environment,
    schedule: &HyperparameterSchedule,
    algorithm: &mut dyn RngCore,
    noise: &mut dyn RngCore,
) -> EpisodeOutcome {
    let horizon = env.horizon();
    let p = bandit.hyperparameters().len();
    let mut hp = match schedule {
        HyperparameterSchedule::Theory => vec![0.0; p],
        HyperparameterSchedule::Fixed(values) => {
            assert_eq!(values.len(), p, "{} takes {p} hyperparameters", bandit.name());
            values.clone()
        }
    };
    let mut cumulative_regret = Vec::with_capacity(horizon);
    let mut arms = Vec::with_capacity(horizon);
    let (mut regret, mut total_reward) = (0.0, 0.0);
    for round in 0..horizon {
        if let HyperparameterSchedule::Theory = schedule {
            bandit.theory_hyperparameters(round, &mut hp);
        }
        let contexts = env.next_round();
        let arm = bandit.choose(contexts, &hp, algorithm);
        let y = env.sample_reward(arm, noise);
        regret += env.regret(arm);
        total_reward += y;
        bandit.observe(env.contexts().row(arm), y, &hp, algorithm);
        cumulative_regret.push(regret);
        arms.push(arm);
    }
    EpisodeOutcome { cumulative_regret, total_reward, arms }
}

/// What a tuned run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct TunedOutcome {
    /// `Reg(t)` for t = 1..T.
    pub cumulative_regret: Vec<f64>,
    /// Realised reward of each round.
    pub rewards: Vec<f64>,
    /// Arm pulled at each round.
    pub arms: Vec<usize>,
    /// The plan the tuner was started with (random phase, block length, ...).
    pub plan: TuningPlan,
    /// Hyperparameters used at each round from `plan.random_phase` on, row-major (`p` per round).
    pub hyperparameters: Vec<f64>,
}

impl TunedOutcome {
    pub fn final_regret(&self) -> f64 {
        self.cumulative_regret.last().copied().unwrap_or(0.0)
    }
    pub fn total_reward(&self) -> f64 {
        self.rewards.iter().sum()
    }
    /// The hyperparameters of 0-based round `round` (`None` during the random phase).
    pub fn hyperparameters_at(&self, round: usize) -> Option<&[f64]> {
        let p = self.plan.dim();
        let i = round.checked_sub(self.plan.random_phase)?;
        self.hyperparameters.get(i * p..(i + 1) * p)
    }
}

/// One round of a tuned run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    pub arm: usize,
    /// The realised reward `y_t`.
    pub reward: f64,
    /// The pulled arm's expected reward `mu(x_{t,a}^T theta*)` (the CTR on the Yahoo stand-in).
    pub expected: f64,
    /// `Reg(t)` after this round.
    pub cumulative_regret: f64,
    /// Whether the tuner chose this round's hyperparameters (false in the random phase).
    pub tuned: bool,
}

/// The state of a tuned run between rounds (paper Algorithm 2 for CDT):
/// - rounds `< plan.random_phase` play a uniformly random arm and still update the bandit (paper
///   Algorithm 2, line 2), with the theory hyperparameters passed to `observe` (they matter only for Laplace-TS, GLOC);
/// - afterwards one tuner decision per round, or per block of `tau` rounds in block mode, whose reward is
///   the realised `y_t` (block mean in block mode; a final partial block gives the mean of its rounds).
///
/// [`run_tuned`] drives it to the horizon; the family's episodes drive it one round per step.
#[derive(Clone, Debug)]
pub struct TunedLoop {
    plan: TuningPlan,
    hp: Vec<f64>,
    round: usize,
    regret: f64,
    block_sum: f64,
    block_rounds: usize,
}

impl TunedLoop {
    /// Plans the run of `bandit` for `horizon` rounds and starts `tuner` on the plan.
    pub fn start(bandit: &dyn BottomBandit, horizon: usize, tuner: &mut dyn Tuner) -> Self {
        let plan = TuningPlan::new(bandit, horizon, tuner.requested_warmup(bandit, horizon));
        tuner.start(&plan);
        TunedLoop { hp: vec![0.0; plan.dim()], plan, round: 0, regret: 0.0, block_sum: 0.0, block_rounds: 0 }
    }

    pub fn plan(&self) -> &TuningPlan {
        &self.plan
    }

    /// The hyperparameters of the last round played.
    pub fn hyperparameters(&self) -> &[f64] {
        &self.hp
    }

    /// Plays the next round. `algorithm` drives the bandit's randomness and the random phase, `tuning`
    /// the tuner's, `noise` the rewards, so all three are separately seeded.
    #[allow(clippy::too_many_arguments)]
    pub fn play(
        &mut self,
        bandit: &mut dyn BottomBandit,
        env: &mut dyn Environment,
        tuner: &mut dyn Tuner,
        algorithm: &mut dyn RngCore,
        tuning: &mut dyn RngCore,
        noise: &mut dyn RngCore,
    ) -> Round {
        let arm = self.choose(bandit, env, tuner, algorithm, tuning);
        self.complete(arm, bandit, env, tuner, algorithm, tuning, noise)
    }

    /// The first half of [`TunedLoop::play`]: the round's hyperparameters, contexts and arm. The
    /// bandit has not yet seen the round, so a caller may ask it what other hyperparameters would
    /// pick (the Lipschitz check of paper Appendix A.2) before [`TunedLoop::complete`].
    pub fn choose(
        &mut self,
        bandit: &mut dyn BottomBandit,
        env: &mut dyn Environment,
        tuner: &mut dyn Tuner,
        algorithm: &mut dyn RngCore,
        tuning: &mut dyn RngCore,
    ) -> usize {
        let (round, plan) = (self.round, self.plan);
        let tuned = round >= plan.random_phase;
        if !tuned {
            bandit.theory_hyperparameters(round, &mut self.hp);
        } else if (round - plan.random_phase) % plan.block_len == 0 {
            tuner.propose(bandit, round, &mut self.hp, tuning);
        }
        let contexts = env.next_round();
        if tuned {
            bandit.choose(contexts, &self.hp, algorithm)
        } else {
            random_arm(contexts.nrows(), algorithm)
        }
    }

    /// The second half of [`TunedLoop::play`]: the reward of `arm`, the updates, the tuner's feedback.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        arm: usize,
        bandit: &mut dyn BottomBandit,
        env: &mut dyn Environment,
        tuner: &mut dyn Tuner,
        algorithm: &mut dyn RngCore,
        tuning: &mut dyn RngCore,
        noise: &mut dyn RngCore,
    ) -> Round {
        let (round, plan) = (self.round, self.plan);
        let tuned = round >= plan.random_phase;
        let y = env.sample_reward(arm, noise);
        let expected = env.expected_reward(arm);
        self.regret += env.regret(arm);
        bandit.observe(env.contexts().row(arm), y, &self.hp, algorithm);
        if tuned {
            self.block_sum += y;
            self.block_rounds += 1;
            if self.block_rounds == plan.block_len || round + 1 == plan.horizon {
                tuner.feedback(self.block_sum / self.block_rounds as f64, tuning);
                (self.block_sum, self.block_rounds) = (0.0, 0);
            }
        }
        self.round += 1;
        Round { arm, reward: y, expected, cumulative_regret: self.regret, tuned }
    }
}

/// Runs `bandit` tuned by `tuner` for the environment's horizon ([`TunedLoop`]).
pub fn run_tuned(
    bandit: &mut dyn BottomBandit,
    env: &mut dyn Environment,
    tuner: &mut dyn Tuner,
    algorithm: &mut dyn RngCore,
    tuning: &mut dyn RngCore,
    noise: &mut dyn RngCore,
) -> TunedOutcome {
    let horizon = env.horizon();
    let mut run = TunedLoop::start(bandit, horizon, tuner);
    let plan = *run.plan();
    let mut cumulative_regret = Vec::with_capacity(horizon);
    let mut rewards = Vec::with_capacity(horizon);
    let mut arms = Vec::with_capacity(horizon);
    let mut hyperparameters = Vec::with_capacity((horizon - plan.random_phase) * plan.dim());
    for _ in 0..horizon {
        let r = run.play(bandit, env, tuner, algorithm, tuning, noise);
        if r.tuned {
            hyperparameters.extend_from_slice(run.hyperparameters());
        }
        cumulative_regret.push(r.cumulative_regret);
        rewards.push(r.reward);
        arms.push(r.arm);
    }
    TunedOutcome { cumulative_regret, rewards, arms, plan, hyperparameters }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdt::{paper_epoch, paper_warmup, Cdt, CdtConfig};
    use crate::env::{FeatureLaw, RewardModel, SyntheticConfig, SyntheticEnv};
    use crate::tuner::{Fixed, Theory};
    use crate::BottomKind;
    use armada_core::StreamRng;
    use rand::SeedableRng;

    fn easy(rewards: RewardModel) -> SyntheticConfig {
        SyntheticConfig { dim: 5, n_arms: 20, horizon: 2000, rewards, theta_scale: 4.0, law: FeatureLaw::Cube }
    }

    /// Hyperparameters that work on the easy instance (inside the paper's box).
    fn tuned(alg: BottomKind) -> Vec<f64> {
        match alg {
            BottomKind::LaplaceTs => vec![0.1],
            BottomKind::Gloc => vec![0.5, 0.5],
            BottomKind::SgdTs => vec![0.5, 1.0],
            _ => vec![0.5],
        }
    }

    fn random_policy_regret(config: SyntheticConfig, seed: u64) -> f64 {
        let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(seed));
        let mut total = 0.0;
        for _ in 0..config.horizon {
            env.next_round();
            let mean = (0..config.n_arms).map(|a| env.expected_reward(a)).sum::<f64>() / config.n_arms as f64;
            total += env.best_expected_reward() - mean;
        }
        total
    }

    /// On an easy instance (d = 5, K = 20, ||theta*|| about 2.3, T = 2000) every algorithm's regret, on its
    /// paper reward model and summed over 3 instances, is far below a uniformly random policy's (at most
    /// 35%), and cumulative regret is non-decreasing. (Several instances, because SGD-TS stakes everything
    /// on its 46-round warm-up MLE: its projection ball of radius 2 cannot reach theta* when that MLE is bad.)
    #[test]
    fn every_algorithm_beats_random_play_by_far_on_an_easy_instance() {
        for alg in BottomKind::ALL {
            let rewards = if alg.paper_uses_linear_rewards() {
                RewardModel::Linear { noise_sd: 0.5 }
            } else {
                RewardModel::Logistic
            };
            let config = easy(rewards);
            let (mut regret, mut random) = (0.0, 0.0);
            for seed in [21, 22, 23] {
                let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(seed));
                let mut bandit = alg.build(config.dim, config.horizon);
                let outcome = run(
                    bandit.as_mut(),
                    &mut env,
                    &HyperparameterSchedule::Fixed(tuned(alg)),
                    &mut StreamRng::seed_from_u64(seed + 100),
                    &mut StreamRng::seed_from_u64(seed + 200),
                );
                assert!(outcome.cumulative_regret.windows(2).all(|w| w[1] >= w[0]));
                regret += outcome.final_regret();
                random += random_policy_regret(config, seed);
            }
            let ratio = regret / random;
            assert!(ratio < 0.35, "{}: regret {regret} vs random {random} (ratio {ratio:.3})", alg.label());
        }
    }

    /// Same streams, same trajectory (bit for bit); another algorithm stream changes the randomised ones.
    #[test]
    fn runs_are_deterministic_given_the_streams() {
        let config = SyntheticConfig { horizon: 400, ..easy(RewardModel::Logistic) };
        let once = |alg: BottomKind, algo_seed: u64| {
            let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(3));
            let mut bandit = alg.build(config.dim, config.horizon);
            run(
                bandit.as_mut(),
                &mut env,
                &HyperparameterSchedule::Theory,
                &mut StreamRng::seed_from_u64(algo_seed),
                &mut StreamRng::seed_from_u64(4),
            )
        };
        for alg in BottomKind::ALL {
            let (a, b) = (once(alg, 10), once(alg, 10));
            assert_eq!(a, b, "{}", alg.label());
            if !matches!(alg, BottomKind::LinUcb | BottomKind::Gloc) {
                assert_ne!(a.arms, once(alg, 11).arms, "{} ignores its algorithm stream", alg.label());
            }
        }
    }

    /// "Theory is too conservative" (paper Section 5): on the paper's linear problem, LinUCB with its
    /// theory alpha (about 13) has clearly more regret than alpha = 1 (shortened to T = 3000),
    /// summed over four environments (one alone is a coin with a bias, not a claim).
    #[test]
    fn linucb_theory_alpha_is_worse_than_alpha_one() {
        let config = SyntheticConfig { horizon: 3000, ..SyntheticConfig::paper_linear() };
        let regret_in = |seed: u64, schedule: &HyperparameterSchedule| {
            let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(seed));
            let mut bandit = BottomKind::LinUcb.build(config.dim, config.horizon);
            run(bandit.as_mut(), &mut env, schedule, &mut StreamRng::seed_from_u64(1), &mut StreamRng::seed_from_u64(2))
                .final_regret()
        };
        let regret = |schedule: HyperparameterSchedule| -> f64 { (8..12).map(|seed| regret_in(seed, &schedule)).sum() };
        let (theory, one) = (regret(HyperparameterSchedule::Theory), regret(HyperparameterSchedule::Fixed(vec![1.0])));
        assert!(theory > 1.5 * one, "theory {theory} vs alpha=1 {one}");
    }

    /// A tuner that logs what the loop asks of it and proposes a value it can recognise.
    struct Recording {
        warmup: usize,
        plan: Option<TuningPlan>,
        proposals: Vec<usize>,
        feedback: Vec<f64>,
    }

    impl Tuner for Recording {
        fn name(&self) -> String {
            "recording".to_string()
        }
        fn requested_warmup(&self, _bandit: &dyn BottomBandit, _horizon: usize) -> usize {
            self.warmup
        }
        fn start(&mut self, plan: &TuningPlan) {
            self.plan = Some(*plan);
        }
        fn propose(&mut self, _bandit: &dyn BottomBandit, round: usize, out: &mut [f64], _rng: &mut dyn RngCore) {
            self.proposals.push(round);
            out.fill(0.1 + (self.proposals.len() % 40) as f64 / 10.0);
        }
        fn feedback(&mut self, reward: f64, _rng: &mut dyn RngCore) {
            self.feedback.push(reward);
        }
    }

    fn tuned_run(alg: BottomKind, config: SyntheticConfig, tuner: &mut dyn Tuner, seed: u64) -> TunedOutcome {
        let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(seed));
        let mut bandit = alg.build(config.dim, config.horizon);
        run_tuned(
            bandit.as_mut(),
            &mut env,
            tuner,
            &mut StreamRng::seed_from_u64(seed + 1),
            &mut StreamRng::seed_from_u64(seed + 2),
            &mut StreamRng::seed_from_u64(seed + 3),
        )
    }

    /// The tuned loop with the Theory tuner (or a fixed value) reproduces the schedule loop bit for bit on
    /// every algorithm: same random phase (the intrinsic warm-up), same hyperparameters, same streams.
    #[test]
    fn theory_and_fixed_tuners_reproduce_the_schedule_loop() {
        let config = SyntheticConfig { horizon: 400, ..easy(RewardModel::Logistic) };
        for alg in BottomKind::ALL {
            let p = alg.build(config.dim, config.horizon).hyperparameters().len();
            let cases: [(Box<dyn Tuner>, HyperparameterSchedule); 2] = [
                (Box::new(Theory), HyperparameterSchedule::Theory),
                (Box::new(Fixed(vec![0.7; p])), HyperparameterSchedule::Fixed(vec![0.7; p])),
            ];
            for (mut tuner, schedule) in cases {
                let tuned = tuned_run(alg, config, tuner.as_mut(), 30);
                let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(30));
                let mut bandit = alg.build(config.dim, config.horizon);
                let plain = run(
                    bandit.as_mut(),
                    &mut env,
                    &schedule,
                    &mut StreamRng::seed_from_u64(31),
                    &mut StreamRng::seed_from_u64(33),
                );
                assert_eq!(tuned.cumulative_regret, plain.cumulative_regret, "{} {}", alg.label(), tuner.name());
                assert_eq!(tuned.arms, plain.arms);
                assert!((tuned.total_reward() - plain.total_reward).abs() < 1e-9);
            }
        }
    }

    /// Block mode (SGD-TS, tau = 36 here): the random phase is rounded up to a block boundary, one proposal
    /// per block at its first round, the same hyperparameters for the whole block, and the tuner receives
    /// each block's mean reward (a final partial block: the mean of its rounds).
    #[test]
    fn block_mode_proposes_once_per_block_and_feeds_block_means() {
        let config = SyntheticConfig { horizon: 400, ..easy(RewardModel::Logistic) };
        let mut tuner = Recording { warmup: 50, plan: None, proposals: Vec::new(), feedback: Vec::new() };
        let outcome = tuned_run(BottomKind::SgdTs, config, &mut tuner, 5);
        let plan = tuner.plan.unwrap();
        assert_eq!((plan.block_len, plan.random_phase, plan.decisions()), (36, 72, 10));
        let starts: Vec<usize> = (72..400).step_by(36).collect();
        assert_eq!(tuner.proposals, starts);
        let mut expected = Vec::new();
        for &start in &starts {
            let end = (start + 36).min(400);
            expected.push(outcome.rewards[start..end].iter().sum::<f64>() / (end - start) as f64);
            for r in start..end {
                assert_eq!(outcome.hyperparameters_at(r), outcome.hyperparameters_at(start));
            }
        }
        assert_eq!(tuner.feedback, expected);
        assert_eq!(outcome.hyperparameters_at(71), None);
        // Per-round mode: one proposal and one feedback per round after the random phase.
        let mut tuner = Recording { warmup: 50, plan: None, proposals: Vec::new(), feedback: Vec::new() };
        let outcome = tuned_run(BottomKind::LinUcb, config, &mut tuner, 5);
        assert_eq!(tuner.proposals, (50..400).collect::<Vec<_>>());
        assert_eq!(tuner.feedback, outcome.rewards[50..].to_vec());
    }

    /// CDT on every bottom algorithm (small instance): a random phase of `max(T1, intrinsic)`, finite
    /// non-decreasing regret, hyperparameters inside the box, restarts exactly every `T2` top rounds, and the
    /// same streams give the same run while another tuner stream changes the hyperparameters.
    #[test]
    fn cdt_episodes_keep_their_invariants_on_every_algorithm() {
        let config = SyntheticConfig { horizon: 1500, ..easy(RewardModel::Logistic) };
        for alg in BottomKind::ALL {
            let mut cdt = Cdt::new(CdtConfig::paper());
            let outcome = tuned_run(alg, config, &mut cdt, 12);
            let p = outcome.plan.dim();
            let intrinsic = alg.build(config.dim, config.horizon).intrinsic_warmup();
            let expected_phase =
                paper_warmup(1500, p).max(intrinsic).div_ceil(outcome.plan.block_len) * outcome.plan.block_len;
            assert_eq!(outcome.plan.random_phase, expected_phase, "{}", alg.label());
            assert!(outcome.cumulative_regret.windows(2).all(|w| w[1] >= w[0]) && outcome.final_regret().is_finite());
            assert_eq!(outcome.hyperparameters.len(), (1500 - expected_phase) * p);
            assert!(outcome.hyperparameters.iter().all(|a| (0.1..=5.0).contains(a)), "{}", alg.label());
            let zooming = cdt.zooming().unwrap();
            let epoch = zooming.config().epoch;
            assert_eq!(zooming.counters().restarts, outcome.plan.decisions().div_ceil(epoch), "{}", alg.label());
            let mut again = Cdt::new(CdtConfig::paper());
            assert_eq!(tuned_run(alg, config, &mut again, 12), outcome, "{}", alg.label());
        }
        let hp = |tuning_seed: u64| {
            let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(12));
            let mut bandit = BottomKind::LinUcb.build(config.dim, config.horizon);
            run_tuned(
                bandit.as_mut(),
                &mut env,
                &mut Cdt::new(CdtConfig::paper()),
                &mut StreamRng::seed_from_u64(13),
                &mut StreamRng::seed_from_u64(tuning_seed),
                &mut StreamRng::seed_from_u64(15),
            )
            .hyperparameters
        };
        assert_ne!(hp(14), hp(99));
    }

    /// The restart rounds of a CDT run are `T1 + 1 + m T2` (1-based; paper Algorithm 1, line 3, counted after
    /// the warm-up), read off the trajectory: every epoch starts with one arm in [0.3, 0.7] whose ball covers
    /// [0,1] while `r(n) >= 1`, so the value is constant for the following rounds (T2 = 14000^0.75 = 405 here,
    /// k = 1 as in Table 6).
    #[test]
    fn cdt_restarts_at_the_scheduled_bottom_rounds() {
        let config = SyntheticConfig { horizon: 3000, ..easy(RewardModel::Linear { noise_sd: 0.5 }) };
        let mut cdt = Cdt::new(CdtConfig { epoch_multiplier: 1.0, ..CdtConfig::paper() });
        let outcome = tuned_run(BottomKind::LinUcb, config, &mut cdt, 3);
        let (t1, t2) = (paper_warmup(3000, 1), paper_epoch(3000, 1, 1.0));
        assert_eq!((t1, t2), (54, 405));
        let restarts: Vec<usize> = (0..).map(|m| t1 + m * t2).take_while(|&r| r < 3000).collect();
        assert_eq!(cdt.zooming().unwrap().counters().restarts, restarts.len());
        for &r in &restarts {
            let first = outcome.hyperparameters_at(r).unwrap()[0];
            assert!((1.57..=3.53).contains(&first), "round {r}: {first}");
            // r(n) = sqrt(6.5 ln 2946 / n) >= 1 for n <= 51: one arm only for the first 51 rounds.
            for s in r..r + 51 {
                assert_eq!(outcome.hyperparameters_at(s).unwrap()[0], first, "round {s} after restart {r}");
            }
        }
    }

    /// Paper Section 5 and Figure 2: Theory is "too conservative" on LinUCB and LinTS (theory alpha about 14 and 2.7
    /// here); CDT (paper preset) searching [0.1, 5] has less regret on the paper's linear instance shortened
    /// to T = 6000, on 2 instances: at most 0.8x Theory for LinUCB (0.6-0.7x observed on 6 seeds) and below
    /// Theory for LinTS (0.78-0.89x observed). At T = 3000 the LinUCB margin was only 4% on one seed, and for
    /// the GLM bandits the paper gives no CDT-vs-Theory numbers, so nothing is asserted there.
    #[test]
    fn cdt_beats_the_theory_values_on_the_paper_linear_instance() {
        let config = SyntheticConfig { horizon: 6000, ..SyntheticConfig::paper_linear() };
        for seed in [7, 8] {
            let regret = |alg: BottomKind, tuner: &mut dyn Tuner| tuned_run(alg, config, tuner, seed).final_regret();
            let cdt = regret(BottomKind::LinUcb, &mut Cdt::new(CdtConfig::paper()));
            let theory = regret(BottomKind::LinUcb, &mut Theory);
            assert!(cdt < 0.8 * theory, "LinUCB seed {seed}: CDT {cdt:.1} vs Theory {theory:.1}");
            let cdt = regret(BottomKind::LinTs, &mut Cdt::new(CdtConfig::paper()));
            let theory = regret(BottomKind::LinTs, &mut Theory);
            assert!(cdt < theory, "LinTS seed {seed}: CDT {cdt:.1} vs Theory {theory:.1}");
        }
    }
}
