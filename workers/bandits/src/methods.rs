//! The tuners compared in every panel of the CDT paper, by name: what a job's `algorithm`
//! builds. Apart from `tuner.rs` so that the baselines there and CDT (`cdt.rs`) depend on the
//! `Tuner` trait, and this module on both.

use crate::cdt::{Cdt, CdtConfig};
use crate::tuner::{CandidateSet, FixedExploration, Op, Syndicated, Theory, Tl, Tuner};

/// The methods compared in every panel of the paper (Section 5, Figure 2), for building them by name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TunerKind {
    Theory,
    Op(CandidateSet),
    /// TL for `p = 1`, Syndicated for `p >= 2` (the paper's "TL/Syndicated" row).
    TlOrSyndicated(CandidateSet),
    /// TL-combined (the code's product-grid EXP3) for any `p`.
    Tl(CandidateSet),
    Cdt(CdtConfig),
    /// [`FixedExploration`] with this value.
    FixedExploration(f64),
}

impl TunerKind {
    /// A fresh tuner for a bandit with `p` hyperparameters.
    pub fn build(self, p: usize) -> Box<dyn Tuner> {
        match self {
            TunerKind::Theory => Box::new(Theory),
            TunerKind::Op(set) => Box::new(Op::new(set.values())),
            TunerKind::TlOrSyndicated(set) if p >= 2 => Box::new(Syndicated::new(set.values())),
            TunerKind::TlOrSyndicated(set) | TunerKind::Tl(set) => Box::new(Tl::new(set.values())),
            TunerKind::Cdt(config) => Box::new(Cdt::new(config)),
            TunerKind::FixedExploration(value) => Box::new(FixedExploration(value)),
        }
    }
}
