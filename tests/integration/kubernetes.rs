//! The Kubernetes manifests of `deploy/kubernetes/`: valid against the Kubernetes schemas
//! (strict: an unknown field is an error), by `kubernetes-validate` from PyPI in a venv
//! the test makes, and consistent with what the binary does (`tests/support/check_manifests.py`:
//! flags, the token Secret, probe, ports, volume, Service, slots, grace period). No cluster.

use crate::common;

use common::{python_venv, text};
use std::process::Command;

/// The Kubernetes version the manifests are checked against.
const KUBERNETES: &str = "1.33";

#[test]
fn the_manifests_validate_against_the_schemas_and_agree_with_the_binary() {
    let root = common::manifest_dir();
    let python = python_venv("venv-kubernetes", &root.join("deploy/kubernetes/requirements.txt"));
    let manifests = [root.join("deploy/kubernetes/coordinator.yaml"), root.join("deploy/kubernetes/workers.yaml")];
    let validate = python.parent().unwrap().join("kubernetes-validate");
    let out = Command::new(validate).args(["--strict", "-k", KUBERNETES]).args(&manifests).output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "kubernetes-validate:\n{said}");
    assert_eq!(said.matches("passed for resource").count(), 3, "{said}");

    let out = Command::new(&python)
        .arg(root.join("tests/support/check_manifests.py"))
        .arg(env!("CARGO_BIN_EXE_armada"))
        .args(&manifests)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the manifests disagree with the binary:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}
