//! The max-value-loss variants of the randomized straddle (the paper's Appendix A,
//! Algorithms 2 and 3): a larger `beta_t`, and a returned classification chosen among
//! the past ones by a Monte-Carlo estimate of the expected max-value loss.
//!
//! Not used in any of the paper's experiments; offered as the algorithm `rand-straddle-max`
//! (Algorithm 2 on the finite benchmarks, Algorithm 3 on the continuous block).

use armada_math as math;
use rand::Rng;

/// The `beta_t` of a max-value variant: Algorithm 2's `xi_t + 2 ln |X|` on a finite set, or
/// Algorithm 3's `xi_t + 2 d ln tau_t` on a box of edge `width` (`xi_t ~ chi2_2`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MaxValueBeta {
    Finite {
        card_x: f64,
    },
    /// `a`, `b`: the constants of Assumption A.1 (tail of the sup of the partial derivatives).
    Infinite {
        dim: usize,
        width: f64,
        a: f64,
        b: f64,
    },
}

impl MaxValueBeta {
    /// `beta_t^{1/2}` at iteration `t`, one chi2_2 draw from `rng`.
    pub fn sample_sqrt<R: Rng + ?Sized>(&self, t: u32, rng: &mut R) -> f64 {
        match *self {
            MaxValueBeta::Finite { card_x } => finite_beta_sqrt(card_x, rng),
            MaxValueBeta::Infinite { dim, width, a, b } => infinite_beta_sqrt(tau(t, dim, width, a, b), dim, rng),
        }
    }
}

/// Algorithm 2 (finite X): `beta_t^{1/2} = sqrt(xi_t + 2 ln |X|)`, `xi_t ~ chi2_2`.
pub fn finite_beta_sqrt<R: Rng + ?Sized>(card_x: f64, rng: &mut R) -> f64 {
    let xi = super::chi2_2_sqrt(rng).powi(2);
    (xi + 2.0 * math::ln(card_x)).sqrt()
}

/// The max-value loss `r~ = max_x l(x)` of the classification `upper[x]` (`x in H`)
/// against `f`: the largest `|f(x) - theta|` over misclassified points (0 if none).
pub fn max_value_loss(upper: &[bool], f: &[f64], theta: f64) -> f64 {
    upper.iter().zip(f).filter(|(&h, &fx)| h != (fx >= theta)).map(|(_, &fx)| (fx - theta).abs()).fold(0.0, f64::max)
}

/// `T^ = argmin_i (1/M) sum_j r~_i(f^(j))` (eq. A.2) over the stored classifications
/// `history[i]`, with `samples[j]` joint posterior sample paths on X. Ties go to the latest
/// `i` (the paper leaves ties open). Returns the index into `history` and the estimated
/// expected loss.
pub fn choose_returned(history: &[Vec<bool>], samples: &[Vec<f64>], theta: f64) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for (i, upper) in history.iter().enumerate() {
        let expected = samples.iter().map(|f| max_value_loss(upper, f, theta)).sum::<f64>() / samples.len() as f64;
        if expected <= best.1 {
            best = (i, expected);
        }
    }
    best
}

/// Algorithm 3 (infinite X in `[0, r]^d`): the discretisation size
/// `tau_t = ceil(b d r t^2 (sqrt(ln(a d)) + sqrt(pi)/2))` for the constants `a, b` of
/// Assumption A.1.
pub fn tau(t: u32, d: usize, r: f64, a: f64, b: f64) -> u64 {
    let d_f = d as f64;
    let t = t as f64;
    (b * d_f * r * t * t * (math::ln(a * d_f).max(0.0).sqrt() + std::f64::consts::PI.sqrt() / 2.0)).ceil() as u64
}

/// Algorithm 3: `beta_t^{1/2} = sqrt(2 d ln(tau_t) + xi_t)`, `xi_t ~ chi2_2` (`|X_t| = tau_t^d`).
pub fn infinite_beta_sqrt<R: Rng + ?Sized>(tau_t: u64, d: usize, rng: &mut R) -> f64 {
    let xi = super::chi2_2_sqrt(rng).powi(2);
    (2.0 * d as f64 * math::ln(tau_t as f64) + xi).sqrt()
}

/// `[x]_t`: the point of the regular grid with `tau` points per axis on `[0, r]` (cell centres
/// `(k + 1/2) r / tau`, so that `||x - [x]_t||_1 <= d r / tau`) nearest to `x` in L1. Per
/// axis the nearest centre is independent of the other axes; an exact tie between two
/// centres takes the smaller coordinate, which is the lexicographic rule of Appendix A.2.1.
pub fn nearest_grid_point(x: &[f64], r: f64, tau: u64) -> Vec<f64> {
    let h = r / tau as f64;
    x.iter()
        .map(|&xi| {
            // Centre index k minimising |xi - (k + 1/2) h|; ties (xi on a cell boundary) round down.
            let k = ((xi / h - 0.5).ceil() - 1.0).max(0.0).min(tau as f64 - 1.0);
            let lower = (k + 0.5) * h;
            let upper = ((k + 1.0).min(tau as f64 - 1.0) + 0.5) * h;
            if (xi - upper).abs() < (xi - lower).abs() {
                upper
            } else {
                lower
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn finite_beta_adds_two_log_card() {
        let mut a = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let mut b = a.clone();
        let xi = super::super::chi2_2_sqrt(&mut b).powi(2);
        let got = finite_beta_sqrt(2500.0, &mut a);
        assert!((got * got - (xi + 2.0 * 2500f64.ln())).abs() < 1e-12);
        // E[beta] = 2 + 2 ln|X|.
        let n = 200_000;
        let mean = (0..n).map(|_| finite_beta_sqrt(2500.0, &mut a).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - (2.0 + 2.0 * 2500f64.ln())).abs() < 0.02, "{mean}");
    }

    #[test]
    fn max_value_loss_is_the_worst_misclassification() {
        let f = [2.0, -1.0, 0.4, 0.6];
        // theta 0.5: x0, x3 upper. Estimate {x1, x3}: x0 missed (1.5), x1 false (1.5 -> tie), x2 right.
        assert_eq!(max_value_loss(&[false, true, false, true], &f, 0.5), 1.5);
        assert_eq!(max_value_loss(&[true, false, false, true], &f, 0.5), 0.0);
        assert!((max_value_loss(&[true, false, true, true], &f, 0.5) - 0.1).abs() < 1e-15);
    }

    #[test]
    fn returned_classification_minimises_the_monte_carlo_loss_latest_on_ties() {
        let samples = vec![vec![1.0, -1.0], vec![0.5, -0.2], vec![2.0, 0.1]];
        let history = vec![vec![false, false], vec![true, false], vec![true, true], vec![true, false]];
        let losses: Vec<f64> =
            history.iter().map(|h| samples.iter().map(|f| max_value_loss(h, f, 0.0)).sum::<f64>() / 3.0).collect();
        // history[1] and history[3] are identical and best (only x1 of sample 3 is missed: 0.1/3).
        assert!((losses[1] - 0.1 / 3.0).abs() < 1e-15 && losses[1] == losses[3]);
        assert!(losses[0] > losses[1] && losses[2] > losses[1]);
        assert_eq!(choose_returned(&history, &samples, 0.0), (3, losses[3]));
    }

    #[test]
    fn tau_and_the_discretisation_bound() {
        // b d r t^2 (sqrt(ln(a d)) + sqrt(pi)/2) with a = e (so ln(a d) = 1 + ln 2), b = 1, d = 2, r = 1, t = 3.
        let want = (2.0 * 9.0 * ((1.0 + 2f64.ln()).sqrt() + std::f64::consts::PI.sqrt() / 2.0)).ceil() as u64;
        assert_eq!(tau(3, 2, 1.0, std::f64::consts::E, 1.0), want);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for tau in [1u64, 2, 7, 40] {
            for _ in 0..2000 {
                let x: Vec<f64> = (0..3).map(|_| rng.random_range(0.0..=2.0)).collect();
                let g = nearest_grid_point(&x, 2.0, tau);
                let l1: f64 = x.iter().zip(&g).map(|(a, b)| (a - b).abs()).sum();
                assert!(l1 <= 3.0 * 2.0 / tau as f64 + 1e-12, "tau {tau}: {x:?} -> {g:?}");
                // No other centre is closer on any axis.
                for (xi, gi) in x.iter().zip(&g) {
                    let k = (gi / (2.0 / tau as f64) - 0.5).round();
                    for other in [k - 1.0, k + 1.0] {
                        if (0.0..tau as f64).contains(&other) {
                            let c = (other + 0.5) * 2.0 / tau as f64;
                            assert!((xi - c).abs() >= (xi - gi).abs() - 1e-12);
                        }
                    }
                }
            }
        }
        // A point exactly between two centres takes the smaller one (lexicographic rule).
        assert_eq!(nearest_grid_point(&[0.5], 1.0, 2), vec![0.25]);
    }
}
