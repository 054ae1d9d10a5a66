//! House rules as tests: the dependency invariants of ARCHITECTURE.md, and a `//!`
//! doc comment at the top of every Rust file.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Every crate under `workers/` but the runtime must stay plain synchronous Rust: no
/// runtime, wire or dataframe crates.
const FORBIDDEN: &[&str] = &["tokio", "tonic", "prost", "polars", "armada-proto", "armada"];
/// The worker runtime speaks gRPC but needs neither dataframes nor the store (compile time,
/// binary size): polars and SQLite stay in the root crate. It runs the registry it is
/// given, so it depends on no family either (the binary assembles the registry).
const WORKER_RUNTIME: &str = "armada-worker";
const WORKER_FORBIDDEN: &[&str] = &["polars", "rusqlite", "armada"];
/// The crates under `workers/` that are libraries of the families, not families.
const NOT_FAMILIES: &[&str] =
    &["armada-core", "armada-math", "armada-linalg", "armada-gp", "armada-worker", "armada-numbench"];

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
        .current_dir(common::manifest_dir())
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
    // The crates under workers/, found from their manifests: a new family crate is checked
    // without being listed here.
    let workers_dir = common::manifest_dir().join("workers");
    let under_workers: Vec<&str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| Path::new(p["manifest_path"].as_str().unwrap()).starts_with(&workers_dir))
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(under_workers.len() >= 7, "{under_workers:?}");
    let families: Vec<&str> = under_workers.iter().copied().filter(|n| !NOT_FAMILIES.contains(n)).collect();
    let runtime_forbidden: Vec<&str> = WORKER_FORBIDDEN.iter().copied().chain(families.iter().copied()).collect();
    let pure = under_workers.iter().filter(|n| **n != WORKER_RUNTIME).map(|k| (*k, FORBIDDEN));
    let rules = pure.chain([(WORKER_RUNTIME, &runtime_forbidden[..])]);
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
    let root = common::manifest_dir();
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

/// The top-level modules a file's non-test code names through `crate::` (and, in a
/// top-level file, `super::`), out of `modules`. Comments (doc links) do not count.
fn modules_named(text: &str, top_level: bool, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let code: String = code.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut named = BTreeSet::new();
    let prefixes: &[&str] = if top_level { &["crate::", "super::"] } else { &["crate::"] };
    for prefix in prefixes {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `crate::{a::X, b}`: the first name of each item at the group's top level.
                let (mut depth, mut item_start) = (0, true);
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && !c.is_whitespace() => {
                            named.insert(ident(&group[i..]));
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                named.insert(ident(rest));
            }
        }
    }
    named.retain(|m| modules.contains(m));
    named
}

/// A cycle in `edges`, as a path that ends where it starts.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

/// Within each crate, the top-level modules depend on each other without cycles (test code
/// aside): a module can be read, and changed, after the ones it uses.
#[test]
fn the_modules_of_every_crate_import_each_other_without_cycles() {
    let root = common::manifest_dir();
    let mut crates = vec![root.join("src"), root.join("proto/src")];
    for entry in std::fs::read_dir(root.join("workers")).unwrap().flatten() {
        // Every crate (workers/python, the Python SDK, is none).
        if entry.path().join("Cargo.toml").is_file() {
            crates.push(entry.path().join("src"));
        }
    }
    let mut checked = 0;
    for src in crates {
        let mut modules = BTreeSet::new();
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let path = entry.path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if (path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
                && !["lib", "main"].contains(&stem.as_str())
            {
                modules.insert(stem);
            }
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for module in &modules {
            let file = src.join(format!("{module}.rs"));
            let mut named = BTreeSet::new();
            if file.is_file() {
                named.extend(modules_named(&std::fs::read_to_string(&file).unwrap(), true, &modules));
            }
            visit(&src.join(module), &mut |path| {
                let top_level =
                    path.file_name().is_some_and(|n| n == "mod.rs") && path.parent() == Some(&src.join(module));
                named.extend(modules_named(&std::fs::read_to_string(path).unwrap(), top_level, &modules));
            });
            named.remove(module);
            edges.insert(module.clone(), named);
        }
        checked += edges.values().map(BTreeSet::len).sum::<usize>();
        if let Some(cycle) = find_cycle(&edges) {
            panic!("{}: the modules import each other in a cycle: {}", src.display(), cycle.join(" -> "));
        }
    }
    assert!(checked > 50, "only {checked} imports between modules found: is the scan still reading them?");
}

#[test]
fn the_cycle_check_sees_grouped_imports_and_cycles() {
    let modules: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let named =
        modules_named("use crate::{a::X, b};\nfn f() { crate::c::g(); }\n#[cfg(test)]\nuse crate::b;", true, &modules);
    assert_eq!(named, modules);
    let named =
        modules_named("use super::a; // [`crate::c`]\n#[cfg(test)]\nmod tests { use crate::b; }", false, &modules);
    assert!(named.is_empty(), "{named:?}");
    let edges = |pairs: &[(&str, &str)]| {
        let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in pairs {
            e.entry(from.to_string()).or_default().insert(to.to_string());
        }
        e
    };
    assert_eq!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
}

/// The README names every family the registry has (`armada list` prints their schemas):
/// a new family is documented where users look.
#[test]
fn the_readme_names_every_family() {
    let readme = std::fs::read_to_string(common::manifest_dir().join("README.md")).unwrap();
    let missing: Vec<&str> =
        armada::registry().families().map(|f| f.name()).filter(|name| !readme.contains(&format!("`{name}`"))).collect();
    assert!(missing.is_empty(), "README.md does not name the families {missing:?} (as `name`)");
}

/// The scheduler's state machines are pure: no I/O, no clock, no runtime. Their code
/// (tests aside) imports only std and each other's domain types, and names none of the
/// things the scheduler executes for them.
#[test]
fn the_state_machines_do_no_io_and_read_no_clock() {
    let pure: [(&str, &[&str]); 3] = [
        (
            "table.rs",
            &[
                "use super::jobs::",
                "use super::queue::",
                "use super::replies::CommandError;",
                "use super::store::JobState;",
            ],
        ),
        (
            "sweeps.rs",
            &["use super::jobs::", "use super::replies::", "use super::store::JobState;", "use super::table::"],
        ),
        ("sessions.rs", &["use super::replies::", "use armada_core::Registry;"]),
    ];
    for (file, allowed) in pure {
        let path = common::manifest_dir().join("src/coordinator").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        // Its code, without its tests and comments.
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| format!("{l}\n"))
            .collect();
        for line in code.lines().filter(|l| l.starts_with("use ")) {
            assert!(
                line.starts_with("use std::") || allowed.iter().any(|a| line.starts_with(a)),
                "{file} imports `{line}`"
            );
        }
        let forbidden = [
            "tokio",
            "Store",
            "Spools",
            "spool::",
            "LiveSummaries",
            "Commit {",
            "rusqlite",
            "::now()",
            "std::fs",
            "spawn",
            "random_secret",
        ];
        for forbidden in forbidden {
            assert!(!code.contains(forbidden), "{file} (outside its tests) names `{forbidden}`");
        }
    }
}
