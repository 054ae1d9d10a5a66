//! Acquisition rules of the finite experiments (paper Section 5.1): each picks the next
//! candidate index from the current posterior mean and variance on the candidate set (MILE
//! also reads the full covariance), optionally excluding already observed candidates (the
//! noise-free protocol of the paper's Section 5.3).

mod gotovos;
pub mod max_value;
mod mile;
mod straddle;

pub use armada_math::std_normal_cdf;
pub use gotovos::{lse_beta_sqrt, RunningIntersection};
pub use max_value::MaxValueBeta;
pub use mile::{mile_af, mile_probability, C_TINY};
pub use straddle::{chi2_2_sqrt, randomized_straddle_af, straddle_af};

use armada_core::{ComponentDef, JobError, Params};
use armada_gp::CandidateCovariance;
use rand::Rng;

armada_core::choice! {
    /// How remaining exact ties in an argmax are broken (the paper does not say).
    pub enum TieBreak {
        /// The lowest index in the canonical flattening (numpy `argmax`): the default.
        LowestIndex = "lowest-index",
        /// Uniformly at random among the tied maximisers.
        Random = "random",
    }
}

armada_core::choice! {
    /// What the randomized straddle does when its clipped acquisition is zero everywhere.
    pub enum ZeroRule {
        /// Default: argmax of the unclipped straddle with the same `beta_t` (one of the maximisers).
        Straddle = "straddle",
        /// Paper-literal: numpy `argmax` of the clipped AF, i.e. the first index.
        FirstIndex = "first-index",
    }
}

/// An acquisition rule with its parameters and any state it keeps across steps.
#[derive(Clone, Debug, PartialEq)]
pub enum Acquisition {
    /// `x_t ~ Uniform(X)`, with replacement (paper Section 5.1).
    Random,
    /// Uncertainty sampling: `argmax sigma^2` (paper Section 5.1).
    Uncertainty { tie: TieBreak },
    /// Straddle (Bryan et al. 2005): `argmax beta^{1/2} sigma - |mu - theta|` with fixed `beta^{1/2}` (Section 3.2).
    Straddle { beta_sqrt: f64, tie: TieBreak },
    /// The proposed randomized straddle, Algorithm 1 (Definition 3.2): `beta_t ~ chi2_2` fresh each step,
    /// `a = max(beta_t^{1/2} sigma - |mu - theta|, 0)`.
    RandomizedStraddle { zero_rule: ZeroRule, tie: TieBreak },
    /// Algorithms 2 and 3 (max-value loss; paper Appendix A): the randomized straddle with
    /// the larger `beta_t` of [`MaxValueBeta`]. The episode also returns the past
    /// classification with the least Monte-Carlo expected max-value loss (`mc_paths` paths).
    RandomizedStraddleMax { zero_rule: ZeroRule, tie: TieBreak, beta: MaxValueBeta, mc_paths: usize },
    /// LSE of Gotovos et al. as the paper runs it (Sections 5.1-5.3): the ambiguity
    /// `min(ucbT - theta, theta - lcbT)` with `beta_t^{1/2} = sqrt(2 ln(|X| pi^2 t^2 / (6 delta)))`;
    /// `ucbT`/`lcbT` are running intersections over iterations when `intersection` is set
    /// (finite sets), and this iteration's bounds otherwise.
    Lse { card_x: f64, delta: f64, intersection: Option<RunningIntersection>, tie: TieBreak },
    /// MILE of Zanette et al. 2019 as the paper runs it (Section 5.1): the expected number of
    /// confident upper-set points one step ahead, `sum_x' p(x'|x) - |S_{t-1}|`, with a fixed
    /// `beta^{1/2}`. Needs the full posterior covariance ([`PosteriorView::cov`]).
    Mile { beta_sqrt: f64, tie: TieBreak },
}

/// What an acquisition rule reads of the posterior on the candidate set.
#[derive(Clone, Copy, Debug)]
pub struct PosteriorView<'a> {
    pub mean: &'a [f64],
    pub var: &'a [f64],
    /// The full posterior covariance; required by the rules whose
    /// [`Acquisition::needs_covariance`] is true (MILE), ignored by the others.
    pub cov: Option<&'a CandidateCovariance>,
}

impl<'a> PosteriorView<'a> {
    /// Mean and variance only.
    pub fn new(mean: &'a [f64], var: &'a [f64]) -> Self {
        PosteriorView { mean, var, cov: None }
    }

    /// Mean, variance and covariance of a [`CandidateCovariance`].
    pub fn full(cov: &'a CandidateCovariance) -> Self {
        PosteriorView { mean: cov.mean(), var: cov.var(), cov: Some(cov) }
    }
}

/// One acquisition decision and what the records report about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub index: usize,
    /// The `beta^{1/2}` used (NaN for rules without one).
    pub beta_sqrt: f64,
    /// The maximum of the acquisition function (NaN for Random).
    pub af_max: f64,
}

armada_core::params! {
    /// The tie rule every argmax rule takes.
    pub struct Ties {
        /// how exact ties in the argmax are broken
        tie_break: TieBreak = TieBreak::LowestIndex,
    }
}

armada_core::params! {
    /// `straddle`'s parameters.
    pub struct StraddleParams {
        /// the fixed confidence multiplier beta^1/2 (paper: 3)
        beta_sqrt: f64 in [0.0, 1e3] = 3.0,
        #[flatten]
        ties: Ties,
    }
}

armada_core::params! {
    /// `rand-straddle`'s parameters.
    pub struct RandStraddleParams {
        /// when the clipped AF is 0 everywhere: the straddle argmax with the same beta_t (default),
        /// or the paper-literal first index
        zero_rule: ZeroRule = ZeroRule::Straddle,
        #[flatten]
        ties: Ties,
    }
}

armada_core::params! {
    /// `rand-straddle-max`'s parameters: those of `rand-straddle`, and how the returned
    /// classification is chosen.
    pub struct RandStraddleMaxParams {
        #[flatten]
        rule: RandStraddleParams,
        /// joint posterior sample paths for the choice of the returned classification
        mc_paths: usize in [1, 100_000] = 1000,
        /// Algorithm 3 only: the constant a of Assumption A.1, P(sup |df/dx_j| > L) <= a exp(-(L/b)^2)
        /// [assumption: 1; the paper gives none]
        sup_a: f64 in [1e-12, 1e12] = 1.0,
        /// Algorithm 3 only: the constant b of Assumption A.1 [assumption: 1; the paper gives none]
        sup_b: f64 in [1e-12, 1e12] = 1.0,
        /// Algorithm 3 only: uniform points of the box on which the sample paths and past
        /// classifications are compared (the sup over X is taken over them)
        check_points: usize in [1, 20_000] = 1000,
    }
}

armada_core::params! {
    /// `lse`'s parameters.
    pub struct LseParams {
        /// confidence parameter of beta_t
        delta: f64 in [1e-12, 1.0] = 0.05,
        /// |X| in beta_t; 0 means the number of candidates of the benchmark
        card_x: f64 in [0.0, 1e300] = 0.0,
        /// keep the running intersection of credible intervals (the paper does on finite sets)
        intersection: bool = true,
        #[flatten]
        ties: Ties,
    }
}

armada_core::params! {
    /// `mile`'s parameters.
    pub struct MileParams {
        /// the fixed confidence multiplier beta^1/2 of the confident set (paper: 3)
        beta_sqrt: f64 in [0.0, 1e3] = 3.0,
        #[flatten]
        ties: Ties,
    }
}

/// The registry entries of the finite-set algorithms.
pub const ALGORITHMS: [ComponentDef; 7] = [
    ComponentDef::bare("random", "uniform random candidate, with replacement"),
    ComponentDef::new::<Ties>("us", "uncertainty sampling: argmax of the posterior variance"),
    ComponentDef::new::<StraddleParams>("straddle", "straddle heuristic of Bryan et al. 2005 with a fixed beta^1/2"),
    ComponentDef::new::<RandStraddleParams>(
        "rand-straddle",
        "the proposed randomized straddle, Algorithm 1: beta_t ~ chi2_2 each step",
    ),
    ComponentDef::new::<RandStraddleMaxParams>(
        "rand-straddle-max",
        "randomized straddle for the max-value loss: Algorithm 2 on finite X (beta_t = xi_t + 2 ln|X|), \
         Algorithm 3 on the continuous block (beta_t = xi_t + 2 d ln tau_t, classification on a grid); the \
         returned classification chosen by Monte Carlo (Algorithm 2; not in the paper's experiments)",
    ),
    ComponentDef::new::<LseParams>(
        "lse",
        "LSE of Gotovos et al. 2013 as the paper runs it: theoretical beta_t, running intersection",
    ),
    ComponentDef::new::<MileParams>(
        "mile",
        "MILE of Zanette et al. 2019 (RMILE with eps = 0, gamma = -inf): expected confident upper-set size \
         one step ahead; finite sets only, O(N^2) per step",
    ),
];

impl Acquisition {
    /// Build from a validated algorithm name and parameters, for `n_candidates` candidates.
    pub fn from_params(name: &str, params: &Params, n_candidates: usize) -> Result<Self, JobError> {
        Ok(match name {
            "random" => Acquisition::Random,
            "us" => Acquisition::Uncertainty { tie: params.parse::<Ties>()?.tie_break },
            "straddle" => {
                let StraddleParams { beta_sqrt, ties } = params.parse()?;
                Acquisition::Straddle { beta_sqrt, tie: ties.tie_break }
            }
            "rand-straddle" => {
                let RandStraddleParams { zero_rule, ties } = params.parse()?;
                Acquisition::RandomizedStraddle { zero_rule, tie: ties.tie_break }
            }
            "rand-straddle-max" => {
                let p: RandStraddleMaxParams = params.parse()?;
                Acquisition::RandomizedStraddleMax {
                    zero_rule: p.rule.zero_rule,
                    tie: p.rule.ties.tie_break,
                    beta: MaxValueBeta::Finite { card_x: n_candidates as f64 },
                    mc_paths: p.mc_paths,
                }
            }
            "lse" => {
                let LseParams { delta, card_x, intersection, ties } = params.parse()?;
                Acquisition::Lse {
                    card_x: if card_x == 0.0 { n_candidates as f64 } else { card_x },
                    delta,
                    intersection: intersection.then(|| RunningIntersection::new(n_candidates)),
                    tie: ties.tie_break,
                }
            }
            "mile" => {
                let MileParams { beta_sqrt, ties } = params.parse()?;
                Acquisition::Mile { beta_sqrt, tie: ties.tie_break }
            }
            other => return Err(JobError::Invalid(format!("unknown lse algorithm `{other}`"))),
        })
    }

    /// The rule's acquisition value at one point from its posterior mean and variance, with
    /// the `beta_sqrt` of this step's [`Choice`] (so a randomized straddle evaluated off the
    /// candidate set uses the SAME `beta_t` as its argmax: one per step, Definition 3.2). Exactly
    /// the per-candidate formula of [`Acquisition::select`]: `var` for US,
    /// `beta^{1/2} sigma - |mu - theta|` for Straddle and LSE without intersection, and its
    /// clip at 0 for the randomized straddles. `None` for rules without a pointwise AF
    /// (Random, LSE with a running intersection, MILE).
    pub fn af_value(&self, mu: f64, var: f64, theta: f64, beta_sqrt: f64) -> Option<f64> {
        let straddle = |b: f64| straddle_af(&[mu], &[var], theta, b).next();
        match self {
            Acquisition::Uncertainty { .. } => Some(var),
            &Acquisition::Straddle { beta_sqrt: b, .. } => straddle(b),
            Acquisition::RandomizedStraddle { .. } | Acquisition::RandomizedStraddleMax { .. } => {
                straddle(beta_sqrt).map(|a| a.max(0.0))
            }
            Acquisition::Lse { intersection: None, .. } => straddle(beta_sqrt),
            // Random, LSE with a running intersection, MILE (and any rule added later until it says otherwise).
            _ => None,
        }
    }

    /// Whether the rule reads the full posterior covariance (then the episode keeps a
    /// [`CandidateCovariance`] instead of the cheaper mean/variance cache).
    pub fn needs_covariance(&self) -> bool {
        matches!(self, Acquisition::Mile { .. })
    }

    /// Choose the candidate of iteration `t` (from 1) from the mean and variance, with repeats
    /// allowed. `rng` is the algorithm's private stream.
    ///
    /// # Panics
    /// For MILE, which needs the covariance: use [`Acquisition::select_in`].
    pub fn select<R: Rng + ?Sized>(&mut self, t: u32, mean: &[f64], var: &[f64], theta: f64, rng: &mut R) -> Choice {
        self.select_in(t, PosteriorView::new(mean, var), theta, None, rng)
    }

    /// Choose the candidate of iteration `t` (from 1). Candidates with `excluded[i]` set are
    /// never chosen (Section 5.3: no re-observation in the noise-free experiment): every argmax
    /// skips them, Random draws uniformly from the rest. At least one candidate must be allowed.
    ///
    /// # Panics
    /// If the rule needs the covariance and `post.cov` is `None` (programmer error).
    pub fn select_in<R: Rng + ?Sized>(
        &mut self,
        t: u32,
        post: PosteriorView<'_>,
        theta: f64,
        excluded: Option<&[bool]>,
        rng: &mut R,
    ) -> Choice {
        let (mean, var) = (post.mean, post.var);
        let n = mean.len();
        match self {
            Acquisition::Random => {
                Choice { index: uniform_allowed(n, excluded, rng), beta_sqrt: f64::NAN, af_max: f64::NAN }
            }
            &mut Acquisition::Uncertainty { tie } => {
                let (index, af_max) = argmax_allowed(var.iter().copied(), excluded, tie, rng);
                Choice { index, beta_sqrt: f64::NAN, af_max }
            }
            &mut Acquisition::Straddle { beta_sqrt, tie } => {
                let (index, af_max) = argmax_allowed(straddle_af(mean, var, theta, beta_sqrt), excluded, tie, rng);
                Choice { index, beta_sqrt, af_max }
            }
            &mut Acquisition::RandomizedStraddle { zero_rule, tie } => {
                let beta_sqrt = chi2_2_sqrt(rng);
                clipped_straddle_choice(beta_sqrt, mean, var, theta, zero_rule, tie, excluded, rng)
            }
            &mut Acquisition::RandomizedStraddleMax { zero_rule, tie, beta, .. } => {
                let beta_sqrt = beta.sample_sqrt(t, rng);
                clipped_straddle_choice(beta_sqrt, mean, var, theta, zero_rule, tie, excluded, rng)
            }
            Acquisition::Lse { card_x, delta, intersection, tie } => {
                let beta_sqrt = lse_beta_sqrt(*card_x, t, *delta);
                let (index, af_max) = match intersection {
                    Some(bounds) => {
                        bounds.update(mean, var, beta_sqrt);
                        argmax_allowed(bounds.ambiguity(theta), excluded, *tie, rng)
                    }
                    // Without intersection the ambiguity is exactly the straddle with the growing beta_t.
                    None => argmax_allowed(straddle_af(mean, var, theta, beta_sqrt), excluded, *tie, rng),
                };
                Choice { index, beta_sqrt, af_max }
            }
            &mut Acquisition::Mile { beta_sqrt, tie } => {
                let cov = post.cov.expect("MILE needs the full posterior covariance (PosteriorView::cov)");
                // Excluded candidates are NaN in the AF already, so a plain argmax skips them.
                let (index, af_max) = argmax(mile_af(cov, theta, beta_sqrt, excluded).into_iter(), tie, rng);
                Choice { index, beta_sqrt, af_max }
            }
        }
    }
}

/// [`argmax`] over the candidates not `excluded` (excluded entries never win).
pub fn argmax_allowed<R: Rng + ?Sized>(
    values: impl Iterator<Item = f64>,
    excluded: Option<&[bool]>,
    tie: TieBreak,
    rng: &mut R,
) -> (usize, f64) {
    match excluded {
        None => argmax(values, tie, rng),
        Some(mask) => argmax(values.zip(mask).map(|(v, &e)| if e { f64::NAN } else { v }), tie, rng),
    }
}

/// A uniform index among the candidates not `excluded` (all of `0..n` when `None`).
fn uniform_allowed<R: Rng + ?Sized>(n: usize, excluded: Option<&[bool]>, rng: &mut R) -> usize {
    match excluded {
        None => rng.random_range(0..n),
        Some(mask) => {
            let n_allowed = mask.iter().filter(|&&e| !e).count();
            let r = rng.random_range(0..n_allowed);
            mask.iter().enumerate().filter(|(_, &e)| !e).nth(r).map_or(0, |(i, _)| i)
        }
    }
}

/// The clipped straddle `max(beta^{1/2} sigma - |mu - theta|, 0)` with the [`ZeroRule`]
/// for an all-zero AF (Algorithms 1 and 2 differ only in how beta is drawn).
#[allow(clippy::too_many_arguments)]
fn clipped_straddle_choice<R: Rng + ?Sized>(
    beta_sqrt: f64,
    mean: &[f64],
    var: &[f64],
    theta: f64,
    zero_rule: ZeroRule,
    tie: TieBreak,
    excluded: Option<&[bool]>,
    rng: &mut R,
) -> Choice {
    let (index, af_max) = argmax_allowed(randomized_straddle_af(mean, var, theta, beta_sqrt), excluded, tie, rng);
    let index = match (af_max > 0.0, zero_rule) {
        (true, _) => index,
        (false, ZeroRule::Straddle) => argmax_allowed(straddle_af(mean, var, theta, beta_sqrt), excluded, tie, rng).0,
        // numpy `argmax` of an all-zero AF: the first (allowed) index.
        (false, ZeroRule::FirstIndex) => excluded.map_or(0, |m| m.iter().position(|&e| !e).unwrap_or(0)),
    };
    Choice { index, beta_sqrt, af_max }
}

/// Index and value of the maximum; exact ties broken by `tie` (reservoir sampling for
/// `Random`, so one pass and no allocation). NaN values never win.
pub fn argmax<R: Rng + ?Sized>(values: impl Iterator<Item = f64>, tie: TieBreak, rng: &mut R) -> (usize, f64) {
    let (mut best_i, mut best_v, mut n_tied) = (0usize, f64::NEG_INFINITY, 0u32);
    for (i, v) in values.enumerate() {
        if v > best_v {
            (best_i, best_v, n_tied) = (i, v, 1);
        } else if v == best_v && tie == TieBreak::Random {
            n_tied += 1;
            if rng.random_range(0..n_tied) == 0 {
                best_i = i;
            }
        }
    }
    (best_i, best_v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn argmax_lowest_index_and_random_ties() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let v = [1.0, 3.0, f64::NAN, 3.0, 2.0, 3.0];
        assert_eq!(argmax(v.iter().copied(), TieBreak::LowestIndex, &mut rng), (1, 3.0));
        let mut counts = [0u32; 6];
        for _ in 0..3000 {
            counts[argmax(v.iter().copied(), TieBreak::Random, &mut rng).0] += 1;
        }
        assert_eq!(counts[0] + counts[2] + counts[4], 0);
        for i in [1, 3, 5] {
            assert!((900..1100).contains(&counts[i]), "{counts:?}");
        }
    }

    /// Section 5.3: excluded candidates never win an argmax (even when they hold the maximum),
    /// and Random draws uniformly from the allowed ones only.
    #[test]
    fn exclusion_mask_is_respected() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let v = [1.0, 3.0, 2.0, 3.0, 0.5, 2.0];
        let excluded = [false, true, false, true, false, false];
        assert_eq!(argmax_allowed(v.iter().copied(), Some(&excluded), TieBreak::LowestIndex, &mut rng), (2, 2.0));
        assert_eq!(argmax_allowed(v.iter().copied(), None, TieBreak::LowestIndex, &mut rng), (1, 3.0));
        let mut counts = [0u32; 6];
        let mut random = Acquisition::Random;
        for _ in 0..4000 {
            let post = PosteriorView::new(&v, &v);
            counts[random.select_in(1, post, 0.0, Some(&excluded), &mut rng).index] += 1;
        }
        assert_eq!(counts[1] + counts[3], 0);
        // 1000 expected per allowed index; sd sqrt(4000 * 1/4 * 3/4) = 27.
        for i in [0, 2, 4, 5] {
            assert!((880..1120).contains(&counts[i]), "{counts:?}");
        }
        // Paper-literal zero rule: the first allowed index.
        let mut literal =
            Acquisition::RandomizedStraddle { zero_rule: ZeroRule::FirstIndex, tie: TieBreak::LowestIndex };
        let (mean, var) = ([5.0, 4.0, -3.0], [0.01, 0.04, 0.01]);
        let c = literal.select_in(1, PosteriorView::new(&mean, &var), 0.0, Some(&[true, false, false]), &mut rng);
        assert_eq!((c.index, c.af_max), (1, 0.0));
    }

    #[test]
    fn randomized_straddle_zero_rules() {
        // Every point is far from theta relative to sigma: the clipped AF is 0 everywhere
        // (that needs beta^1/2 > 20, probability exp(-200)).
        let mean = [5.0, 4.0, -3.0];
        let var = [0.01, 0.04, 0.01];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut algo = Acquisition::RandomizedStraddle { zero_rule: ZeroRule::Straddle, tie: TieBreak::LowestIndex };
        let c = algo.select(1, &mean, &var, 0.0, &mut rng);
        assert_eq!(c.af_max, 0.0);
        // beta^1/2 sigma - |mu|: index 2 has |mu| = 3, the smallest distance, and it dominates for beta^1/2 < 10.
        assert_eq!(c.index, 2);
        let mut literal =
            Acquisition::RandomizedStraddle { zero_rule: ZeroRule::FirstIndex, tie: TieBreak::LowestIndex };
        assert_eq!(literal.select(1, &mean, &var, 0.0, &mut rng).index, 0);
    }

    #[test]
    fn straddle_prefers_uncertain_points_near_the_threshold() {
        let mean = [0.0, 1.0, 0.1];
        let var = [0.01, 1.0, 0.25];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut algo = Acquisition::Straddle { beta_sqrt: 3.0, tie: TieBreak::LowestIndex };
        // values: 0.3 - 0 = 0.3; 3 - 1 = 2; 1.5 - 0.1 = 1.4
        let c = algo.select(1, &mean, &var, 0.0, &mut rng);
        assert_eq!((c.index, c.af_max), (1, 2.0));
        let mut us = Acquisition::Uncertainty { tie: TieBreak::LowestIndex };
        assert_eq!(us.select(1, &mean, &var, 0.0, &mut rng).index, 1);
    }
}
