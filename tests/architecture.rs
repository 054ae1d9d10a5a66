//! House rules as tests: the dependency invariants of ARCHITECTURE.md, and a `//!`
//! doc comment at the top of every Rust file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// The crates that must stay plain synchronous Rust: no runtime, wire or dataframe crates.
const PURE: &[&str] = &["armada-core", "armada-gp", "armada-lse", "armada-bandits", "armada-safe", "armada-cvs"];
const FORBIDDEN: &[&str] = &["tokio", "tonic", "prost", "polars", "armada-proto", "armada"];
/// The worker runtime speaks gRPC but needs neither dataframes nor the store (compile time,
/// binary size): polars and SQLite stay in the root crate.
const WORKER_RUNTIME: &str = "armada-worker";
const WORKER_FORBIDDEN: &[&str] = &["polars", "rusqlite", "armada"];

#[test]
fn worker_crates_depend_on_no_runtime_wire_or_dataframe_crate() {
    // Only this platform's dependency graph: the crates of other platforms (android_*,
    // windows-*) are never downloaded on a fresh machine, and metadata over all platforms
    // would need them.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc).arg("-vV").output().expect("rustc -vV runs");
    let version = String::from_utf8(version.stdout).unwrap();
    let host = version.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc names its host");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--filter-platform", host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    // Normal (non-dev, non-build) dependency edges only.
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()))
            .map(|d| d["pkg"].as_str().unwrap())
            .collect();
        edges.insert(node["id"].as_str().unwrap(), deps);
    }
    let rules = PURE.iter().map(|k| (*k, FORBIDDEN)).chain([(WORKER_RUNTIME, WORKER_FORBIDDEN)]);
    for (krate, forbidden) in rules {
        let root = name_of.iter().find(|(_, n)| **n == krate).map(|(id, _)| *id).expect("crate in workspace");
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(edges.get(id).into_iter().flatten().copied());
            }
        }
        let names: BTreeSet<&str> = seen.iter().map(|id| name_of[id]).collect();
        for bad in forbidden {
            assert!(!names.contains(bad), "{krate} depends on {bad}");
        }
    }
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for dir in ["src", "workers", "proto", "tests"] {
        visit(&root.join(dir), &mut |path| {
            let text = std::fs::read_to_string(path).unwrap();
            if !text.trim_start().starts_with("//!") {
                missing.push(path.display().to_string());
            }
        });
    }
    assert!(missing.is_empty(), "files without a leading //! doc: {missing:?}");
}

fn visit(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n != "target") {
            visit(&path, f);
        } else if path.extension().is_some_and(|e| e == "rs") {
            f(&path);
        }
    }
}
