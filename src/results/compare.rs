//! Comparisons of two variants on one benchmark, paired by seed, with a confidence interval
//! that stays valid however often it is looked at: the statistics of sweeps that add seeds
//! in rounds until their comparisons are resolved.
//!
//! armada's common random numbers give the two variants of a comparison the same benchmark
//! draws seed by seed, so the differences `d_i = a_i - b_i` of their metric are i.i.d. and
//! paired, with far less variance than two independent means. After each round the interval
//! for their mean is the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha,
//! Kennedy and Ramdas ("Time-uniform central limit theory and asymptotic confidence
//! sequences", Annals of Statistics, 2024; arXiv:2103.06476, Theorem 2.2): the conjugate
//! (Robbins normal) mixture boundary of Howard, Ramdas, McAuliffe and Sekhon (Annals of
//! Statistics, 2021) for unit variance, scaled by the sample standard deviation,
//!
//! ```text
//! mean_n ± sd_n * sqrt(2 (n rho² + 1) / (n² rho²) * ln(sqrt(n rho² + 1) / (alpha / 2)))
//! ```
//!
//! whose coverage holds uniformly over n (asymptotically in n): stopping a comparison when
//! its interval excludes zero does not inflate the error as repeated t-intervals would.
//! `rho²` sets the n at which the interval is tightest: the seeds a sweep plans for.
//! With a plug-in standard deviation the guarantee is asymptotic; for Gaussian differences
//! looked at from [`MIN_SEEDS`] seeds on, simulation (the tests) finds the error rate within
//! alpha, while from 3 seeds it is twice alpha, hence the minimum.

/// The fewest seeds a comparison is judged at (see the module's doc); sweep files are
/// checked against it where it is declared.
pub use crate::sweep::resolve::MIN_SEEDS;

/// The running mean and variance of paired differences (Welford's one-pass update).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Paired {
    n: u64,
    mean: f64,
    /// Sum of squared deviations from the running mean.
    m2: f64,
}

impl Paired {
    pub fn push(&mut self, difference: f64) {
        self.n += 1;
        let delta = difference - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (difference - self.mean);
    }

    pub fn n(&self) -> u64 {
        self.n
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The sample standard deviation (n - 1 in the denominator); 0 below two differences.
    pub fn sd(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        (self.m2 / (self.n - 1) as f64).sqrt()
    }
}

/// How a comparison of `a` against `b` (the mean of `a - b`) stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The interval lies below zero.
    Less,
    /// The interval lies above zero.
    Greater,
    /// The interval lies within plus or minus the tolerance.
    Equivalent,
    /// None of these yet: more seeds may settle it.
    Open,
    /// Open, and no more seeds will be added (a sweep's limits): never returned by
    /// [`Resolution::verdict`], only by the rounds that stop.
    Unresolved,
}

impl Verdict {
    /// How result files and tables name it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Less => "a<b",
            Verdict::Greater => "a>b",
            Verdict::Equivalent => "equivalent",
            Verdict::Open => "open",
            Verdict::Unresolved => "unresolved",
        }
    }
}

/// The rule that judges comparisons: its confidence, its practical-equivalence margin and
/// the seeds it is tuned for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resolution {
    pub confidence: f64,
    pub tolerance: f64,
    rho2: f64,
}

impl Resolution {
    /// A rule at `confidence` (e.g. 0.95) whose intervals are tightest at `planned` seeds.
    pub fn new(confidence: f64, tolerance: f64, planned: u64) -> Resolution {
        let half = (1.0 - confidence) / 2.0;
        Resolution { confidence, tolerance, rho2: rho2_for(planned.max(1) as f64, half) }
    }

    /// The same rule with another practical-equivalence margin.
    pub fn with_tolerance(self, tolerance: f64) -> Resolution {
        Resolution { tolerance, ..self }
    }

    /// The interval for the mean difference after `d.n()` seeds; `None` below
    /// [`MIN_SEEDS`].
    pub fn interval(&self, d: &Paired) -> Option<(f64, f64)> {
        if d.n() < MIN_SEEDS {
            return None;
        }
        let half = d.sd() * margin(d.n() as f64, self.rho2, (1.0 - self.confidence) / 2.0);
        Some((d.mean() - half, d.mean() + half))
    }

    /// The verdict after `d.n()` seeds: equivalent when the interval fits within the
    /// tolerance (a difference too small to matter, even if it is not zero), else ordered
    /// when it excludes zero, else open.
    pub fn verdict(&self, d: &Paired) -> Verdict {
        match self.interval(d) {
            None => Verdict::Open,
            Some((lo, hi)) if -self.tolerance <= lo && hi <= self.tolerance => Verdict::Equivalent,
            Some((_, hi)) if hi < 0.0 => Verdict::Less,
            Some((lo, _)) if lo > 0.0 => Verdict::Greater,
            Some(_) => Verdict::Open,
        }
    }
}

/// The one-sided conjugate mixture margin for unit variance after `t` observations, at
/// level `alpha`, with mixture parameter `rho2`.
pub fn margin(t: f64, rho2: f64, alpha: f64) -> f64 {
    let v = t * rho2 + 1.0;
    (2.0 * v / (t * t * rho2) * (v.sqrt() / alpha).ln()).sqrt()
}

/// The mixture parameter that makes the margin nearly tightest at `t_opt` observations
/// (the approximation Waudby-Smith et al. give beside the exact optimum).
pub fn rho2_for(t_opt: f64, alpha: f64) -> f64 {
    let l = -2.0 * alpha.ln();
    (l + (l + 1.0).ln()) / t_opt
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Gen;

    /// A standard normal draw (Box-Muller) from the seeded generator.
    fn normal(g: &mut Gen) -> f64 {
        let u = |g: &mut Gen| ((g.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (u1, u2) = (u(g), u(g));
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// The margin and its tuning against an independent implementation of the published
    /// formulas (numpy, float64; the values it printed).
    #[test]
    fn the_margin_matches_an_independent_implementation() {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        assert!(close(rho2_for(20.0, 0.025), 0.47516696767847416));
        assert!(close(rho2_for(100.0, 0.005), 0.13047349679902717));
        let r = rho2_for(20.0, 0.025);
        for (t, want) in [
            (1.0, 4.910333426797598),
            (5.0, 1.5628067949612068),
            (20.0, 0.7332545646583005),
            (200.0, 0.2456432450432162),
        ] {
            assert!(close(margin(t, r, 0.025), want), "t = {t}: {}", margin(t, r, 0.025));
        }
        assert!(close(margin(50.0, rho2_for(100.0, 0.005), 0.005), 0.5394139018100288));
    }

    #[test]
    fn the_running_mean_and_deviation_are_the_two_pass_ones() {
        let mut g = Gen::new(7);
        let xs: Vec<f64> = (0..1000).map(|_| 3.0 + 2.0 * normal(&mut g)).collect();
        let mut p = Paired::default();
        xs.iter().for_each(|&x| p.push(x));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        assert_eq!(p.n(), 1000);
        assert!((p.mean() - mean).abs() < 1e-12 && (p.sd() - var.sqrt()).abs() < 1e-12);
        assert_eq!(Paired::default().sd(), 0.0);
    }

    /// Seeds added five at a time from 5 to 200, the verdict looked at after each round:
    /// the round at which each simulated comparison resolves, and whether it ever took the
    /// wrong order.
    fn rounds(mean: f64, tolerance: f64, reps: usize, seed: u64) -> (Vec<Option<usize>>, usize, usize) {
        let rule = Resolution::new(0.95, tolerance, 20);
        let mut g = Gen::new(seed);
        let (mut resolved, mut wrong, mut equivalent) = (Vec::new(), 0, 0);
        for _ in 0..reps {
            let mut d = Paired::default();
            let mut at = None;
            for round in 0..40 {
                for _ in 0..5 {
                    d.push(mean + normal(&mut g));
                }
                match rule.verdict(&d) {
                    Verdict::Open => continue,
                    Verdict::Equivalent => equivalent += 1,
                    v if (v == Verdict::Less) == (mean > 0.0) || mean == 0.0 => wrong += 1,
                    _ => {}
                }
                at = Some(round);
                break;
            }
            resolved.push(at);
        }
        (resolved, wrong, equivalent)
    }

    /// Equal means looked at every round: an order is declared in at most alpha of the
    /// comparisons (numpy, 20,000 repetitions of the same protocol: 4.7%).
    #[test]
    fn equal_means_take_an_order_within_the_error_rate_however_often_looked_at() {
        let (resolved, wrong, _) = rounds(0.0, 0.0, 4000, 1);
        let rate = wrong as f64 / resolved.len() as f64;
        assert!(rate <= 0.06, "an order in {rate} of 4,000 comparisons of equal means");
        assert!(rate > 0.02, "{rate}: the interval is not that conservative (numpy: 4.7%)");
    }

    /// A clear difference (two standard deviations) resolves in the first rounds, in the
    /// right order; a small one (0.3) in most comparisons by 200 seeds, almost never in the
    /// wrong order (numpy: 84% resolved, 0.27% wrong).
    #[test]
    fn differences_resolve_in_their_order() {
        let (resolved, wrong, _) = rounds(2.0, 0.0, 2000, 2);
        assert_eq!(wrong, 0);
        let first = resolved.iter().filter(|r| **r == Some(0)).count() as f64 / 2000.0;
        assert!(first > 0.7, "{first} at the first round (numpy: 78%)");
        assert!(resolved.iter().all(|r| r.is_some_and(|k| k <= 3)), "all by the fourth round");
        let (resolved, wrong, _) = rounds(-0.3, 0.0, 2000, 3);
        let share = resolved.iter().filter(|r| r.is_some()).count() as f64 / 2000.0;
        assert!((0.78..0.9).contains(&share), "{share} resolved by 200 seeds (numpy: 84%)");
        assert!(wrong <= 20, "{wrong} of 2,000 in the wrong order");
    }

    /// Equal means with a practical margin of half a standard deviation end equivalent,
    /// mostly (numpy, 20,000 repetitions: 95.5% equivalent, 4.5% ordered, 0.005% open at
    /// 200 seeds).
    #[test]
    fn equal_means_end_equivalent_within_a_tolerance() {
        let (resolved, wrong, equivalent) = rounds(0.0, 0.5, 1000, 4);
        let open = resolved.iter().filter(|r| r.is_none()).count();
        assert!(
            open <= 2 && wrong + equivalent + open == 1000,
            "{equivalent} equivalent, {wrong} ordered, {open} open"
        );
        assert!(equivalent >= 930, "{equivalent} of 1,000 equivalent (numpy: 95.5%)");
    }

    #[test]
    fn too_few_seeds_are_open_and_a_rule_says_so() {
        let rule = Resolution::new(0.95, 0.0, 20);
        let mut d = Paired::default();
        for x in [5.0, 5.1, 4.9, 5.0] {
            d.push(x);
        }
        assert_eq!((rule.interval(&d), rule.verdict(&d)), (None, Verdict::Open));
        d.push(5.0);
        let (lo, hi) = rule.interval(&d).unwrap();
        assert!(lo > 0.0 && hi > lo && (lo + hi) / 2.0 == d.mean());
        assert_eq!(rule.verdict(&d), Verdict::Greater);
    }
}
