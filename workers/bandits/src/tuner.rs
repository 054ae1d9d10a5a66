//! The tuner abstraction and the tuning baselines of paper Section 5: Theory, fixed values (grid search), OP
//! (Beta-Bernoulli Thompson sampling), TL (EXP3 over a candidate set, or over the product of candidate sets:
//! "TL-combined") and Syndicated (one EXP3 per hyperparameter). CDT lives in [`crate::cdt`].
//!
//! A tuner makes one decision per top-layer round: [`Tuner::propose`] fills the hyperparameter vector the
//! bottom bandit uses, and [`Tuner::feedback`] passes back the realised reward of that round (or the block
//! mean in block mode). The episode loop ([`crate::episode::run_tuned`]) owns the warm-up: tuners
//! are asked nothing before the random phase is over (all tuners act after the bottom
//! algorithm's intrinsic warm-up).

use crate::hyper::{Hyperparameter, CANDIDATES_C1, CANDIDATES_C2};
use crate::BottomBandit;
use armada_math as math;
use armada_math::dist::{Beta, Distribution};
use rand::{Rng, RngCore};

/// What a tuner knows about the run before its first decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuningPlan {
    /// The tuned hyperparameters and their boxes (`p = space.len()`).
    pub space: &'static [Hyperparameter],
    /// T, all rounds of the run.
    pub horizon: usize,
    /// Rounds of uniformly random play before the first decision:
    /// `max(tuner's request, bandit's intrinsic warm-up)`, rounded up to a block boundary in block mode.
    pub random_phase: usize,
    /// Rounds per decision: 1, or the SGD-TS epoch `tau` in block mode.
    pub block_len: usize,
}

impl TuningPlan {
    /// The plan for `bandit` over `horizon` rounds when the tuner asks for `requested_warmup` random rounds.
    pub fn new(bandit: &dyn BottomBandit, horizon: usize, requested_warmup: usize) -> Self {
        let block_len = bandit.block_len().unwrap_or(1).max(1);
        let warmup = requested_warmup.max(bandit.intrinsic_warmup());
        let random_phase = warmup.div_ceil(block_len) * block_len;
        TuningPlan { space: bandit.hyperparameters(), horizon, random_phase: random_phase.min(horizon), block_len }
    }
    pub fn dim(&self) -> usize {
        self.space.len()
    }
    /// Number of top-layer decisions: `ceil((T - random phase) / block)`.
    pub fn decisions(&self) -> usize {
        (self.horizon - self.random_phase).div_ceil(self.block_len)
    }
}

/// An online hyperparameter tuner.
pub trait Tuner {
    /// Display name as in the paper's legends ("CDT", "TL", ...).
    fn name(&self) -> String;
    /// Random rounds this tuner wants before its first decision (CDT's `T1`); the episode loop takes the
    /// maximum with the bandit's intrinsic warm-up.
    fn requested_warmup(&self, _bandit: &dyn BottomBandit, _horizon: usize) -> usize {
        0
    }
    /// Called once, before the first decision.
    fn start(&mut self, plan: &TuningPlan);
    /// The hyperparameters for the decision starting at 0-based round `round`; `out.len() == p`.
    fn propose(&mut self, bandit: &dyn BottomBandit, round: usize, out: &mut [f64], rng: &mut dyn RngCore);
    /// The reward of the last proposal: the realised `y_t`, or the block mean in block mode.
    fn feedback(&mut self, reward: f64, rng: &mut dyn RngCore);
}

armada_core::choice! {
    /// Which finite candidate set OP / TL / Syndicated use (paper Section 5, Appendix A.4.1).
    pub enum CandidateSet {
        /// `{0.1, 1, 2, 3, 4, 5}`, the main experiments.
        C1 = "c1",
        /// The finer 13 values of Appendix A.4.1.
        C2 = "c2",
    }
}

impl CandidateSet {
    pub fn values(self) -> &'static [f64] {
        match self {
            CandidateSet::C1 => &CANDIDATES_C1,
            CandidateSet::C2 => &CANDIDATES_C2,
        }
    }
}

/// (a) Theory: the bandit's own theoretical values every decision (paper Section 5, "Theoretical setting").
#[derive(Clone, Copy, Debug, Default)]
pub struct Theory;

impl Tuner for Theory {
    fn name(&self) -> String {
        "Theory".to_string()
    }
    fn start(&mut self, _plan: &TuningPlan) {}
    fn propose(&mut self, bandit: &dyn BottomBandit, round: usize, out: &mut [f64], _rng: &mut dyn RngCore) {
        bandit.theory_hyperparameters(round, out);
    }
    fn feedback(&mut self, _reward: f64, _rng: &mut dyn RngCore) {}
}

/// Fixed values every decision: one cell of the grid search of paper Appendix A.1.
#[derive(Clone, Debug)]
pub struct Fixed(pub Vec<f64>);

impl Tuner for Fixed {
    fn name(&self) -> String {
        format!("Fixed{:?}", self.0)
    }
    fn start(&mut self, plan: &TuningPlan) {
        assert_eq!(self.0.len(), plan.dim(), "one value per hyperparameter");
    }
    fn propose(&mut self, _bandit: &dyn BottomBandit, _round: usize, out: &mut [f64], _rng: &mut dyn RngCore) {
        out.copy_from_slice(&self.0);
    }
    fn feedback(&mut self, _reward: f64, _rng: &mut dyn RngCore) {}
}

/// A fixed exploration value: the first hyperparameter is `value` every round, any others follow
/// the bandit's theory values (the grid search of paper Appendix A.1, where GLOC's second
/// hyperparameter stays at its default).
#[derive(Clone, Debug)]
pub struct FixedExploration(pub f64);

impl Tuner for FixedExploration {
    fn name(&self) -> String {
        format!("Fixed({})", self.0)
    }
    fn start(&mut self, _plan: &TuningPlan) {}
    fn propose(&mut self, bandit: &dyn BottomBandit, round: usize, out: &mut [f64], _rng: &mut dyn RngCore) {
        bandit.theory_hyperparameters(round, out);
        out[0] = self.0;
    }
    fn feedback(&mut self, _reward: f64, _rng: &mut dyn RngCore) {}
}

/// (b) OP: Beta-Bernoulli Thompson sampling over a candidate set for the FIRST hyperparameter (the
/// exploration rate); any others stay at their theory values (`kappa = 0.196` for GLOC, `eta0 = 1` for
/// SGD-TS; paper Section 5).
#[derive(Clone, Debug)]
pub struct Op {
    candidates: Vec<f64>,
    /// Beta posterior parameters `s_k`, `f_k`, both starting at 1.
    successes: Vec<f64>,
    failures: Vec<f64>,
    current: Option<usize>,
}

impl Op {
    pub fn new(candidates: &[f64]) -> Self {
        assert!(!candidates.is_empty());
        let m = candidates.len();
        Op { candidates: candidates.to_vec(), successes: vec![1.0; m], failures: vec![1.0; m], current: None }
    }
    pub fn successes(&self) -> &[f64] {
        &self.successes
    }
    pub fn failures(&self) -> &[f64] {
        &self.failures
    }
    /// Index of the candidate the next proposal plays (`None` before the first one is drawn).
    pub fn current(&self) -> Option<usize> {
        self.current
    }
}

impl Tuner for Op {
    fn name(&self) -> String {
        "OP".to_string()
    }
    fn start(&mut self, _plan: &TuningPlan) {}
    fn propose(&mut self, bandit: &dyn BottomBandit, round: usize, out: &mut [f64], rng: &mut dyn RngCore) {
        let m = self.candidates.len();
        let index = *self.current.get_or_insert_with(|| rng.random_range(0..m));
        bandit.theory_hyperparameters(round, out);
        out[0] = self.candidates[index];
    }
    /// `r ~ Bernoulli(clip(y, 0, 1))` updates the played candidate; then one Beta draw per candidate picks
    /// the next.
    fn feedback(&mut self, reward: f64, rng: &mut dyn RngCore) {
        let played = self.current.expect("propose before feedback");
        let success = rng.random::<f64>() < reward.clamp(0.0, 1.0);
        if success {
            self.successes[played] += 1.0;
        } else {
            self.failures[played] += 1.0;
        }
        let draws: Vec<f64> = self
            .successes
            .iter()
            .zip(&self.failures)
            .map(|(&s, &f)| Beta::new(s, f).expect("Beta parameters are >= 1").sample(rng))
            .collect();
        self.current = Some(crate::argmax_by(draws.len(), |k| draws[k]));
    }
}

/// EXP3 over `M` arms as in the authors' `tl_auto_tuning`: log-weights with
/// max-subtraction, `P = gamma/M + (1 - gamma) w / sum w`, importance-weighted unclipped rewards.
#[derive(Clone, Debug)]
pub struct Exp3 {
    gamma: f64,
    log_weights: Vec<f64>,
    probabilities: Vec<f64>,
    current: Option<usize>,
}

impl Exp3 {
    /// `gamma = min(1, sqrt(M ln M / ((e - 1) T)))` with `T` the run's total rounds.
    pub fn gamma(arms: usize, horizon: usize) -> f64 {
        let m = arms as f64;
        (m * math::ln(m) / ((std::f64::consts::E - 1.0) * horizon as f64)).sqrt().min(1.0)
    }
    pub fn new(arms: usize, horizon: usize) -> Self {
        assert!(arms >= 1 && horizon >= 1);
        Exp3 {
            gamma: Self::gamma(arms, horizon),
            log_weights: vec![0.0; arms],
            probabilities: vec![1.0 / arms as f64; arms],
            current: None,
        }
    }
    pub fn exploration_rate(&self) -> f64 {
        self.gamma
    }
    /// The distribution the current index was (or will be) drawn from.
    pub fn probabilities(&self) -> &[f64] {
        &self.probabilities
    }
    pub fn log_weights(&self) -> &[f64] {
        &self.log_weights
    }
    /// The arm to play: the first one uniform, later the one drawn after the last update.
    pub fn current(&mut self, rng: &mut dyn RngCore) -> usize {
        let m = self.log_weights.len();
        *self.current.get_or_insert_with(|| rng.random_range(0..m))
    }
    /// `logw_idx += (gamma / M) y / P_idx`, recompute `P`, draw the next index from `P`.
    pub fn update(&mut self, reward: f64, rng: &mut dyn RngCore) {
        let played = self.current.expect("draw before update");
        let m = self.log_weights.len() as f64;
        self.log_weights[played] += self.gamma / m * reward / self.probabilities[played];
        let max = self.log_weights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = self.log_weights.iter().map(|l| math::exp(l - max)).sum();
        for (p, l) in self.probabilities.iter_mut().zip(&self.log_weights) {
            *p = self.gamma / m + (1.0 - self.gamma) * math::exp(l - max) / total;
        }
        self.current = Some(sample_categorical(&self.probabilities, rng));
    }
}

/// Index `k` with probability `probabilities[k]` (inverse CDF; the last index absorbs rounding).
fn sample_categorical(probabilities: &[f64], rng: &mut dyn RngCore) -> usize {
    let u: f64 = rng.random();
    let mut cumulative = 0.0;
    for (k, p) in probabilities.iter().enumerate() {
        cumulative += p;
        if u < cumulative {
            return k;
        }
    }
    probabilities.len() - 1
}

/// (c) TL: one EXP3 over the candidate set for `p = 1`, or over the Cartesian product of the candidate set
/// for every hyperparameter when `p >= 2` (the code's "TL-combined"; 36
/// combinations for `C1 x C1`).
#[derive(Clone, Debug)]
pub struct Tl {
    candidates: Vec<f64>,
    exp3: Option<Exp3>,
    dim: usize,
}

impl Tl {
    pub fn new(candidates: &[f64]) -> Self {
        assert!(!candidates.is_empty());
        Tl { candidates: candidates.to_vec(), exp3: None, dim: 0 }
    }
    pub fn exp3(&self) -> Option<&Exp3> {
        self.exp3.as_ref()
    }
    /// Combination `index` of the product grid: hyperparameter `i` gets candidate `(index / M^i) mod M`.
    pub fn combination(&self, mut index: usize, out: &mut [f64]) {
        let m = self.candidates.len();
        for o in out.iter_mut() {
            *o = self.candidates[index % m];
            index /= m;
        }
    }
}

impl Tuner for Tl {
    fn name(&self) -> String {
        if self.dim >= 2 { "TL-combined" } else { "TL" }.to_string()
    }
    fn start(&mut self, plan: &TuningPlan) {
        self.dim = plan.dim();
        self.exp3 = Some(Exp3::new(self.candidates.len().pow(plan.dim() as u32), plan.horizon));
    }
    fn propose(&mut self, _bandit: &dyn BottomBandit, _round: usize, out: &mut [f64], rng: &mut dyn RngCore) {
        let index = self.exp3.as_mut().expect("start first").current(rng);
        self.combination(index, out);
    }
    fn feedback(&mut self, reward: f64, rng: &mut dyn RngCore) {
        self.exp3.as_mut().expect("start first").update(reward, rng);
    }
}

/// (d) Syndicated: one independent EXP3 per hyperparameter, each over the candidate set, all updated with
/// the same reward and each with its own `P_idx`. For `p = 1` it is TL.
#[derive(Clone, Debug)]
pub struct Syndicated {
    candidates: Vec<f64>,
    copies: Vec<Exp3>,
}

impl Syndicated {
    pub fn new(candidates: &[f64]) -> Self {
        assert!(!candidates.is_empty());
        Syndicated { candidates: candidates.to_vec(), copies: Vec::new() }
    }
    pub fn copies(&self) -> &[Exp3] {
        &self.copies
    }
}

impl Tuner for Syndicated {
    fn name(&self) -> String {
        "Syndicated".to_string()
    }
    fn start(&mut self, plan: &TuningPlan) {
        self.copies = (0..plan.dim()).map(|_| Exp3::new(self.candidates.len(), plan.horizon)).collect();
    }
    /// Each copy draws its own value, in hyperparameter order.
    fn propose(&mut self, _bandit: &dyn BottomBandit, _round: usize, out: &mut [f64], rng: &mut dyn RngCore) {
        for (o, copy) in out.iter_mut().zip(&mut self.copies) {
            *o = self.candidates[copy.current(rng)];
        }
    }
    fn feedback(&mut self, reward: f64, rng: &mut dyn RngCore) {
        for copy in &mut self.copies {
            copy.update(reward, rng);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::env::{RewardModel, SyntheticConfig, SyntheticEnv};
    use crate::episode::run_tuned;
    use crate::testing::ExplorationProbe;
    use armada_core::StreamRng;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The formula's values: gamma = 0.0211 (M = 6), 0.0372 (M = 13), 0.0732 (M = 36) at T = 14,000; capped at 1.
    #[test]
    fn exp3_gamma_matches_the_spec_values() {
        assert!((Exp3::gamma(6, 14_000) - 0.02114).abs() < 5e-5, "{}", Exp3::gamma(6, 14_000));
        assert!((Exp3::gamma(13, 14_000) - 0.0372).abs() < 5e-5);
        assert!((Exp3::gamma(36, 14_000) - 0.0732).abs() < 5e-5);
        assert_eq!(Exp3::gamma(6, 3), 1.0);
    }

    /// Two EXP3 updates recomputed by hand, including an unclipped negative reward (as the authors' code):
    /// `logw_idx += (gamma/M) y / P_idx` with the P the index was drawn from, then the mixed distribution,
    /// and the next index by inverse CDF of one uniform.
    #[test]
    fn exp3_updates_match_a_hand_computation() {
        let (m, gamma) = (6usize, Exp3::gamma(6, 14_000));
        let mut exp3 = Exp3::new(m, 14_000);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut logw = vec![0.0; m];
        let mut probs = vec![1.0 / m as f64; m];
        for y in [0.8, -1.5, 2.0] {
            let played = exp3.current(&mut rng);
            logw[played] += gamma / m as f64 * y / probs[played];
            let total: f64 = logw.iter().map(|l: &f64| l.exp()).sum();
            probs = logw.iter().map(|l| gamma / m as f64 + (1.0 - gamma) * l.exp() / total).collect();
            let mut replay = rng.clone();
            let u: f64 = replay.random();
            let expected_next = probs
                .iter()
                .scan(0.0, |c, p| {
                    *c += p;
                    Some(*c)
                })
                .position(|c| u < c)
                .unwrap();
            exp3.update(y, &mut rng);
            for k in 0..m {
                assert!((exp3.log_weights()[k] - logw[k]).abs() < 1e-15);
                assert!((exp3.probabilities()[k] - probs[k]).abs() < 1e-15);
                assert!(probs[k] >= gamma / m as f64);
            }
            assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert_eq!(exp3.current(&mut rng), expected_next);
        }
    }

    /// With reward 1 on arm 0 only, the mass on arm 0 tends to `1 - gamma + gamma/M`.
    #[test]
    fn exp3_concentrates_on_the_only_rewarding_arm() {
        let mut exp3 = Exp3::new(6, 14_000);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..14_000 {
            let y = if exp3.current(&mut rng) == 0 { 1.0 } else { 0.0 };
            exp3.update(y, &mut rng);
        }
        let gamma = exp3.exploration_rate();
        let limit = 1.0 - gamma + gamma / 6.0;
        assert!((exp3.probabilities()[0] - limit).abs() < 1e-3, "{} vs {limit}", exp3.probabilities()[0]);
    }

    /// OP's Beta counts: y >= 1 is a sure success, y <= 0 (e.g. a negative linear
    /// reward) a sure failure; each feedback adds exactly one count; the next candidate is the argmax of one
    /// Beta draw per candidate, replayed from a clone of the stream.
    #[test]
    fn op_updates_beta_counts_with_clipped_rewards_and_picks_the_best_draw() {
        let mut op = Op::new(&CANDIDATES_C1);
        let bandit = ExplorationProbe::new(&[0.0], &[0.0]);
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut out = [0.0];
        for (step, y) in [1.0f64, -0.3, 2.5, 0.4, 0.0].into_iter().enumerate() {
            op.propose(&bandit, step, &mut out, &mut rng);
            let played = op.current().unwrap();
            assert_eq!(out[0], CANDIDATES_C1[played]);
            let (s, f) = (op.successes()[played], op.failures()[played]);
            let mut replay = rng.clone();
            let success = replay.random::<f64>() < y.clamp(0.0, 1.0);
            let mut successes = op.successes().to_vec();
            let mut failures = op.failures().to_vec();
            if success {
                successes[played] += 1.0;
            } else {
                failures[played] += 1.0;
            }
            let draws: Vec<f64> =
                (0..6).map(|k| Beta::new(successes[k], failures[k]).unwrap().sample(&mut replay)).collect();
            op.feedback(y, &mut rng);
            match y {
                y if y >= 1.0 => assert_eq!(op.successes()[played], s + 1.0),
                y if y <= 0.0 => assert_eq!(op.failures()[played], f + 1.0),
                _ => assert_eq!(op.successes()[played] + op.failures()[played], s + f + 1.0),
            }
            assert_eq!(op.current(), Some(crate::argmax_by(6, |k| draws[k])));
        }
        assert_eq!(op.successes().iter().chain(op.failures()).sum::<f64>(), 12.0 + 5.0);
    }

    /// OP keeps the second hyperparameter at its theory value (paper Section 5; GLOC kappa = 0.196).
    #[test]
    fn op_tunes_only_the_exploration_rate() {
        let gloc = crate::BottomKind::Gloc.build(5, 1000);
        let mut op = Op::new(&CANDIDATES_C2);
        let mut out = [0.0; 2];
        op.propose(gloc.as_ref(), 10, &mut out, &mut ChaCha8Rng::seed_from_u64(1));
        assert!(CANDIDATES_C2.contains(&out[0]));
        assert_eq!(out[1], 0.196);
    }

    /// Syndicated: each copy is updated with the same reward but its own `P_idx`; TL-combined enumerates the
    /// product grid (36 combinations for C1 x C1, gamma 0.0732).
    #[test]
    fn syndicated_updates_each_copy_with_its_own_probability_and_tl_combined_spans_the_product() {
        let bandit = ExplorationProbe::new(&[0.0], &[0.0, 0.0]);
        let plan = TuningPlan { space: bandit.hyperparameters(), horizon: 14_000, random_phase: 0, block_len: 1 };
        let mut synd = Syndicated::new(&CANDIDATES_C1);
        synd.start(&plan);
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let mut out = [0.0; 2];
        let gamma = Exp3::gamma(6, 14_000);
        for y in [1.0, 0.0, 1.0, 1.0] {
            synd.propose(&bandit, 0, &mut out, &mut rng);
            let before: Vec<(usize, f64, f64)> = synd
                .copies
                .iter_mut()
                .map(|c| {
                    let i = c.current(&mut rng);
                    (i, c.log_weights()[i], c.probabilities()[i])
                })
                .collect();
            for (o, (i, ..)) in out.iter().zip(&before) {
                assert_eq!(*o, CANDIDATES_C1[*i]);
            }
            synd.feedback(y, &mut rng);
            for (copy, (i, logw, p)) in synd.copies().iter().zip(before) {
                assert!((copy.log_weights()[i] - (logw + gamma / 6.0 * y / p)).abs() < 1e-15);
            }
        }
        let mut tl = Tl::new(&CANDIDATES_C1);
        tl.start(&plan);
        assert_eq!(tl.name(), "TL-combined");
        assert_eq!(tl.exp3().unwrap().probabilities().len(), 36);
        assert!((tl.exp3().unwrap().exploration_rate() - 0.0732).abs() < 5e-5);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..36 {
            tl.combination(i, &mut out);
            seen.insert((out[0].to_bits(), out[1].to_bits()));
        }
        assert_eq!(seen.len(), 36);
        tl.combination(13, &mut out);
        assert_eq!(out, [CANDIDATES_C1[1], CANDIDATES_C1[2]]);
    }

    /// An easy logistic instance (best arm's success probability about 0.94, a random arm's about 0.5).
    pub(crate) fn probe_env(seed: u64, horizon: usize) -> SyntheticEnv {
        let config = SyntheticConfig {
            dim: 5,
            n_arms: 20,
            horizon,
            rewards: RewardModel::Logistic,
            theta_scale: 10.0,
            law: crate::env::FeatureLaw::Cube,
        };
        SyntheticEnv::new(config, StreamRng::seed_from_u64(seed))
    }

    /// Runs `tuner` on the probe with best unit-box corner `target`; returns the outcome and the best values.
    pub(crate) fn run_on_probe(
        tuner: &mut dyn Tuner,
        target: &[f64],
        seed: u64,
        horizon: usize,
    ) -> (crate::episode::TunedOutcome, Vec<f64>) {
        let mut env = probe_env(seed, horizon);
        let mut probe = ExplorationProbe::new(env.theta(), target);
        let best = probe.best_values();
        let outcome = run_tuned(
            &mut probe,
            &mut env,
            tuner,
            &mut StreamRng::seed_from_u64(seed + 1),
            &mut StreamRng::seed_from_u64(seed + 2),
            &mut StreamRng::seed_from_u64(seed + 3),
        );
        (outcome, best)
    }

    /// Fraction of the last `window` rounds whose hyperparameters equal `best`.
    pub(crate) fn share_at(outcome: &crate::episode::TunedOutcome, best: &[f64], window: usize) -> f64 {
        let t = outcome.cumulative_regret.len();
        (t - window..t).filter(|&r| outcome.hyperparameters_at(r).unwrap() == best).count() as f64 / window as f64
    }

    /// On a bottom bandit whose best hyperparameter is known (a corner of the box: the smallest value, or
    /// the largest), OP, TL and Syndicated end up playing it most of the time.
    #[test]
    fn finite_set_tuners_converge_to_the_known_best_candidate() {
        let horizon = 8000;
        for (target, seed) in [([0.0], 40), ([1.0], 50)] {
            let (op, best) = run_on_probe(&mut Op::new(&CANDIDATES_C1), &target, seed, horizon);
            let (tl, _) = run_on_probe(&mut Tl::new(&CANDIDATES_C1), &target, seed, horizon);
            let (op_share, tl_share) = (share_at(&op, &best, 2000), share_at(&tl, &best, 2000));
            assert!(op_share > 0.6, "OP plays {best:?} in {op_share:.3} of the last rounds");
            assert!(tl_share > 0.5, "TL plays {best:?} in {tl_share:.3} of the last rounds");
        }
        let mut synd = Syndicated::new(&CANDIDATES_C1);
        let (outcome, best) = run_on_probe(&mut synd, &[0.0, 1.0], 60, horizon);
        assert_eq!(best, vec![0.1, 5.0]);
        let argmax = |c: &Exp3| crate::argmax_by(6, |k| c.probabilities()[k]);
        assert_eq!((argmax(&synd.copies()[0]), argmax(&synd.copies()[1])), (0, 5), "{:?}", synd.copies());
        let t = outcome.cumulative_regret.len();
        for (i, &value) in best.iter().enumerate() {
            let hits = (t - 2000..t).filter(|&r| outcome.hyperparameters_at(r).unwrap()[i] == value).count();
            let share = hits as f64 / 2000.0;
            assert!(share > 0.5, "Syndicated copy {i} plays {value} in {share:.3} of the last rounds");
        }
    }
}
