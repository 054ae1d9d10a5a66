//! The acquisition rules: M-SafeOpt Cases 1, 2, 3a, 3b (paper Section 3, Algorithm 1, and the
//! refined acquisition (36); on the grid as the authors' code) and the baselines SafeOpt-MC as
//! the authors modified it and PredVar (paper Appendix B.2.2).
//!
//! Every rule reads the round's [`RoundSets`] and [`Confidence`] and returns a [`Decision`]:
//! the chosen flat index (first maximiser in flat order, x-major then s-minor, as
//! `tf.math.argmax`), the sets it chose from, and its estimates `s_hat_t^(x)` for `R^X`.

use crate::confidence::Confidence;
use crate::sets::RoundSets;

/// Which M-SafeOpt variant (paper Section 3, Cases 1-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// Maximise f over D (goal i): elimination (20)+(21), expansion (22).
    One,
    /// Best s for every x (goal ii): no elimination, expansion (24).
    Two,
    /// f and g both increasing, global optimum: elimination (21), every kept x expands.
    ThreeA,
    /// f and g both increasing, best s per x (M-SafeUCB): expand every x with `s_t < 1`, g only.
    ThreeB,
}

armada_core::choice! {
    /// How the surviving set `D_X^t` evolves (paper eq. 13; Appendix B.1).
    pub enum Elimination {
        /// Recomputed against the full `D_X` every round (the experiments, App. B.1).
        Robust = "robust",
        /// Algorithm 1 as printed: removals are permanent.
        Progressive = "progressive",
    }
}

/// An acquisition rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Algorithm {
    MSafeOpt {
        case: Case,
        elimination: Elimination,
        /// Use the refined expander acquisition (36): `max{w_f, (L_f/L'_g) w_g}`.
        refined: bool,
    },
    SafeOptMc,
    PredVar,
}

/// What a rule decided in one round.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Flat index of the chosen candidate.
    pub index: usize,
    /// The acquisition value at the choice.
    pub acquisition: f64,
    /// `|D_X^t|` (all rows for rules without elimination).
    pub active_x: usize,
    /// Flat indices of the expanders `G_t` (`None` for PredVar).
    pub expanders: Option<Vec<usize>>,
    /// Flat indices of the potential maximisers `M_t` (`None` for PredVar).
    pub maximisers: Option<Vec<usize>>,
    /// Whether every row was eliminated and the previous `D_X` was kept (our guard; the paper
    /// has no rule for an empty `D_X^t`, possible only with invalid intervals).
    pub kept_previous_active: bool,
}

/// State carried between rounds: the surviving rows for progressive elimination.
#[derive(Clone, Debug, Default)]
pub struct AlgoState {
    active: Vec<bool>,
}

impl Algorithm {
    /// The rule's current best s-index per row, `s_hat_t^(x)` (the estimate of eq. 3): rule
    /// (16) for every rule but Case 3b, whose estimate is the boundary, the highest certified s
    /// (paper Section 3, Case 3).
    pub fn estimates<'a>(&self, sets: &'a RoundSets) -> &'a [usize] {
        match self {
            Algorithm::MSafeOpt { case: Case::ThreeB, .. } => &sets.boundary,
            _ => &sets.s_hat,
        }
    }

    /// Chooses the round's action. `l_f`, `l_g` are the constants the algorithm was given.
    pub fn choose(
        &self,
        sets: &RoundSets,
        conf: &Confidence,
        n_s: usize,
        l_f: f64,
        l_g: f64,
        state: &mut AlgoState,
    ) -> Decision {
        match *self {
            Algorithm::MSafeOpt { case, elimination, refined } => {
                msafeopt(case, elimination, refined, sets, conf, n_s, l_f / l_g, state)
            }
            Algorithm::SafeOptMc => safeopt_mc(sets, conf, n_s),
            Algorithm::PredVar => predvar(sets, conf),
        }
    }
}

/// The first maximiser of `acq` over `candidates` given in ascending flat order.
fn first_argmax(candidates: impl IntoIterator<Item = (usize, f64)>) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for (k, a) in candidates {
        if best.is_none_or(|(_, b)| a > b) {
            best = Some((k, a));
        }
    }
    best
}

#[allow(clippy::too_many_arguments)]
fn msafeopt(
    case: Case,
    elimination: Elimination,
    refined: bool,
    sets: &RoundSets,
    conf: &Confidence,
    n_s: usize,
    l_ratio: f64,
    state: &mut AlgoState,
) -> Decision {
    let n_x = sets.n_x();
    let lcb_max = sets.lcb_max;
    // Elimination (20) strict, (21) inclusive; an x goes only if the case's tests all hold.
    let eliminated = |i: usize| match case {
        Case::One => sets.row_ucb_max[i] < lcb_max && sets.opt_exp[i] <= lcb_max,
        Case::ThreeA => sets.opt_exp[i] <= lcb_max,
        Case::Two | Case::ThreeB => false,
    };
    let expands = |i: usize| match case {
        Case::One => sets.opt_exp[i] > lcb_max,
        Case::Two => sets.opt_exp[i] > sets.row_lcb_max[i],
        Case::ThreeA => true,
        Case::ThreeB => sets.boundary[i] + 1 < n_s,
    };
    let keep: Vec<bool> = (0..n_x).map(|i| !eliminated(i)).collect();
    let mut active = match elimination {
        Elimination::Robust => keep,
        Elimination::Progressive if state.active.len() == n_x => {
            state.active.iter().zip(&keep).map(|(a, k)| *a && *k).collect()
        }
        Elimination::Progressive => keep,
    };
    let mut kept_previous_active = false;
    if !active.iter().any(|&a| a) {
        // Possible only with invalid intervals: keep the previous D_X for this round.
        kept_previous_active = true;
        active = if state.active.len() == n_x { state.active.clone() } else { vec![true; n_x] };
    }
    state.active = active.clone();

    let uses_maximisers = matches!(case, Case::One | Case::Two);
    let mut expanders = Vec::new();
    let mut maximisers = Vec::new();
    let mut candidates: Vec<(usize, f64)> = Vec::new();
    for i in (0..n_x).filter(|&i| active[i]) {
        let b = i * n_s + sets.boundary[i];
        let m = i * n_s + sets.s_hat[i];
        let in_g = expands(i);
        if in_g {
            expanders.push(b);
        }
        if uses_maximisers {
            maximisers.push(m);
        }
        // (23)/(25)/(36): the G-branch wins where G and M overlap (s_hat = s_b).
        let g_value = match case {
            Case::ThreeB => conf.width_g[b],
            _ if refined => conf.width_f[b].max(l_ratio * conf.width_g[b]),
            _ => conf.width_f[b].max(conf.width_g[b]),
        };
        if uses_maximisers && m != b {
            candidates.push((m, conf.width_f[m]));
        }
        if in_g {
            candidates.push((b, g_value));
        } else if uses_maximisers && m == b {
            candidates.push((m, conf.width_f[m]));
        }
    }
    let (index, acquisition) = first_argmax(candidates).unwrap_or_else(|| {
        // Case 3b with every row certified up to s = 1: G_t is empty and the paper says nothing
        // to play; pick a (1, x).
        let i = active.iter().position(|&a| a).unwrap_or(0);
        (i * n_s + sets.boundary[i], 0.0)
    });
    Decision {
        index,
        acquisition,
        active_x: active.iter().filter(|&&a| a).count(),
        expanders: Some(expanders),
        maximisers: uses_maximisers.then_some(maximisers),
        kept_previous_active,
    }
}

/// SafeOpt-MC as the authors modified it (paper Appendix B.2.2): expanders are the boundary
/// points of rows not yet certified up to s = 1 (blind to f), maximisers the certified points
/// with `UCB_f > LCBmax` (strict, as the authors' code); acquisition `max{w_f, w_g}` on both
/// sets.
fn safeopt_mc(sets: &RoundSets, conf: &Confidence, n_s: usize) -> Decision {
    let n_x = sets.n_x();
    let expanders: Vec<usize> =
        (0..n_x).filter(|&i| sets.boundary[i] + 1 < n_s).map(|i| i * n_s + sets.boundary[i]).collect();
    let maximisers: Vec<usize> = (0..conf.len()).filter(|&k| sets.safe[k] && conf.ucb_f[k] > sets.lcb_max).collect();
    let mut union: Vec<usize> = expanders.iter().chain(&maximisers).copied().collect();
    union.sort_unstable();
    union.dedup();
    let (index, acquisition) =
        first_argmax(union.into_iter().map(|k| (k, conf.width_f[k].max(conf.width_g[k])))).unwrap_or((0, 0.0)); // Unreachable: the LCBmax point itself has UCB_f > LCBmax unless sigma_f = 0.
    Decision {
        index,
        acquisition,
        active_x: n_x,
        expanders: Some(expanders),
        maximisers: Some(maximisers),
        kept_previous_active: false,
    }
}

/// PredVar (paper Appendix B.2.2): the certified point of largest `max{w_f, w_g}`, pure
/// exploration.
fn predvar(sets: &RoundSets, conf: &Confidence) -> Decision {
    let candidates = (0..conf.len()).filter(|&k| sets.safe[k]).map(|k| (k, conf.width_f[k].max(conf.width_g[k])));
    // S_t always holds the s = 0 column, so the argmax exists.
    let (index, acquisition) = first_argmax(candidates).unwrap_or((0, 0.0));
    Decision {
        index,
        acquisition,
        active_x: sets.n_x(),
        expanders: None,
        maximisers: None,
        kept_previous_active: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N_S: usize = 3;
    const ROBUST: Elimination = Elimination::Robust;

    fn msafeopt(case: Case) -> Algorithm {
        Algorithm::MSafeOpt { case, elimination: ROBUST, refined: false }
    }

    /// Five rows of three s-values, LCBmax = 1: the truth table of (20) x (21) with equality edges.
    fn table() -> (RoundSets, Confidence) {
        let sets = RoundSets {
            safe: vec![true; 5 * N_S],
            boundary: vec![1, 1, 1, 1, 2],
            s_under: vec![Some(2); 5],
            s_hat: vec![0, 0, 0, 0, 2],
            // (20): row_ucb_max < 1 holds in rows 0, 1, 3; fails at equality in row 2.
            row_ucb_max: vec![0.5, 0.5, 1.0, 0.5, 2.0],
            row_lcb_max: vec![0.8, 1.0, 0.0, 0.0, 0.0],
            // (21): opt_exp <= 1 holds in rows 0, 1 (equality), 2; (22) in rows 3, 4.
            opt_exp: vec![0.9, 1.0, 0.5, 1.2, 1.2],
            lcb_max: 1.0,
        };
        let n = 5 * N_S;
        let mut conf = Confidence {
            ucb_f: vec![0.0; n],
            lcb_f: vec![0.0; n],
            ucb_g: vec![0.0; n],
            lcb_g: vec![0.0; n],
            width_f: vec![0.05; n],
            width_g: vec![0.05; n],
        };
        conf.width_f[3 * N_S] = 0.3; // row 3's maximiser
        conf.width_g[3 * N_S + 1] = 0.5; // row 3's expander
        conf.width_f[4 * N_S + 2] = 0.1; // row 4: s_hat = s_b, so G's branch must apply...
        conf.width_g[4 * N_S + 2] = 0.5; // ... and tie with row 3 at 0.5: the first flat index wins.
        (sets, conf)
    }

    fn choose(alg: Algorithm, sets: &RoundSets, conf: &Confidence) -> Decision {
        alg.choose(sets, conf, N_S, 2.0, 1.0, &mut AlgoState::default())
    }

    #[test]
    fn case1_eliminates_only_when_both_20_and_21_hold_and_expands_on_22() {
        let (sets, conf) = table();
        let d = choose(msafeopt(Case::One), &sets, &conf);
        assert_eq!(d.active_x, 3);
        assert_eq!(d.expanders, Some(vec![3 * N_S + 1, 4 * N_S + 2]));
        assert_eq!(d.maximisers, Some(vec![2 * N_S, 3 * N_S, 4 * N_S + 2]));
        assert_eq!((d.index, d.acquisition), (3 * N_S + 1, 0.5));
        assert!(!d.kept_previous_active);
    }

    #[test]
    fn case2_never_eliminates_and_compares_each_x_with_itself() {
        let (sets, conf) = table();
        let d = choose(msafeopt(Case::Two), &sets, &conf);
        assert_eq!(d.active_x, 5);
        // (24) strict: row 0 (0.9 > 0.8) expands though Case 1 drops it; row 1 (1.0 = 1.0) does not.
        assert_eq!(d.expanders, Some(vec![1, 2 * N_S + 1, 3 * N_S + 1, 4 * N_S + 2]));
        assert_eq!(d.maximisers.as_ref().map(Vec::len), Some(5));
    }

    #[test]
    fn case3a_keeps_rows_by_21_alone_and_always_plays_the_boundary() {
        let (sets, conf) = table();
        let d = choose(msafeopt(Case::ThreeA), &sets, &conf);
        assert_eq!(d.active_x, 2);
        assert_eq!(d.expanders, Some(vec![3 * N_S + 1, 4 * N_S + 2]));
        assert_eq!(d.maximisers, None);
        assert_eq!(d.index, 3 * N_S + 1);
    }

    #[test]
    fn case3b_expands_rows_below_s_1_on_the_width_of_g_only() {
        let (sets, mut conf) = table();
        conf.width_f[N_S + 1] = 9.0; // ignored: sigma_f is not used
        conf.width_g[2 * N_S + 1] = 0.7;
        let d = choose(msafeopt(Case::ThreeB), &sets, &conf);
        assert_eq!(d.expanders.as_ref().map(Vec::len), Some(4)); // row 4 is certified up to s = 1
        assert_eq!((d.index, d.acquisition), (2 * N_S + 1, 0.7));
        assert_eq!(msafeopt(Case::ThreeB).estimates(&sets), &sets.boundary[..]);
    }

    #[test]
    fn refined_acquisition_scales_the_width_of_g_by_lf_over_lg() {
        let (sets, conf) = table();
        let alg = Algorithm::MSafeOpt { case: Case::One, elimination: ROBUST, refined: true };
        // L_f / L'_g = 2: row 3's expander scores max(0.05, 2 * 0.5) = 1.
        let d = alg.choose(&sets, &conf, N_S, 2.0, 1.0, &mut AlgoState::default());
        assert_eq!((d.index, d.acquisition), (3 * N_S + 1, 1.0));
    }

    #[test]
    fn progressive_elimination_is_permanent_and_robust_is_not() {
        let (mut sets, conf) = table();
        let progressive =
            Algorithm::MSafeOpt { case: Case::One, elimination: Elimination::Progressive, refined: false };
        let mut state = AlgoState::default();
        progressive.choose(&sets, &conf, N_S, 2.0, 1.0, &mut state);
        // Next round row 0 would be kept.
        sets.opt_exp[0] = 5.0;
        let d = progressive.choose(&sets, &conf, N_S, 2.0, 1.0, &mut state);
        assert_eq!(d.active_x, 3);
        let d = msafeopt(Case::One).choose(&sets, &conf, N_S, 2.0, 1.0, &mut state);
        assert_eq!(d.active_x, 4);
    }

    #[test]
    fn an_empty_surviving_set_keeps_the_previous_one() {
        let (mut sets, conf) = table();
        sets.row_ucb_max = vec![0.0; 5];
        sets.opt_exp = vec![0.0; 5];
        let d = choose(msafeopt(Case::One), &sets, &conf);
        assert!(d.kept_previous_active);
        assert_eq!(d.active_x, 5);
    }

    #[test]
    fn safeopt_mc_expands_every_row_below_s_1_and_keeps_strict_maximisers() {
        let (sets, mut conf) = table();
        conf.ucb_f[4] = 1.0; // = LCBmax: not a maximiser (strict)
        conf.ucb_f[5] = 1.5;
        conf.ucb_f[9] = 1.5;
        conf.width_f[9] = 0.9;
        let d = choose(Algorithm::SafeOptMc, &sets, &conf);
        assert_eq!(d.expanders, Some(vec![1, N_S + 1, 2 * N_S + 1, 3 * N_S + 1]));
        assert_eq!(d.maximisers, Some(vec![5, 9]));
        assert_eq!((d.index, d.acquisition), (9, 0.9));
    }

    #[test]
    fn predvar_takes_the_widest_certified_point() {
        let (mut sets, mut conf) = table();
        conf.width_g[7] = 3.0;
        conf.width_f[8] = 2.0;
        sets.safe[7] = false;
        let d = choose(Algorithm::PredVar, &sets, &conf);
        assert_eq!((d.index, d.acquisition), (8, 2.0));
        assert_eq!((d.expanders, d.maximisers), (None, None));
    }
}
