//! The families this build of armada runs: the one place that lists them (with the
//! crate's line in Cargo.toml). Coordinator and workers must run the same registry; its
//! digest is checked at registration.

use armada_core::Registry;

/// Every family this build can run, in the order `armada list` shows them.
pub fn registry() -> Registry {
    Registry::new(vec![
        Box::new(armada_lse::LseFamily),
        Box::new(armada_bandits::BanditsFamily),
        Box::new(armada_bandits::LipschitzFamily),
        Box::new(armada_bandits::LipschitzCheckFamily),
        Box::new(armada_safe::SafeFamily),
        Box::new(armada_cvs::CvsFamily),
        Box::new(armada_worker::testkit::TestkitFamily),
        Box::new(armada_worker::testkit::TestkitShortFamily),
    ])
}
