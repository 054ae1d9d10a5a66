//! The papers' families, the one place that lists them: the armada binary adds its test kit
//! to them (`src/families.rs`), and the golden runner, the numerics benchmark and the Python
//! bindings take them as they are. No tokio, tonic or polars, so that every one of those
//! builds without them.

use armada_core::{Family, Registry};

/// Every paper family, in the order `armada list` shows them.
pub fn paper_family_list() -> Vec<Box<dyn Family>> {
    vec![
        Box::new(armada_lse::LseFamily),
        Box::new(armada_bandits::BanditsFamily),
        Box::new(armada_bandits::LipschitzFamily),
        Box::new(armada_bandits::LipschitzCheckFamily),
        Box::new(armada_safe::SafeFamily),
        Box::new(armada_cvs::CvsFamily),
    ]
}

/// A registry of the paper families.
pub fn paper_families() -> Registry {
    Registry::new(paper_family_list())
}
