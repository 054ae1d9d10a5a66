//! Acquisition rules of the finite experiments (spec section 2): each picks the next
//! candidate index from the current posterior mean and variance on the candidate set.

mod gotovos;
mod straddle;

pub use gotovos::{lse_beta_sqrt, RunningIntersection};
pub use straddle::{chi2_2_sqrt, randomized_straddle_af, straddle_af};

use armada_core::{ComponentDef, JobError, ParamDef, ParamKind, Params};
use rand::Rng;

/// How remaining exact ties in an argmax are broken (spec section 2.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreak {
    /// The lowest index in the canonical flattening (numpy `argmax`): the default.
    LowestIndex,
    /// Uniformly at random among the tied maximisers.
    Random,
}

/// What the randomized straddle does when its clipped acquisition is zero everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroRule {
    /// Default: argmax of the unclipped straddle with the same `beta_t` (one of the maximisers).
    Straddle,
    /// Paper-literal: numpy `argmax` of the clipped AF, i.e. the first index.
    FirstIndex,
}

/// An acquisition rule with its parameters and any state it keeps across steps.
#[derive(Clone, Debug, PartialEq)]
pub enum Acquisition {
    /// `x_t ~ Uniform(X)`, with replacement (section 2.3).
    Random,
    /// Uncertainty sampling: `argmax sigma^2` (section 2.2).
    Uncertainty { tie: TieBreak },
    /// Straddle (Bryan et al. 2005): `argmax beta^{1/2} sigma - |mu - theta|` with fixed `beta^{1/2}` (section 2.4).
    Straddle { beta_sqrt: f64, tie: TieBreak },
    /// The proposed randomized straddle, Algorithm 1 (section 2.5.1): `beta_t ~ chi2_2` fresh each step,
    /// `a = max(beta_t^{1/2} sigma - |mu - theta|, 0)`.
    RandomizedStraddle { zero_rule: ZeroRule, tie: TieBreak },
    /// LSE of Gotovos et al. as the paper runs it (section 2.6.2): the ambiguity
    /// `min(ucbT - theta, theta - lcbT)` with `beta_t^{1/2} = sqrt(2 ln(|X| pi^2 t^2 / (6 delta)))`;
    /// `ucbT`/`lcbT` are running intersections over iterations when `intersection` is set
    /// (finite sets), and this iteration's bounds otherwise.
    Lse { card_x: f64, delta: f64, intersection: Option<RunningIntersection>, tie: TieBreak },
}

/// One acquisition decision and what the records report about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub index: usize,
    /// The `beta^{1/2}` used (NaN for rules without one).
    pub beta_sqrt: f64,
    /// The maximum of the acquisition function (NaN for Random).
    pub af_max: f64,
}

const TIE_BREAK: ParamDef = ParamDef {
    name: "tie_break",
    kind: ParamKind::Choice { options: &["lowest-index", "random"], default: "lowest-index" },
    doc: "how exact ties in the argmax are broken (spec 2.8)",
};

/// The registry entries of the finite-set algorithms.
pub const ALGORITHMS: [ComponentDef; 5] = [
    ComponentDef { name: "random", doc: "uniform random candidate, with replacement (spec 2.3)", params: &[] },
    ComponentDef {
        name: "us",
        doc: "uncertainty sampling: argmax of the posterior variance (spec 2.2)",
        params: &[TIE_BREAK],
    },
    ComponentDef {
        name: "straddle",
        doc: "straddle heuristic of Bryan et al. 2005 with a fixed beta^1/2 (spec 2.4)",
        params: &[
            ParamDef {
                name: "beta_sqrt",
                kind: ParamKind::Float { min: 0.0, max: 1e3, default: 3.0 },
                doc: "the fixed confidence multiplier beta^1/2 (paper: 3)",
            },
            TIE_BREAK,
        ],
    },
    ComponentDef {
        name: "rand-straddle",
        doc: "the proposed randomized straddle, Algorithm 1: beta_t ~ chi2_2 each step (spec 2.5.1)",
        params: &[
            ParamDef {
                name: "zero_rule",
                kind: ParamKind::Choice { options: &["straddle", "first-index"], default: "straddle" },
                doc: "when the clipped AF is 0 everywhere: the straddle argmax with the same beta_t (default), \
                      or the paper-literal first index",
            },
            TIE_BREAK,
        ],
    },
    ComponentDef {
        name: "lse",
        doc: "LSE of Gotovos et al. 2013 as the paper runs it: theoretical beta_t, running intersection (spec 2.6.2)",
        params: &[
            ParamDef {
                name: "delta",
                kind: ParamKind::Float { min: 1e-12, max: 1.0, default: 0.05 },
                doc: "confidence parameter of beta_t",
            },
            ParamDef {
                name: "card_x",
                kind: ParamKind::Float { min: 0.0, max: 1e300, default: 0.0 },
                doc: "|X| in beta_t; 0 means the number of candidates of the benchmark",
            },
            ParamDef {
                name: "intersection",
                kind: ParamKind::Bool { default: true },
                doc: "keep the running intersection of credible intervals (the paper does on finite sets)",
            },
            TIE_BREAK,
        ],
    },
];

impl Acquisition {
    /// Build from a validated algorithm name and parameters, for `n_candidates` candidates.
    pub fn from_params(name: &str, params: &Params, n_candidates: usize) -> Result<Self, JobError> {
        let tie = || -> Result<TieBreak, JobError> {
            Ok(match params.str("tie_break")? {
                "random" => TieBreak::Random,
                _ => TieBreak::LowestIndex,
            })
        };
        Ok(match name {
            "random" => Acquisition::Random,
            "us" => Acquisition::Uncertainty { tie: tie()? },
            "straddle" => Acquisition::Straddle { beta_sqrt: params.float("beta_sqrt")?, tie: tie()? },
            "rand-straddle" => Acquisition::RandomizedStraddle {
                zero_rule: match params.str("zero_rule")? {
                    "first-index" => ZeroRule::FirstIndex,
                    _ => ZeroRule::Straddle,
                },
                tie: tie()?,
            },
            "lse" => Acquisition::Lse {
                card_x: match params.float("card_x")? {
                    0.0 => n_candidates as f64,
                    c => c,
                },
                delta: params.float("delta")?,
                intersection: params.bool("intersection")?.then(|| RunningIntersection::new(n_candidates)),
                tie: tie()?,
            },
            other => return Err(JobError::Invalid(format!("unknown lse algorithm `{other}`"))),
        })
    }

    /// Choose the candidate of iteration `t` (from 1). `rng` is the algorithm's private stream.
    pub fn select<R: Rng + ?Sized>(&mut self, t: u32, mean: &[f64], var: &[f64], theta: f64, rng: &mut R) -> Choice {
        let n = mean.len();
        match self {
            Acquisition::Random => Choice { index: rng.random_range(0..n), beta_sqrt: f64::NAN, af_max: f64::NAN },
            &mut Acquisition::Uncertainty { tie } => {
                let (index, af_max) = argmax(var.iter().copied(), tie, rng);
                Choice { index, beta_sqrt: f64::NAN, af_max }
            }
            &mut Acquisition::Straddle { beta_sqrt, tie } => {
                let (index, af_max) = argmax(straddle_af(mean, var, theta, beta_sqrt), tie, rng);
                Choice { index, beta_sqrt, af_max }
            }
            &mut Acquisition::RandomizedStraddle { zero_rule, tie } => {
                let beta_sqrt = chi2_2_sqrt(rng);
                let (index, af_max) = argmax(randomized_straddle_af(mean, var, theta, beta_sqrt), tie, rng);
                let index = match (af_max > 0.0, zero_rule) {
                    (true, _) => index,
                    (false, ZeroRule::Straddle) => argmax(straddle_af(mean, var, theta, beta_sqrt), tie, rng).0,
                    (false, ZeroRule::FirstIndex) => 0,
                };
                Choice { index, beta_sqrt, af_max }
            }
            Acquisition::Lse { card_x, delta, intersection, tie } => {
                let beta_sqrt = lse_beta_sqrt(*card_x, t, *delta);
                let (index, af_max) = match intersection {
                    Some(bounds) => {
                        bounds.update(mean, var, beta_sqrt);
                        argmax(bounds.ambiguity(theta), *tie, rng)
                    }
                    // Without intersection the ambiguity is exactly the straddle with the growing beta_t.
                    None => argmax(straddle_af(mean, var, theta, beta_sqrt), *tie, rng),
                };
                Choice { index, beta_sqrt, af_max }
            }
        }
    }
}

/// Index and value of the maximum; exact ties broken by `tie` (reservoir sampling for
/// `Random`, so one pass and no allocation). NaN values never win.
pub fn argmax<R: Rng + ?Sized>(values: impl Iterator<Item = f64>, tie: TieBreak, rng: &mut R) -> (usize, f64) {
    let (mut best_i, mut best_v, mut n_tied) = (0usize, f64::NEG_INFINITY, 0u32);
    for (i, v) in values.enumerate() {
        if v > best_v {
            (best_i, best_v, n_tied) = (i, v, 1);
        } else if v == best_v && tie == TieBreak::Random {
            n_tied += 1;
            if rng.random_range(0..n_tied) == 0 {
                best_i = i;
            }
        }
    }
    (best_i, best_v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn argmax_lowest_index_and_random_ties() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let v = [1.0, 3.0, f64::NAN, 3.0, 2.0, 3.0];
        assert_eq!(argmax(v.iter().copied(), TieBreak::LowestIndex, &mut rng), (1, 3.0));
        let mut counts = [0u32; 6];
        for _ in 0..3000 {
            counts[argmax(v.iter().copied(), TieBreak::Random, &mut rng).0] += 1;
        }
        assert_eq!(counts[0] + counts[2] + counts[4], 0);
        for i in [1, 3, 5] {
            assert!((900..1100).contains(&counts[i]), "{counts:?}");
        }
    }

    #[test]
    fn randomized_straddle_zero_rules() {
        // Every point is far from theta relative to sigma: the clipped AF is 0 everywhere
        // (that needs beta^1/2 > 20, probability exp(-200)).
        let mean = [5.0, 4.0, -3.0];
        let var = [0.01, 0.04, 0.01];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut algo = Acquisition::RandomizedStraddle { zero_rule: ZeroRule::Straddle, tie: TieBreak::LowestIndex };
        let c = algo.select(1, &mean, &var, 0.0, &mut rng);
        assert_eq!(c.af_max, 0.0);
        // beta^1/2 sigma - |mu|: index 2 has |mu| = 3, the smallest distance, and it dominates for beta^1/2 < 10.
        assert_eq!(c.index, 2);
        let mut literal =
            Acquisition::RandomizedStraddle { zero_rule: ZeroRule::FirstIndex, tie: TieBreak::LowestIndex };
        assert_eq!(literal.select(1, &mean, &var, 0.0, &mut rng).index, 0);
    }

    #[test]
    fn straddle_prefers_uncertain_points_near_the_threshold() {
        let mean = [0.0, 1.0, 0.1];
        let var = [0.01, 1.0, 0.25];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut algo = Acquisition::Straddle { beta_sqrt: 3.0, tie: TieBreak::LowestIndex };
        // values: 0.3 - 0 = 0.3; 3 - 1 = 2; 1.5 - 0.1 = 1.4
        let c = algo.select(1, &mean, &var, 0.0, &mut rng);
        assert_eq!((c.index, c.af_max), (1, 2.0));
        let mut us = Acquisition::Uncertainty { tie: TieBreak::LowestIndex };
        assert_eq!(us.select(1, &mean, &var, 0.0, &mut rng).index, 1);
    }
}
