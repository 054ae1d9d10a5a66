//! The continuous 5-D synthetic block (paper Section 5.2, Table 2):
//! shifted negative sphere, Rosenbrock and Styblinski–Tang on the box `X = [-5, 5]^5`,
//! each with the paper's Gaussian kernel `sf2 * exp(-||x-x'||^2 / L)`, `L = 40`, and
//! observation noise variance `1e-6` (also the GP's noise variance, Table 2).
//!
//! The shifts make every function roughly zero-mean over the box (to suit the zero prior
//! mean) and the thresholds give upper-set volume fractions of about 0.30 / 0.40 / 0.50.
//! There is no finite candidate set: the episode ([`crate::ContinuousEpisode`]) maximises
//! the AF over a random pool and measures the metrics on a random evaluation set.

use armada_core::{ComponentDef, JobError, Parameters};
use armada_gp::Kernel;
use ndarray::Array2;
use rand::Rng;

/// Input dimension of the block.
pub const DIM: usize = 5;
/// Lower bound of every coordinate of the box.
pub const BOX_LO: f64 = -5.0;
/// Upper bound of every coordinate of the box.
pub const BOX_HI: f64 = 5.0;
/// The paper's kernel length parameter `L` (divides `||x-x'||^2` directly; `ell = sqrt(20)`).
pub const KERNEL_L: f64 = 40.0;
/// Observation noise variance, equal to the GP's (Table 2).
pub const NOISE_VAR: f64 = 1e-6;
/// The nominal `|X|` of the continuous box in LSE's `beta_t` (paper Section 5.2).
pub const NOMINAL_CARD_X: f64 = 1e15;

/// Shifted negative sphere: `41.65518 - sum_d x_d^2` (paper Section 5.2). Max 41.65518 at 0.
pub fn sphere(x: &[f64]) -> f64 {
    41.65518 - x.iter().map(|v| v * v).sum::<f64>()
}

/// Shifted negative Rosenbrock: `53458.91 - sum_{d=1..4} [100 (x_{d+1} - x_d^2)^2 + (1 - x_d)^2]`
/// (paper Section 5.2). Max 53458.91 at `(1, ..., 1)`.
pub fn rosenbrock(x: &[f64]) -> f64 {
    let s: f64 = x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum();
    53458.91 - s
}

/// Shifted negative Styblinski–Tang: `-20.8875 - (1/2) sum_d (x_d^4 - 16 x_d^2 + 5 x_d)` (Section 5.2).
pub fn styblinski_tang(x: &[f64]) -> f64 {
    -20.8875 - 0.5 * x.iter().map(|&v| v.powi(4) - 16.0 * v * v + 5.0 * v).sum::<f64>()
}

/// A noise-free black box on the box, at one point.
///
/// A `&[f64]` rather than an ndarray view on purpose: it is an inner-loop primitive, called
/// once per point of the evaluation set `X~` (100,000 by default) on a row of its contiguous
/// buffer, and once per Nelder–Mead trial point; a slice needs no layout check per call.
pub type BlackBox = fn(&[f64]) -> f64;

/// A continuous level-set problem on the box `[lo, hi]^dim` (paper Section 5.2): the noise-free
/// black box `f`, the threshold `theta`, and the fixed GP model (kernel and noise variance,
/// which is also the variance of the observation noise).
#[derive(Clone, Debug)]
pub struct ContinuousProblem {
    pub name: &'static str,
    pub dim: usize,
    pub lo: f64,
    pub hi: f64,
    pub f: BlackBox,
    pub theta: f64,
    pub kernel: Kernel,
    pub noise_var: f64,
}

impl ContinuousProblem {
    /// The benchmark registered under `name`, if it is one of this block's.
    pub fn by_name(name: &str) -> Option<Self> {
        // (function, sigma_f^2, theta) of Table 2.
        let (name, f, sf2, theta): (&'static str, BlackBox, f64, f64) = match name {
            "sphere-5d" => ("sphere-5d", sphere, 900.0, 9.6),
            "rosenbrock-5d" => ("rosenbrock-5d", rosenbrock, 30000.0 * 30000.0, 14800.0),
            "styblinski-tang-5d" => ("styblinski-tang-5d", styblinski_tang, 75.0 * 75.0, 12.3),
            _ => return None,
        };
        Some(ContinuousProblem {
            name,
            dim: DIM,
            lo: BOX_LO,
            hi: BOX_HI,
            f,
            theta,
            kernel: Kernel::squared_exponential_paper_l(sf2, KERNEL_L, DIM),
            noise_var: NOISE_VAR,
        })
    }

    /// Whether `x` lies in the box.
    pub fn contains(&self, x: &[f64]) -> bool {
        x.len() == self.dim && x.iter().all(|&v| (self.lo..=self.hi).contains(&v))
    }
}

armada_core::params! {
    /// How a continuous run optimises the AF and measures the metrics: the parameters the
    /// three continuous benchmarks share. Ranges keep one job's memory bounded:
    /// the metric cache holds `8 * eval_points * (T + 1)` bytes (400 MB for the defaults at
    /// T = 500).
    #[derive(Copy, Eq)]
    pub struct ContinuousConfig {
        /// uniform candidate pool P, fixed per run and common to all algorithms; x_t = argmax of the AF over P
        pool_size: usize in [1, 200_000] = 10_000,
        /// size of the uniform evaluation set X~ on which loss and F-score are computed (the paper's: 100,000)
        eval_points: usize in [1, 1_000_000] = 100_000,
        /// compute the metrics at multiples of this step and at the horizon, NaN elsewhere
        metrics_every: u32 in [1, 1_000_000] = 1,
        /// optional refinement: polish the k best pool points by a box-projected Nelder-Mead; 0 = off
        polish_top_k: usize in [0, 1000] = 0,
        /// AF evaluations per polished point (each O(t^2))
        polish_evals: usize in [1, 100_000] = 60,
    }
}

impl ContinuousConfig {
    /// What the ranges cannot say: at most every pool point is polished.
    pub fn check(&self) -> Result<(), JobError> {
        if self.polish_top_k > self.pool_size {
            return Err(JobError::Invalid(format!(
                "polish_top_k = {} exceeds pool_size = {}",
                self.polish_top_k, self.pool_size
            )));
        }
        Ok(())
    }
}

/// The registry entries of this block.
pub const CONTINUOUS_5D: [ComponentDef; 3] = [
    ComponentDef {
        name: "sphere-5d",
        doc: "shifted negative sphere 41.65518 - |x|^2 on [-5,5]^5; sf2 = 900, L = 40, noise 1e-6, theta = 9.6",
        params: ContinuousConfig::DEFS,
    },
    ComponentDef {
        name: "rosenbrock-5d",
        doc: "shifted negative Rosenbrock on [-5,5]^5; sf2 = 30000^2, L = 40, noise 1e-6, theta = 14800",
        params: ContinuousConfig::DEFS,
    },
    ComponentDef {
        name: "styblinski-tang-5d",
        doc: "shifted negative Styblinski-Tang on [-5,5]^5; sf2 = 75^2, L = 40, noise 1e-6, theta = 12.3",
        params: ContinuousConfig::DEFS,
    },
];

/// `n` iid uniform points of `[lo, hi]^dim`, one per row, drawn row by row.
pub fn uniform_points<R: Rng + ?Sized>(n: usize, dim: usize, lo: f64, hi: f64, rng: &mut R) -> Array2<f64> {
    let data = (0..n * dim).map(|_| uniform(lo, hi, rng)).collect();
    Array2::from_shape_vec((n, dim), data).expect("n points of dim coordinates")
}

/// A uniform draw of `[lo, hi)`.
pub fn uniform<R: Rng + ?Sized>(lo: f64, hi: f64, rng: &mut R) -> f64 {
    lo + (hi - lo) * rng.random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn problems() -> Vec<ContinuousProblem> {
        CONTINUOUS_5D.iter().map(|d| ContinuousProblem::by_name(d.name).expect("registered")).collect()
    }

    /// Reference values of an independent Monte-Carlo over 1e6 uniform points: upper-set
    /// fractions 0.3016 / 0.4014 / 0.5011 (+-0.003) and the means 0.012 / 153 / 0.031. The means
    /// are checked within 4 standard errors of this sample (SE = sd / sqrt(n)); the reference
    /// standard deviations 16.7 / 36,717 / 71.7 within 2 %.
    #[test]
    fn monte_carlo_fractions_means_and_spreads_match_the_spec() {
        let expected = [(0.3016, 0.012, 16.7), (0.4014, 153.0, 36_717.0), (0.5011, 0.031, 71.7)];
        let n = 1_000_000;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        let mut x = [0.0; DIM];
        for (p, &(frac, mean, sd)) in problems().iter().zip(&expected) {
            let (mut n_up, mut s, mut s2) = (0usize, 0.0, 0.0);
            for _ in 0..n {
                x.iter_mut().for_each(|v| *v = rng.random_range(BOX_LO..BOX_HI));
                let fx = (p.f)(&x);
                n_up += usize::from(fx >= p.theta);
                s += fx;
                s2 += fx * fx;
            }
            let m = s / n as f64;
            let sample_sd = (s2 / n as f64 - m * m).sqrt();
            let se = sample_sd / (n as f64).sqrt();
            let fr = n_up as f64 / n as f64;
            assert!((fr - frac).abs() < 0.003, "{}: fraction {fr}", p.name);
            assert!((m - mean).abs() < 4.0 * se, "{}: mean {m} vs {mean}, se {se}", p.name);
            assert!((sample_sd / sd - 1.0).abs() < 0.02, "{}: sd {sample_sd}", p.name);
        }
    }

    /// The maxima at the stated points and the ranges over the box.
    #[test]
    fn maxima_and_ranges() {
        // Sphere: max at 0; min at a corner: 41.65518 - 5 * 25.
        assert_eq!(sphere(&[0.0; DIM]), 41.65518);
        assert!((sphere(&[5.0; DIM]) - (41.65518 - 125.0)).abs() < 1e-12);
        // Rosenbrock: every bracket vanishes at (1, ..., 1). At (-5, ..., -5) every term is at
        // its largest over the box: 100 (-5 - 25)^2 + 6^2 = 90036, so the minimum is
        // 53458.91 - 4 * 90036 = -306685.09 (about -3.07e5).
        assert_eq!(rosenbrock(&[1.0; DIM]), 53458.91);
        assert!((rosenbrock(&[-5.0; DIM]) - (53458.91 - 4.0 * 90036.0)).abs() < 1e-9);
        // Styblinski-Tang: g(v) = v^4 - 16 v^2 + 5 v is smallest at g'(v) = 4v^3 - 32v + 5 = 0,
        // v = -2.903534 (Newton below), and largest on [-5, 5] at v = 5: g = 250, so the range
        // is [-20.8875 - 625, -20.8875 - 2.5 g(v*)] = [-645.8875, 174.94].
        let mut v: f64 = -3.0;
        for _ in 0..50 {
            v -= (4.0 * v.powi(3) - 32.0 * v + 5.0) / (12.0 * v * v - 32.0);
        }
        assert!((v + 2.903534).abs() < 1e-6, "{v}");
        let st_max = styblinski_tang(&[v; DIM]);
        assert!((st_max - 174.94).abs() < 0.01, "{st_max}");
        assert!((styblinski_tang(&[5.0; DIM]) + 645.8875).abs() < 1e-9);
        // No uniform sample exceeds the maxima or falls below the minima.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut x = [0.0; DIM];
        for _ in 0..100_000 {
            x.iter_mut().for_each(|c| *c = rng.random_range(BOX_LO..BOX_HI));
            assert!((41.65518 - 125.0..=41.65518).contains(&sphere(&x)));
            assert!((53458.91 - 4.0 * 90036.0..=53458.91).contains(&rosenbrock(&x)));
            assert!((-645.8875..=st_max).contains(&styblinski_tang(&x)));
        }
    }

    /// Table 2: sigma_f^2, L = 40 (ell = sqrt(20)), noise 1e-6 and the thresholds.
    #[test]
    fn models_and_thresholds() {
        let p = problems();
        let sf2: Vec<f64> = p.iter().map(|p| p.kernel.variance).collect();
        assert_eq!(sf2, [900.0, 9e8, 5625.0]);
        assert_eq!(p.iter().map(|p| p.theta).collect::<Vec<_>>(), [9.6, 14800.0, 12.3]);
        for p in &p {
            assert_eq!(p.noise_var, 1e-6);
            assert_eq!((p.dim, p.lo, p.hi), (5, -5.0, 5.0));
            // k(x, x') = sf2 exp(-|x - x'|^2 / 40): at squared distance 40 the kernel is sf2 / e.
            let k = p.kernel.eval(&[0.0; DIM], &[40f64.sqrt(), 0.0, 0.0, 0.0, 0.0]);
            assert!((k / p.kernel.variance - (-1f64).exp()).abs() < 1e-14);
        }
        assert!(ContinuousProblem::by_name("sphere").is_none());
    }
}
