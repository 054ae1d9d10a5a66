//! The per-round quantities shared by every algorithm (paper Section 3), labelled Q1-Q6 here,
//! on the grid.
//!
//! * (Q1) `S_t = {UCB_g <= h} ∪ {s = 0}` (eq. 12; inclusive; s = 0 is always certified);
//! * (Q2) `b[i]`: the largest certified s-index of row i (eq. 14; S_t need not be contiguous);
//! * (Q3) `s_under[i]`: the largest grid s with `LCB_g(b) + L'_g (s - s_b) <= h` (eq. 19),
//!   snapped down; `None` when `LCB_g(b) > h` (impossible under valid intervals; its
//!   expansion value is -inf);
//! * (Q4) `s_hat[i]`: argmax of `UCB_f` over `s <= s_b` (the paper's rule, eq. 16; ties to the
//!   smallest s);
//! * (Q5) `OptExp[i] = UCB_f(b) + L_f (s_under - s_b)` (the left side of (21), (22), (24));
//! * (Q6) `LCBmax = max over S_t of LCB_f`, over all rows (the right side of (20)-(22)).
//!
//! Masked maxima are -inf, never the reference code's `mask * value` trick (masked entries
//! count as 0, wrong where the values are negative).

use crate::confidence::Confidence;

/// The sets and values of one round, per x-row.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundSets {
    /// `S_t` membership per candidate (Q1).
    pub safe: Vec<bool>,
    /// Boundary s-index `b[i]` per row (Q2).
    pub boundary: Vec<usize>,
    /// `s_under` s-index per row (Q3); `None` if `LCB_g(b) > h`.
    pub s_under: Vec<Option<usize>>,
    /// `s_hat` s-index per row (Q4).
    pub s_hat: Vec<usize>,
    /// `max_{s <= s_b} UCB_f`: the left side of elimination test (20).
    pub row_ucb_max: Vec<f64>,
    /// `max_{s <= s_b} LCB_f`: the right side of Case 2's expansion test (24).
    pub row_lcb_max: Vec<f64>,
    /// The optimistic value of expanding row i (Q5); -inf if `s_under` is `None`.
    pub opt_exp: Vec<f64>,
    /// `LCBmax_t` (Q6).
    pub lcb_max: f64,
}

impl RoundSets {
    /// Computes Q1-Q6 for a grid with s-values `s` (ascending, `s[0] = 0`) and
    /// `conf.len() / s.len()` rows.
    pub fn compute(conf: &Confidence, s: &[f64], h: f64, l_f: f64, l_g: f64) -> Self {
        let n_s = s.len();
        let n_x = conf.len() / n_s;
        let safe: Vec<bool> = conf.ucb_g.iter().enumerate().map(|(k, &u)| u <= h || k % n_s == 0).collect();
        let mut out = RoundSets {
            boundary: Vec::with_capacity(n_x),
            s_under: Vec::with_capacity(n_x),
            s_hat: Vec::with_capacity(n_x),
            row_ucb_max: Vec::with_capacity(n_x),
            row_lcb_max: Vec::with_capacity(n_x),
            opt_exp: Vec::with_capacity(n_x),
            lcb_max: f64::NEG_INFINITY,
            safe: Vec::new(),
        };
        for i in 0..n_x {
            let row = i * n_s..(i + 1) * n_s;
            let safe_row = &safe[row.clone()];
            let b = (0..n_s).rev().find(|&j| safe_row[j]).unwrap_or(0);
            let ucb_f = &conf.ucb_f[row.clone()];
            let lcb_f = &conf.lcb_f[row.clone()];
            // (Q4): first maximiser over j <= b, i.e. ties go to the smallest s.
            let mut s_hat = 0;
            for j in 1..=b {
                if ucb_f[j] > ucb_f[s_hat] {
                    s_hat = j;
                }
            }
            let row_lcb_max = lcb_f[..=b].iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for j in 0..n_s {
                if safe_row[j] {
                    out.lcb_max = out.lcb_max.max(lcb_f[j]);
                }
            }
            // (Q3): the inequality is monotone in s (L'_g > 0), so walk up from b.
            let lcb_g_b = conf.lcb_g[i * n_s + b];
            let s_under = (lcb_g_b <= h)
                .then(|| (b..n_s).take_while(|&j| lcb_g_b + l_g * (s[j] - s[b]) <= h).last().unwrap_or(b));
            let opt_exp = match s_under {
                Some(ju) => ucb_f[b] + l_f * (s[ju] - s[b]),
                None => f64::NEG_INFINITY,
            };
            out.boundary.push(b);
            out.s_under.push(s_under);
            out.s_hat.push(s_hat);
            out.row_ucb_max.push(ucb_f[s_hat]);
            out.row_lcb_max.push(row_lcb_max);
            out.opt_exp.push(opt_exp);
        }
        out.safe = safe;
        out
    }

    /// Number of x-rows.
    pub fn n_x(&self) -> usize {
        self.boundary.len()
    }

    /// `|S_t|`.
    pub fn n_certified(&self) -> usize {
        self.safe.iter().filter(|&&c| c).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of five s-values with hand-set bounds (widths irrelevant here).
    fn one_row(ucb_f: [f64; 5], lcb_f: [f64; 5], ucb_g: [f64; 5], lcb_g: [f64; 5]) -> Confidence {
        Confidence {
            ucb_f: ucb_f.to_vec(),
            lcb_f: lcb_f.to_vec(),
            ucb_g: ucb_g.to_vec(),
            lcb_g: lcb_g.to_vec(),
            width_f: vec![0.0; 5],
            width_g: vec![0.0; 5],
        }
    }

    const S: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

    #[test]
    fn boundary_is_the_largest_certified_s_even_when_s_t_is_not_contiguous() {
        // UCB_g: s=0.25 is uncertified, s=0.5 certified again (= h: inclusive), then unsafe.
        let c = one_row(
            [1.0, 3.0, 2.0, 9.0, 9.0],
            [0.0, 0.5, 1.5, 8.0, 8.0],
            [0.5, 1.2, 1.0, 1.5, 2.0],
            [0.1, 0.2, 0.4, 0.5, 0.6],
        );
        let r = RoundSets::compute(&c, &S, 1.0, 2.0, 0.8);
        assert_eq!(r.safe, vec![true, false, true, false, false]);
        assert_eq!(r.boundary, vec![2]);
        // (Q4) maximises over all s <= s_b, including the uncertified s = 0.25.
        assert_eq!(r.s_hat, vec![1]);
        assert_eq!(r.row_ucb_max, vec![3.0]);
        assert_eq!(r.row_lcb_max, vec![1.5]);
        // LCBmax over S_t only: max(0.0, 1.5), not 0.5's row entry at s = 0.25 nor 8.0.
        assert_eq!(r.lcb_max, 1.5);
        // (Q3): 0.4 + 0.8 (s - 0.5) <= 1 <=> s <= 1.25: snapped to s = 1 (index 4).
        assert_eq!(r.s_under, vec![Some(4)]);
        assert_eq!(r.opt_exp, vec![2.0 + 2.0 * 0.5]);
        assert_eq!(r.n_certified(), 2);
    }

    #[test]
    fn s_under_snaps_down_to_the_grid() {
        // lcb_g(b=0.25) = 0.5, L'_g = 1, h = 0.9: s <= 0.65 -> grid s = 0.5 (index 2).
        let c = one_row([0.0; 5], [0.0; 5], [0.0, 0.9, 1.1, 1.2, 1.3], [0.0, 0.5, 0.6, 0.7, 0.8]);
        let r = RoundSets::compute(&c, &S, 0.9, 1.0, 1.0);
        assert_eq!(r.boundary, vec![1]);
        assert_eq!(r.s_under, vec![Some(2)]);
        assert_eq!(r.opt_exp, vec![0.25]);
        // Exactly on the inequality's edge counts (<=): 0.5 + 1.0 * 0.25 = 0.75 <= 0.75.
        let r = RoundSets::compute(&c, &S, 0.9, 1.0, 1.6);
        assert_eq!(r.s_under, vec![Some(2)]);
    }

    #[test]
    fn degenerate_lcb_above_h_gives_no_expansion_value_and_s_0_is_always_certified() {
        let c = one_row([5.0, 1.0, 1.0, 1.0, 1.0], [4.0, 0.0, 0.0, 0.0, 0.0], [3.0; 5], [2.0; 5]);
        let r = RoundSets::compute(&c, &S, 1.0, 1.0, 1.0);
        assert_eq!(r.safe, vec![true, false, false, false, false]);
        assert_eq!((r.boundary[0], r.s_hat[0]), (0, 0));
        assert_eq!(r.s_under, vec![None]);
        assert_eq!(r.opt_exp, vec![f64::NEG_INFINITY]);
        assert_eq!(r.lcb_max, 4.0);
    }

    #[test]
    fn fully_certified_row_has_s_under_equal_to_boundary_at_s_1() {
        let c = one_row([1.0, 2.0, 2.0, 0.0, 0.0], [0.0; 5], [0.0; 5], [-1.0; 5]);
        let r = RoundSets::compute(&c, &S, 1.0, 3.0, 1.0);
        assert_eq!((r.boundary[0], r.s_under[0], r.opt_exp[0]), (4, Some(4), 0.0));
        // Ties in UCB_f go to the smallest s.
        assert_eq!(r.s_hat, vec![1]);
    }

    /// Q1-Q6 recomputed from their definitions, one candidate at a time, with the closed form
    /// of (Q3), on random bounds (including non-monotone UCB_g and degenerate rows).
    #[test]
    fn incremental_computation_matches_a_brute_force_one_on_random_bounds() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let s: Vec<f64> = crate::grid::linspace(0.0, 1.0, 9);
        let (n_x, n_s, h, l_f, l_g) = (13, 9, 1.0, 1.7, 0.6);
        for _ in 0..200 {
            let n = n_x * n_s;
            let mut draw = |lo: f64, hi: f64| (0..n).map(|_| rng.random_range(lo..hi)).collect::<Vec<f64>>();
            let (mu_f, sd_f, mu_g, sd_g) = (draw(-1.0, 1.0), draw(0.0, 0.5), draw(0.0, 1.6), draw(0.0, 0.4));
            let c = Confidence::new(&mu_f, &sd_f, &mu_g, &sd_g, 1.0, 1.0);
            let r = RoundSets::compute(&c, &s, h, l_f, l_g);
            let mut lcb_max = f64::NEG_INFINITY;
            for k in 0..n {
                assert_eq!(r.safe[k], c.ucb_g[k] <= h || k % n_s == 0);
                if r.safe[k] {
                    lcb_max = lcb_max.max(c.lcb_f[k]);
                }
            }
            assert_eq!(r.lcb_max, lcb_max);
            for i in 0..n_x {
                let at = |v: &[f64], j: usize| v[i * n_s + j];
                let b = r.boundary[i];
                assert!(r.safe[i * n_s + b] && (b + 1..n_s).all(|j| !r.safe[i * n_s + j]));
                let best = (0..=b).map(|j| at(&c.ucb_f, j)).fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(at(&c.ucb_f, r.s_hat[i]), best);
                assert!((0..r.s_hat[i]).all(|j| at(&c.ucb_f, j) < best), "ties go to the smallest s");
                assert_eq!(r.row_lcb_max[i], (0..=b).map(|j| at(&c.lcb_f, j)).fold(f64::NEG_INFINITY, f64::max));
                let lcb_g = at(&c.lcb_g, b);
                if lcb_g > h {
                    assert_eq!((r.s_under[i], r.opt_exp[i]), (None, f64::NEG_INFINITY));
                    continue;
                }
                // Closed form min(1, s_b + (h - LCB_g)/L'_g), snapped down to the grid.
                let s_cont = (s[b] + (h - lcb_g) / l_g).min(1.0);
                let ju = ((s_cont * (n_s - 1) as f64) + 1e-9).floor() as usize;
                assert_eq!(r.s_under[i], Some(ju));
                assert!((r.opt_exp[i] - (at(&c.ucb_f, b) + l_f * (s[ju] - s[b]))).abs() < 1e-12);
            }
        }
    }
}
