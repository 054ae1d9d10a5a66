//! The LSE algorithm of Gotovos et al. (2013) as the randomized-straddle paper runs it
//! (paper Sections 5.1-5.3): only its acquisition function, with the theoretical `beta_t`
//! and, on finite sets, the running intersection of credible intervals.

use armada_math as math;

/// `beta_t^{1/2} = sqrt(2 ln(|X| pi^2 t^2 / (6 delta)))`, with `t` the iteration index from 1.
pub fn lse_beta_sqrt(card_x: f64, t: u32, delta: f64) -> f64 {
    let t = t as f64;
    (2.0 * math::ln(card_x * std::f64::consts::PI.powi(2) * t * t / (6.0 * delta))).sqrt()
}

/// Running credible-interval bounds over the candidate set: `ucbT` only decreases and
/// `lcbT` only increases (`intersection_is_monotone` below).
#[derive(Clone, Debug, PartialEq)]
pub struct RunningIntersection {
    pub ucb: Vec<f64>,
    pub lcb: Vec<f64>,
}

impl RunningIntersection {
    pub fn new(n: usize) -> Self {
        RunningIntersection { ucb: vec![f64::INFINITY; n], lcb: vec![f64::NEG_INFINITY; n] }
    }

    /// Intersect with this iteration's intervals `mu +- beta^{1/2} sigma`.
    pub fn update(&mut self, mean: &[f64], var: &[f64], beta_sqrt: f64) {
        for (((u, l), &mu), &v) in self.ucb.iter_mut().zip(self.lcb.iter_mut()).zip(mean).zip(var) {
            let half = beta_sqrt * v.max(0.0).sqrt();
            *u = u.min(mu + half);
            *l = l.max(mu - half);
        }
    }

    /// The ambiguity `a(x) = min(ucbT(x) - theta, theta - lcbT(x))`.
    pub fn ambiguity(&self, theta: f64) -> impl Iterator<Item = f64> + '_ {
        self.ucb.iter().zip(&self.lcb).map(move |(&u, &l)| (u - theta).min(theta - l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values of the formula, computed independently, to 4 decimals.
    #[test]
    fn beta_table_matches_the_spec() {
        let table = [
            (1000.0, 1, 4.5610),
            (1000.0, 10, 5.4784),
            (1000.0, 100, 6.2628),
            (2500.0, 1, 4.7576),
            (2500.0, 100, 6.4075),
            (2500.0, 300, 6.7417),
            (6586.0, 1, 4.9570),
            (6586.0, 200, 6.7650),
            (1e15, 1, 8.7215),
            (1e15, 500, 10.0460),
        ];
        for (card, t, want) in table {
            let got = lse_beta_sqrt(card, t, 0.05);
            assert!((got - want).abs() < 5e-5, "|X|={card} t={t}: {got} vs {want}");
        }
        // Fig. 1 right panel at t = 100.
        for (card, want) in [(10.0, 5.478), (1e2, 5.884), (1e3, 6.263), (1e4, 6.620), (1e5, 6.959), (1e6, 7.283)] {
            assert!((lse_beta_sqrt(card, 100, 0.05) - want).abs() < 5e-4);
        }
    }

    #[test]
    fn intersection_is_monotone() {
        let mut r = RunningIntersection::new(2);
        r.update(&[0.0, 1.0], &[1.0, 4.0], 2.0);
        assert_eq!((r.ucb.clone(), r.lcb.clone()), (vec![2.0, 5.0], vec![-2.0, -3.0]));
        // A wider interval later does not widen the intersection; a shifted one narrows it.
        r.update(&[0.5, 1.0], &[4.0, 0.25], 2.0);
        assert_eq!((r.ucb.clone(), r.lcb.clone()), (vec![2.0, 2.0], vec![-2.0, 0.0]));
        let a: Vec<f64> = r.ambiguity(0.5).collect();
        assert_eq!(a, vec![1.5, 0.5]);
    }
}
