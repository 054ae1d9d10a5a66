//! Classification metrics of the paper (Sections 4 and 5.1, Appendix A), computed with the
//! noise-free true `f` from a classification `upper[x]` (`x` estimated in the upper set).
//! Every built-in method classifies by its posterior mean, `H_t = {x : mu(x) >= theta}`
//! (Definition 3.1, [`upper_set`]); an outside method hands its own classification to the
//! benchmark.

use crate::algorithms::max_value::max_value_loss;

/// The posterior-mean classification `H = {x : mu(x) >= theta}`.
pub fn upper_set(mean: &[f64], theta: f64) -> Vec<bool> {
    mean.iter().map(|&mu| mu >= theta).collect()
}

/// The family's three metrics of one classification (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassificationMetrics {
    /// The average loss `r_t` ([`average_loss`]).
    pub loss: f64,
    /// The F-score of the estimated upper set ([`upper_set_fscore`]).
    pub fscore: f64,
    /// The max-value loss ([`max_value_loss`]).
    pub max_loss: f64,
}

impl ClassificationMetrics {
    /// The metrics of `upper` against the true `f` and the threshold.
    pub fn of(upper: &[bool], f: &[f64], theta: f64) -> Self {
        ClassificationMetrics {
            loss: average_loss(upper, f, theta),
            fscore: upper_set_fscore(upper, f, theta),
            max_loss: max_value_loss(upper, f, theta),
        }
    }
}

/// The classification a max-value algorithm (2 on finite X, 3 on a continuous domain)
/// returns: the step whose estimate it chose, and how good that estimate really is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Returned {
    pub step: usize,
    pub loss: f64,
    pub max_loss: f64,
}

/// Average loss `r_t = (1/|X|) sum_x |f(x) - theta| 1[x misclassified]` (divided by |X|,
/// not by the number of misclassified points).
pub fn average_loss(upper: &[bool], f: &[f64], theta: f64) -> f64 {
    debug_assert_eq!(upper.len(), f.len());
    let total: f64 =
        upper.iter().zip(f).filter(|(&h, &fx)| h != (fx >= theta)).map(|(_, &fx)| (fx - theta).abs()).sum();
    total / f.len() as f64
}

/// F-score of the estimated upper set against `H* = {f >= theta}`, with the
/// convention `0/0 := 0`, which the paper leaves open (an empty estimate or an empty true set
/// scores 0).
pub fn upper_set_fscore(upper: &[bool], f: &[f64], theta: f64) -> f64 {
    let (mut tp, mut n_est, mut n_true) = (0usize, 0usize, 0usize);
    for (&est, &fx) in upper.iter().zip(f) {
        let truth = fx >= theta;
        n_est += est as usize;
        n_true += truth as usize;
        tp += (est && truth) as usize;
    }
    let precision = if n_est == 0 { 0.0 } else { tp as f64 / n_est as f64 };
    let recall = if n_true == 0 { 0.0 } else { tp as f64 / n_true as f64 };
    if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_estimate_has_zero_loss_and_unit_fscore() {
        let f = [0.3, -1.0, 2.0, 0.5];
        assert_eq!(average_loss(&upper_set(&f, 0.5), &f, 0.5), 0.0);
        assert_eq!(upper_set_fscore(&upper_set(&f, 0.5), &f, 0.5), 1.0);
    }

    #[test]
    fn loss_divides_by_all_points_and_uses_true_distance_to_threshold() {
        let f = [2.0, -1.0, 0.0, 0.0];
        // x0 is upper but estimated lower (loss 2 - 0.5), x1 is lower but estimated upper (loss 1.5).
        let mean = [0.0, 1.0, 0.0, 0.0];
        assert_eq!(average_loss(&upper_set(&mean, 0.5), &f, 0.5), (1.5 + 1.5) / 4.0);
        // `>=`: a point exactly at theta is upper, so mu = theta classifies it correctly.
        assert_eq!(upper_set(&[0.5], 0.5), [true]);
        assert_eq!(average_loss(&[true], &[0.5], 0.5), 0.0);
    }

    #[test]
    fn fscore_edge_cases() {
        let f = [1.0, 1.0, -1.0, -1.0];
        assert_eq!(upper_set_fscore(&[false; 4], &f, 0.0), 0.0); // empty estimate
        assert_eq!(upper_set_fscore(&[true; 4], &[-1.0; 4], 0.0), 0.0); // empty truth
                                                                        // precision 1/2 (x0 right, x2 wrong), recall 1/2 -> F = 1/2.
        assert_eq!(upper_set_fscore(&[true, false, true, false], &f, 0.0), 0.5);
        // precision 2/3, recall 1 -> F = 0.8.
        let fs = upper_set_fscore(&[true, true, true, false], &f, 0.0);
        assert!((fs - 0.8).abs() < 1e-15);
    }
}
