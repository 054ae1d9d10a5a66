//! The families this build of armada runs: the papers' (listed once, in armada-families)
//! and the test kit of the worker runtime. Coordinator and workers must run the same
//! registry; its digest is checked at registration.

use armada_core::Registry;

/// Every family this build can run, in the order `armada list` shows them.
pub fn registry() -> Registry {
    let mut families = armada_families::paper_family_list();
    families.push(Box::new(armada_worker::testkit::TestkitFamily));
    families.push(Box::new(armada_worker::testkit::TestkitShortFamily));
    Registry::new(families)
}
