//! Hyperparameters as data: names, the CDT search box, the finite candidate sets, the map from the
//! scaled unit box, and the constants of the "Theory" values (paper Sections 3 and 5; the
//! authors' code where the paper gives none).
//!
//! The tuner layer ([`crate::tuner`], [`crate::cdt`]) reads a bottom bandit's [`Hyperparameter`] list to
//! know `p` and the box; it never needs to know which algorithm it tunes.

/// Lower end of every search interval (paper Section 5: the interval [0.1, 5] for all hyperparameters;
/// zero exploration is deliberately excluded).
pub const SEARCH_LOW: f64 = 0.1;
/// Upper end of every search interval.
pub const SEARCH_HIGH: f64 = 5.0;
/// Candidate set C1 of OP / TL / Syndicated (paper Section 5).
pub const CANDIDATES_C1: [f64; 6] = [0.1, 1.0, 2.0, 3.0, 4.0, 5.0];
/// The finer candidate set C2 of paper Appendix A.4.1.
pub const CANDIDATES_C2: [f64; 13] = [0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0];

/// One tunable hyperparameter of a bottom bandit and its search interval `[low, high]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hyperparameter {
    /// Short identifier, e.g. `"alpha"` or `"eta0"`.
    pub name: &'static str,
    /// What it controls, for messages and tables.
    pub meaning: &'static str,
    pub low: f64,
    pub high: f64,
}

impl Hyperparameter {
    /// A hyperparameter on the paper's box `[0.1, 5]`.
    pub const fn on_paper_box(name: &'static str, meaning: &'static str) -> Self {
        Hyperparameter { name, meaning, low: SEARCH_LOW, high: SEARCH_HIGH }
    }

    /// `alpha = a + (b - a) v` for `v` in `[0, 1]` (paper Section 4; the linear map keeps the Lipschitz
    /// constant). Values outside `[0, 1]` are clamped.
    pub fn from_unit(&self, v: f64) -> f64 {
        self.low + (self.high - self.low) * v.clamp(0.0, 1.0)
    }

    /// Inverse of [`Hyperparameter::from_unit`].
    pub fn to_unit(&self, value: f64) -> f64 {
        ((value - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
    }
}

/// Maps a point of the scaled box `[0,1]^p` to hyperparameter values, coordinate by coordinate.
pub fn from_unit_box(space: &[Hyperparameter], v: &[f64], out: &mut [f64]) {
    assert!(space.len() == v.len() && v.len() == out.len(), "dimension mismatch");
    for ((h, &vi), o) in space.iter().zip(v).zip(out.iter_mut()) {
        *o = h.from_unit(vi);
    }
}

/// Constants of the "Theory" hyperparameter formulas (the authors' code's: `delta = 0.05`,
/// `sigma = 0.5`, `S = 1`, `lambda = 1`, `kappa = 0.196`), plus the horizon `T` that several formulas use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TheoryConstants {
    pub horizon: usize,
    /// Sub-Gaussian noise constant (the linear noise std).
    pub sigma: f64,
    pub delta: f64,
    /// Bound `S` on `||theta*||` (the code's `thetan = 1`, not the true norm).
    pub norm_bound: f64,
    /// Ridge / prior precision, never tuned (paper Section 3: "commonly set to 1").
    pub lambda: f64,
    /// `inf mu'` over `|z| <= 1` for the logistic link, rounded as in the code (`mu'(1) = 0.19661...`).
    pub kappa: f64,
}

impl TheoryConstants {
    /// The paper's constants for a run of `horizon` rounds.
    pub fn paper(horizon: usize) -> Self {
        TheoryConstants { horizon, sigma: 0.5, delta: 0.05, norm_bound: 1.0, lambda: 1.0, kappa: 0.196 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_box_map_is_affine_onto_the_paper_interval_and_invertible() {
        let h = Hyperparameter::on_paper_box("alpha", "exploration");
        assert_eq!(h.from_unit(0.0), 0.1);
        assert_eq!(h.from_unit(1.0), 5.0);
        assert!((h.from_unit(0.5) - 2.55).abs() < 1e-15);
        assert_eq!(h.from_unit(1.7), 5.0, "clamped");
        assert!((h.to_unit(h.from_unit(0.3)) - 0.3).abs() < 1e-15);
        let mut out = [0.0; 2];
        from_unit_box(&[h, h], &[0.0, 0.2], &mut out);
        assert_eq!(out[0], 0.1);
        assert!((out[1] - 1.08).abs() < 1e-15);
        // The candidate sets lie on the box and are increasing.
        for c in [&CANDIDATES_C1[..], &CANDIDATES_C2[..]] {
            assert!(c.windows(2).all(|w| w[0] < w[1]));
            assert_eq!((c[0], c[c.len() - 1]), (SEARCH_LOW, SEARCH_HIGH));
        }
    }
}
