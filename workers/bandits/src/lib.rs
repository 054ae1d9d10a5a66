//! armada-bandits: "Online Continuous Hyperparameter Optimization for Generalized Linear Contextual
//! Bandits" (Kang, Hsieh, Lee; TMLR, arXiv:2302.09440), both layers.
//!
//! The bottom layer is the seven GLM contextual bandits of paper Section 5 ([`LinUcb`], [`LinTs`], [`UcbGlm`],
//! [`GlmTsl`], [`LaplaceTs`], [`Gloc`], [`SgdTs`]) behind one trait, [`BottomBandit`], with the synthetic
//! linear / logistic environments of paper Section 5 ([`env::SyntheticEnv`]) and the pseudo-regret of Eq. (1).
//! The top layer is the [`tuner::Tuner`] trait: CDT ([`cdt::Cdt`], Zooming TS with restarts from
//! [`zooming`], paper Algorithms 1 and 2) and the baselines of paper Section 5 (Theory, OP, TL, Syndicated).
//! Tuners only need [`BottomBandit::hyperparameters`] (the box) and the fact that `choose`/`observe` take the
//! hyperparameters of the current round, so they can change every round; [`episode::run_tuned`] runs
//! environment x bottom algorithm x tuner.
//!
//! Everything is plain synchronous Rust: per round O(K d + d^2) for the linear-algebra algorithms, and
//! warm-started Newton for the GLM fits, without allocation in the round loop.
//!
//! ```
//! use armada_bandits::{env::{SyntheticConfig, SyntheticEnv}, episode, BottomKind, HyperparameterSchedule};
//! use armada_core::StreamRng;
//! use rand::SeedableRng;
//! let config = SyntheticConfig { horizon: 200, ..SyntheticConfig::paper_linear() };
//! let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(1));
//! let mut bandit = BottomKind::LinUcb.build(config.dim, config.horizon);
//! let outcome = episode::run(bandit.as_mut(), &mut env, &HyperparameterSchedule::Fixed(vec![1.0]),
//!     &mut StreamRng::seed_from_u64(2), &mut StreamRng::seed_from_u64(3));
//! assert_eq!(outcome.cumulative_regret.len(), 200);
//!
//! // The same bandit tuned online by CDT (paper constants).
//! use armada_bandits::{cdt::{Cdt, CdtConfig}, episode::run_tuned};
//! let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(1));
//! let mut bandit = BottomKind::LinUcb.build(config.dim, config.horizon);
//! let tuned = run_tuned(bandit.as_mut(), &mut env, &mut Cdt::new(CdtConfig::paper()),
//!     &mut StreamRng::seed_from_u64(2), &mut StreamRng::seed_from_u64(4), &mut StreamRng::seed_from_u64(3));
//! assert_eq!(tuned.plan.random_phase, 14); // T1 = floor(200^(1/2))
//! assert!(tuned.hyperparameters_at(14).unwrap()[0] >= 0.1);
//! ```

pub mod cdt;
pub mod env;
pub mod episode;
pub mod family;
pub mod glm;
pub mod gloc;
pub mod hyper;
pub mod laplace;
pub mod linalg;
pub mod linear;
pub mod lipschitz_check;
pub mod logistic;
pub mod methods;
pub mod movielens;
pub mod sgd_ts;
pub mod switching;
#[cfg(test)]
mod testing;
pub mod tuner;
pub mod yahoo;
pub mod zooming;

pub use cdt::{Cdt, CdtConfig};
pub use episode::HyperparameterSchedule;
pub use family::{BanditsFamily, JobEnvironment};
pub use glm::{GlmTsl, UcbGlm};
pub use gloc::Gloc;
pub use hyper::{Hyperparameter, TheoryConstants};
pub use laplace::LaplaceTs;
pub use linear::{LinTs, LinUcb};
pub use lipschitz_check::LipschitzCheckFamily;
pub use methods::TunerKind;
pub use sgd_ts::SgdTs;
pub use switching::LipschitzFamily;
pub use tuner::{CandidateSet, Tuner};
pub use zooming::{ZoomingConfig, ZoomingPreset, ZoomingTs};

use std::borrow::Cow;

use ndarray::{ArrayView1, ArrayView2};
use rand::{Rng, RngCore};

/// The K context vectors of one round as one contiguous row-major `K x d` buffer, which the
/// bandits read arm by arm as slices ([`Contexts::arm`]) in their `O(K d)` scoring loops.
///
/// This is the boundary between the ndarray interface ([`BottomBandit::choose`] takes an
/// `ArrayView2`) and the inner loops: built once per round, it borrows a standard-layout
/// view as it is (what every environment hands out, no copy) and lays any other layout out
/// anew once, an O(K d) copy.
#[derive(Clone, Debug)]
pub(crate) struct Contexts<'a> {
    features: Cow<'a, [f64]>,
    dim: usize,
}

impl<'a> Contexts<'a> {
    /// The rows of `arms`, borrowed when `arms` is in standard layout, else copied once.
    ///
    /// # Panics
    /// If there are no arms or no features.
    pub(crate) fn new(arms: ArrayView2<'a, f64>) -> Self {
        let dim = arms.ncols();
        assert!(dim > 0 && arms.nrows() > 0, "a K x d feature matrix with K, d > 0");
        let features = match arms.to_slice() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(arms.iter().copied().collect()),
        };
        Contexts { features, dim }
    }
    /// Number of arms K.
    pub(crate) fn n_arms(&self) -> usize {
        self.features.len() / self.dim
    }
    /// All K feature vectors, row-major.
    pub(crate) fn features(&self) -> &[f64] {
        &self.features
    }
    /// Feature vector `x_{t,a}`.
    #[cfg(test)]
    pub(crate) fn arm(&self, a: usize) -> &[f64] {
        &self.features[a * self.dim..(a + 1) * self.dim]
    }
}

/// A point of `R^d` (an arm's feature vector) as a slice: the view's own memory when it is
/// contiguous, as every row of an environment's contexts is, else a copy (O(d)).
pub(crate) fn point(x: ArrayView1<'_, f64>) -> Cow<'_, [f64]> {
    match x.to_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(x.to_vec()),
    }
}

/// `K x d` row-major features as an `ArrayView2` of the same memory (no copy).
///
/// # Panics
/// If `features.len()` is not a positive multiple of `dim`.
pub fn contexts_view(features: &[f64], dim: usize) -> ArrayView2<'_, f64> {
    assert!(dim > 0 && !features.is_empty() && features.len().is_multiple_of(dim), "K x d row-major features");
    ArrayView2::from_shape((features.len() / dim, dim), features).expect("K x d row-major features")
}

/// One bottom-layer contextual bandit (the algorithms of paper Section 5).
///
/// A round is `choose` then `observe` of the chosen arm's feature and reward. Both take the hyperparameter
/// values of the current round (in the order of [`BottomBandit::hyperparameters`]), so a tuner can change
/// them every round; the statistics kept between rounds do not depend on them except where the algorithm
/// itself makes them (Laplace-TS's and GLOC's updates, SGD-TS's epoch step; paper Algorithm 2, line 7).
/// During the intrinsic warm-up `choose` ignores the hyperparameters and plays a uniformly random arm.
pub trait BottomBandit {
    /// Display name as in the paper ("LinUCB", "GLM-TSL", ...).
    fn name(&self) -> &'static str;
    /// Feature dimension d.
    fn dim(&self) -> usize;
    /// The tuned hyperparameters, in order (`p = len`), with their search intervals.
    fn hyperparameters(&self) -> &'static [Hyperparameter];
    /// The "Theory" values at 0-based round `round` (paper Section 5, "Theoretical setting"); `out.len() == p`.
    fn theory_hyperparameters(&self, round: usize, out: &mut [f64]);
    /// Rounds of uniformly random play the algorithm itself needs before its first fit.
    fn intrinsic_warmup(&self) -> usize;
    /// `Some(tau)` if the algorithm only acts on hyperparameters at epoch boundaries every `tau` rounds
    /// (SGD-TS).
    fn block_len(&self) -> Option<usize> {
        None
    }
    /// Number of `observe` calls so far, i.e. the 0-based index of the next round.
    fn rounds_observed(&self) -> usize;
    /// Picks an arm, a row of `arms` (the round's `K x d` features); ties go to the lowest
    /// index (numpy `argmax`'s rule). A standard-layout `arms` is read in place; any other layout costs
    /// one O(K d) copy per call.
    fn choose(&mut self, arms: ArrayView2<'_, f64>, hyperparameters: &[f64], rng: &mut dyn RngCore) -> usize;
    /// Feeds back the reward `y` of the arm with feature `x` pulled this round (a row of the
    /// round's features: contiguous, read in place; a non-contiguous `x` is copied, O(d)).
    fn observe(&mut self, x: ArrayView1<'_, f64>, y: f64, hyperparameters: &[f64], rng: &mut dyn RngCore);
}

armada_core::choice! {
    /// The seven bottom bandits of paper Section 5 (the algorithms being tuned; a job's `algorithm`
    /// is the tuner), named as the benchmarks' `bottom` parameter names them.
    pub enum BottomKind {
        /// LinUCB
        LinUcb = "linucb",
        /// LinTS
        LinTs = "lints",
        /// UCB-GLM
        UcbGlm = "ucb-glm",
        /// GLM-TSL
        GlmTsl = "glm-tsl",
        /// Laplace-TS
        LaplaceTs = "laplace-ts",
        /// GLOC
        Gloc = "gloc",
        /// SGD-TS
        SgdTs = "sgd-ts",
    }
}

impl BottomKind {
    pub const ALL: [BottomKind; 7] = [
        BottomKind::LinUcb,
        BottomKind::LinTs,
        BottomKind::UcbGlm,
        BottomKind::GlmTsl,
        BottomKind::LaplaceTs,
        BottomKind::Gloc,
        BottomKind::SgdTs,
    ];

    /// The name tables and the paper use.
    pub fn label(self) -> &'static str {
        match self {
            BottomKind::LinUcb => "LinUCB",
            BottomKind::LinTs => "LinTS",
            BottomKind::UcbGlm => "UCB-GLM",
            BottomKind::GlmTsl => "GLM-TSL",
            BottomKind::LaplaceTs => "Laplace-TS",
            BottomKind::Gloc => "GLOC",
            BottomKind::SgdTs => "SGD-TS",
        }
    }

    /// Whether the paper runs it on the linear reward model (LinUCB, LinTS) rather than the logistic one
    /// (paper Section 5).
    pub fn paper_uses_linear_rewards(self) -> bool {
        matches!(self, BottomKind::LinUcb | BottomKind::LinTs)
    }

    /// Builds the algorithm with the paper's constants for dimension `dim` and horizon `horizon`.
    pub fn build(self, dim: usize, horizon: usize) -> Box<dyn BottomBandit> {
        let theory = TheoryConstants::paper(horizon);
        match self {
            BottomKind::LinUcb => Box::new(LinUcb::new(dim, theory)),
            BottomKind::LinTs => Box::new(LinTs::new(dim, theory)),
            BottomKind::UcbGlm => Box::new(UcbGlm::new(dim, theory)),
            BottomKind::GlmTsl => Box::new(GlmTsl::new(dim, theory)),
            BottomKind::LaplaceTs => Box::new(LaplaceTs::new(dim, theory)),
            BottomKind::Gloc => Box::new(Gloc::new(dim, theory)),
            BottomKind::SgdTs => Box::new(SgdTs::new(dim, theory)),
        }
    }
}

/// A round's scores of the K arms, computed for all arms at once and kept between rounds so
/// that choosing allocates nothing. Each score is bit for bit its one-arm formula, so the arm
/// chosen is [`argmax_by`]'s of that formula arm by arm.
#[derive(Clone, Debug, Default)]
pub(crate) struct ArmScores {
    means: Vec<f64>,
    widths: Vec<f64>,
}

impl ArmScores {
    /// The greedy arm `argmax_a x_a^T theta` (a Thompson sample's), the inner products from
    /// [`linalg::dots`].
    pub(crate) fn greedy(&mut self, arms: &Contexts<'_>, theta: &[f64]) -> usize {
        self.fill_means(arms, theta);
        argmax_by(self.means.len(), |a| self.means[a])
    }

    /// The optimistic arm `argmax_a x_a^T theta + alpha ||x_a||_{V^{-1}}` (LinUCB, UCB-GLM,
    /// GLOC), the widths from [`linalg::RidgeDesign::widths_squared`].
    pub(crate) fn optimistic(
        &mut self,
        arms: &Contexts<'_>,
        theta: &[f64],
        design: &linalg::RidgeDesign,
        alpha: f64,
    ) -> usize {
        design.widths_squared(arms.features(), &mut self.widths);
        self.fill_means(arms, theta);
        argmax_by(self.means.len(), |a| self.means[a] + alpha * self.widths[a].sqrt())
    }

    /// Every arm's `x_a^T theta`, into `means`.
    fn fill_means(&mut self, arms: &Contexts<'_>, theta: &[f64]) {
        self.means.resize(arms.n_arms(), 0.0);
        linalg::dots(arms.features(), theta, &mut self.means);
    }
}

/// Index of the largest score, ties to the lowest index (numpy `argmax`). NaN scores never win.
pub(crate) fn argmax_by(n: usize, mut score: impl FnMut(usize) -> f64) -> usize {
    let mut best = 0;
    let mut best_score = f64::NEG_INFINITY;
    for a in 0..n {
        let s = score(a);
        if s > best_score {
            best = a;
            best_score = s;
        }
    }
    best
}

/// A uniformly random arm (warm-up rounds).
pub(crate) fn random_arm(n_arms: usize, rng: &mut dyn RngCore) -> usize {
    rng.random_range(0..n_arms)
}

/// Fills `out` with i.i.d. standard normals.
pub(crate) fn fill_standard_normal(out: &mut [f64], rng: &mut dyn RngCore) {
    use armada_math::dist::{Distribution, StandardNormal};
    for o in out {
        *o = StandardNormal.sample(rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ShapeBuilder;

    #[test]
    fn contexts_borrow_a_row_major_view_and_lay_out_any_other_once() {
        let features = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let view = contexts_view(&features, 3);
        assert_eq!(view, ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(view.as_ptr(), features.as_ptr());
        let c = Contexts::new(view);
        assert!(matches!(c.features, Cow::Borrowed(_)));
        assert_eq!((c.n_arms(), c.arm(1)), (2, &[4.0, 5.0, 6.0][..]));
        assert_eq!(c.arm(0).as_ptr(), features.as_ptr());
        assert_eq!(point(view.row(1)).as_ptr(), features[3..].as_ptr());
        // The same arms stored column-major: copied once, the same rows.
        let t = ndarray::array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]];
        let ct = Contexts::new(t.t());
        assert!(matches!(ct.features, Cow::Owned(_)));
        assert_eq!((ct.n_arms(), ct.arm(0), ct.arm(1)), (2, &[1.0, 2.0, 3.0][..], &[4.0, 5.0, 6.0][..]));
        assert_eq!(*point(t.row(1)), [2.0, 5.0]);
        assert_eq!(*point(t.column(1)), [4.0, 5.0, 6.0]);
    }

    /// The scores of all arms at once choose the arm that their one-arm formulas choose arm by
    /// arm.
    #[test]
    fn arm_scores_choose_the_arm_of_the_one_arm_formulas() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (k, d) = (120, 25);
        let mut design = linalg::RidgeDesign::new(d, 1.0);
        let mut scores = ArmScores::default();
        for round in 0..40 {
            let features: Vec<f64> = (0..k * d).map(|_| rng.random::<f64>() * 0.4 - 0.2).collect();
            let theta: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            let arms = Contexts::new(contexts_view(&features, d));
            let alpha = round as f64 * 0.1;
            let optimistic =
                argmax_by(k, |a| linalg::dot(arms.arm(a), &theta) + alpha * design.width_squared(arms.arm(a)).sqrt());
            assert_eq!(scores.optimistic(&arms, &theta, &design, alpha), optimistic, "round {round}");
            assert_eq!(scores.greedy(&arms, &theta), argmax_by(k, |a| linalg::dot(arms.arm(a), &theta)));
            design.observe(arms.features().chunks_exact(d).nth(round % k).unwrap(), rng.random());
        }
    }

    /// Every bottom bandit chooses the same arms, and learns the same, from the column-major
    /// copy of the rounds' features as from the row-major original.
    #[test]
    fn bandits_give_the_same_choices_for_any_layout_of_the_features() {
        use rand::SeedableRng;
        let (k, d) = (6, 3);
        for kind in BottomKind::ALL {
            let (mut a, mut b) = (kind.build(d, 200), kind.build(d, 200));
            let mut rng_a = rand_chacha::ChaCha8Rng::seed_from_u64(1);
            let mut rng_b = rand_chacha::ChaCha8Rng::seed_from_u64(1);
            let hp: Vec<f64> = a.hyperparameters().iter().map(|h| 0.5 * (h.low + h.high)).collect();
            for t in 0..60 {
                let features: Vec<f64> = (0..k * d).map(|i| ((i * 7 + t * 13) as f64 * 0.37).sin()).collect();
                let rows = contexts_view(&features, d);
                let mut cols = ndarray::Array2::zeros((k, d).f());
                cols.assign(&rows);
                let arm_a = a.choose(rows, &hp, &mut rng_a);
                let arm_b = b.choose(cols.view(), &hp, &mut rng_b);
                assert_eq!(arm_a, arm_b, "{} round {t}", kind.label());
                let y = (rows[(arm_a, 0)] > 0.0) as u8 as f64;
                a.observe(rows.row(arm_a), y, &hp, &mut rng_a);
                b.observe(cols.row(arm_b), y, &hp, &mut rng_b);
            }
        }
    }

    #[test]
    fn argmax_breaks_ties_to_the_lowest_index_and_ignores_nan() {
        let s = [0.5, 2.0, 2.0, f64::NAN, 1.0];
        assert_eq!(argmax_by(s.len(), |a| s[a]), 1);
        let c = [1.0, 2.0, 3.0, 4.0];
        let ctx = Contexts::new(contexts_view(&c, 2));
        assert_eq!(ctx.n_arms(), 2);
        assert_eq!(ctx.arm(1), &[3.0, 4.0]);
    }

    #[test]
    fn every_algorithm_declares_paper_box_hyperparameters_and_finite_theory_values() {
        let expected_p = [1, 1, 1, 1, 1, 2, 2];
        for (alg, p) in BottomKind::ALL.into_iter().zip(expected_p) {
            let b = alg.build(25, 14_000);
            assert_eq!(b.name(), alg.label());
            assert_eq!(b.hyperparameters().len(), p, "{}", alg.label());
            for h in b.hyperparameters() {
                assert_eq!((h.low, h.high), (0.1, 5.0));
            }
            let mut out = vec![f64::NAN; p];
            for round in [0, 1, 500, 13_999] {
                b.theory_hyperparameters(round, &mut out);
                assert!(out.iter().all(|v| v.is_finite() && *v > 0.0), "{} {:?}", alg.label(), out);
            }
        }
    }
}
