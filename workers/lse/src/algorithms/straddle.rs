//! The straddle family of acquisition functions (paper Section 3.2).

use armada_math as math;
use rand::Rng;

/// `STR(x) = beta^{1/2} sigma(x) - |mu(x) - theta|`
/// `= min(ucb(x) - theta, theta - lcb(x))` (paper Section 3.2). Variances are clamped at 0.
pub fn straddle_af<'a>(mean: &'a [f64], var: &'a [f64], theta: f64, beta_sqrt: f64) -> impl Iterator<Item = f64> + 'a {
    mean.iter().zip(var).map(move |(&mu, &v)| beta_sqrt * v.max(0.0).sqrt() - (mu - theta).abs())
}

/// The randomized straddle's AF, eq. (3.2): `a(x) = max(beta_t^{1/2} sigma(x) - |mu(x) - theta|, 0)`.
pub fn randomized_straddle_af<'a>(
    mean: &'a [f64],
    var: &'a [f64],
    theta: f64,
    beta_sqrt: f64,
) -> impl Iterator<Item = f64> + 'a {
    straddle_af(mean, var, theta, beta_sqrt).map(|a| a.max(0.0))
}

/// `beta_t^{1/2}` with `beta_t ~ chi2_2`: `beta = -2 ln U`, `U ~ Uniform(0, 1]`, so
/// `beta^{1/2}` is Rayleigh(1) with mean `sqrt(pi/2)` (Definition 3.2; the AF
/// multiplies sigma by the square root of the chi-squared draw).
pub fn chi2_2_sqrt<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u = 1.0 - rng.random::<f64>(); // in (0, 1]
    (-2.0 * math::ln(u)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Moments and quantiles of the chi2_2 draws.
    #[test]
    fn chi2_2_sampler_matches_its_distribution() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2024);
        let n = 1_000_000;
        let mut s: Vec<f64> = (0..n).map(|_| chi2_2_sqrt(&mut rng)).collect();
        let mean_beta = s.iter().map(|b| b * b).sum::<f64>() / n as f64;
        let mean_sqrt = s.iter().sum::<f64>() / n as f64;
        assert!((mean_beta - 2.0).abs() < 0.01, "{mean_beta}");
        assert!((mean_sqrt - (std::f64::consts::PI / 2.0).sqrt()).abs() < 0.003, "{mean_sqrt}");
        s.sort_by(f64::total_cmp);
        let (q025, q975) = (s[n / 40], s[n - n / 40]);
        // Closed forms: sqrt(-2 ln 0.975) = 0.2250, sqrt(-2 ln 0.025) = 2.7162.
        assert!((q025 - (-2.0 * 0.975f64.ln()).sqrt()).abs() < 0.003, "{q025}");
        assert!((q975 - (-2.0 * 0.025f64.ln()).sqrt()).abs() < 0.01, "{q975}");
    }

    /// The min(ucb, lcb) identity of Section 3.2 and 0 <= a <= beta^1/2 sigma.
    #[test]
    fn straddle_identity_and_clipped_bounds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..10_000 {
            let mu: f64 = rng.random_range(-3.0..3.0);
            let var: f64 = rng.random_range(0.0..4.0);
            let theta: f64 = rng.random_range(-1.0..1.0);
            let b = chi2_2_sqrt(&mut rng);
            let s = var.sqrt();
            let (ucb, lcb) = (mu + b * s, mu - b * s);
            let str_ = straddle_af(&[mu], &[var], theta, b).next().unwrap();
            assert!((str_ - (ucb - theta).min(theta - lcb)).abs() < 1e-12);
            let a = randomized_straddle_af(&[mu], &[var], theta, b).next().unwrap();
            assert!((0.0..=b * s).contains(&a));
        }
    }
}
