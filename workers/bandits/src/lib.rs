//! armada-bandits: "Online Continuous Hyperparameter Optimization for Generalized Linear Contextual
//! Bandits" (Kang, Hsieh, Lee; spec `specs/cdt_bandits.md`), both layers.
//!
//! The bottom layer is the seven GLM contextual bandits of spec §2.5 ([`LinUcb`], [`LinTs`], [`UcbGlm`],
//! [`GlmTsl`], [`LaplaceTs`], [`Gloc`], [`SgdTs`]) behind one trait, [`BottomBandit`], with the synthetic
//! linear / logistic environments of spec §3.1 ([`env::SyntheticEnv`]) and the pseudo-regret of §1.1.
//! The top layer is the [`tuner::Tuner`] trait: CDT ([`cdt::Cdt`], Zooming TS with restarts from
//! [`zooming`], spec §2.1, §2.4) and the baselines of spec §2.6 (Theory, OP, TL, Syndicated). Tuners only
//! need [`BottomBandit::hyperparameters`] (the box) and the fact that `choose`/`observe` take the
//! hyperparameters of the current round, so they can change every round; [`episode::run_tuned`] runs
//! environment x bottom algorithm x tuner.
//!
//! Everything is plain synchronous Rust: per round O(K d + d^2) for the linear-algebra algorithms, and
//! warm-started Newton for the GLM fits (spec §7.12, §7.14), without allocation in the round loop.
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
pub use family::BanditsFamily;
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

use ndarray::ArrayView2;
use rand::{Rng, RngCore};

/// The K context vectors of one round, stored row-major (`K x d`), borrowed from the environment:
/// an ndarray matrix view ([`Contexts::view`], [`Contexts::from`] a row-major `ArrayView2`,
/// both without a copy) whose rows the bandits read as slices ([`Contexts::arm`]).
#[derive(Clone, Copy, Debug)]
pub struct Contexts<'a> {
    features: &'a [f64],
    dim: usize,
}

impl<'a> Contexts<'a> {
    /// `features.len()` must be a positive multiple of `dim`.
    pub fn new(features: &'a [f64], dim: usize) -> Self {
        assert!(dim > 0 && !features.is_empty() && features.len() % dim == 0, "K x d row-major features");
        Contexts { features, dim }
    }
    /// Number of arms K.
    pub fn n_arms(&self) -> usize {
        self.features.len() / self.dim
    }
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// Feature vector `x_{t,a}`.
    pub fn arm(&self, a: usize) -> &'a [f64] {
        &self.features[a * self.dim..(a + 1) * self.dim]
    }
    pub fn iter(&self) -> impl Iterator<Item = &'a [f64]> + 'a {
        self.features.chunks_exact(self.dim)
    }
    /// The `K x d` feature matrix, as an ndarray view of the same memory.
    pub fn view(&self) -> ArrayView2<'a, f64> {
        ArrayView2::from_shape((self.n_arms(), self.dim), self.features).expect("K x d row-major features")
    }
}

/// A row-major `K x d` feature matrix, without a copy.
///
/// # Panics
/// If the view is not row-major and contiguous, or is empty.
impl<'a> From<ArrayView2<'a, f64>> for Contexts<'a> {
    fn from(features: ArrayView2<'a, f64>) -> Self {
        let dim = features.ncols();
        Contexts::new(features.to_slice().expect("a row-major, contiguous K x d matrix"), dim)
    }
}

/// One bottom-layer contextual bandit (spec §2.5, §8.1 `trait Bandit`).
///
/// A round is `choose` then `observe` of the chosen arm's feature and reward. Both take the hyperparameter
/// values of the current round (in the order of [`BottomBandit::hyperparameters`]), so a tuner can change
/// them every round; the statistics kept between rounds do not depend on them except where the algorithm
/// itself makes them (Laplace-TS's and GLOC's updates, SGD-TS's epoch step; spec §2.4 line 9).
/// During the intrinsic warm-up `choose` ignores the hyperparameters and plays a uniformly random arm.
pub trait BottomBandit {
    /// Display name as in the paper ("LinUCB", "GLM-TSL", ...).
    fn name(&self) -> &'static str;
    /// Feature dimension d.
    fn dim(&self) -> usize;
    /// The tuned hyperparameters, in order (`p = len`), with their search intervals.
    fn hyperparameters(&self) -> &'static [Hyperparameter];
    /// The "Theory" values at 0-based round `round` (spec §2.5 "Theory values"); `out.len() == p`.
    fn theory_hyperparameters(&self, round: usize, out: &mut [f64]);
    /// Rounds of uniformly random play the algorithm itself needs before its first fit (spec §2.4).
    fn intrinsic_warmup(&self) -> usize;
    /// `Some(tau)` if the algorithm only acts on hyperparameters at epoch boundaries every `tau` rounds
    /// (SGD-TS, spec §2.4 "Block mode").
    fn block_len(&self) -> Option<usize> {
        None
    }
    /// Number of `observe` calls so far, i.e. the 0-based index of the next round.
    fn rounds_observed(&self) -> usize;
    /// Picks an arm; ties go to the lowest index (spec §2.5).
    fn choose(&mut self, arms: Contexts<'_>, hyperparameters: &[f64], rng: &mut dyn RngCore) -> usize;
    /// Feeds back the reward `y` of the arm with feature `x` pulled this round.
    fn observe(&mut self, x: &[f64], y: f64, hyperparameters: &[f64], rng: &mut dyn RngCore);
}

armada_core::choice! {
    /// The seven bottom bandits of spec §2.5 (the algorithms being tuned; a job's `algorithm`
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
    /// (spec §4.1).
    pub fn paper_uses_linear_rewards(self) -> bool {
        matches!(self, BottomKind::LinUcb | BottomKind::LinTs)
    }

    /// Builds the algorithm with the paper's constants (spec §8.4) for dimension `dim` and horizon `horizon`.
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

/// Index of the largest score, ties to the lowest index (numpy `argmax`, spec §2.5). NaN scores never win.
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
    use rand_distr::{Distribution, StandardNormal};
    for o in out {
        *o = StandardNormal.sample(rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_are_an_ndarray_view_of_the_environments_features() {
        let features = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let c = Contexts::new(&features, 3);
        assert_eq!(c.view(), ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(c.view().as_ptr(), features.as_ptr());
        let matrix = ndarray::array![[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]];
        let from = Contexts::from(matrix.view());
        assert_eq!((from.n_arms(), from.dim(), from.arm(2)), (3, 2, &[0.5, 0.5][..]));
        assert_eq!(from.arm(0).as_ptr(), matrix.as_ptr());
    }

    #[test]
    fn argmax_breaks_ties_to_the_lowest_index_and_ignores_nan() {
        let s = [0.5, 2.0, 2.0, f64::NAN, 1.0];
        assert_eq!(argmax_by(s.len(), |a| s[a]), 1);
        let c = [1.0, 2.0, 3.0, 4.0];
        let ctx = Contexts::new(&c, 2);
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
