//! House rules as tests: the dependency invariants of ARCHITECTURE.md, and a `//!`
//! doc comment at the top of every Rust file.

use crate::common;
mod module_graph;

use module_graph::{find_cycle, Graph};
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
/// The crates under `workers/` that are libraries of the families, or their users, not families.
const NOT_FAMILIES: &[&str] = &[
    "armada-core",
    "armada-math",
    "armada-linalg",
    "armada-gp",
    "armada-worker",
    "armada-numbench",
    "armada-bindings",
    "armada-golden",
];

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

/// Within each crate, the siblings of every module depend on each other without cycles
/// (test code aside; see `module_graph` for what counts as an edge): a module can be read,
/// and changed, after the ones it uses.
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
        let graph = Graph::new(&module_graph::read_sources(&src));
        checked += graph.edge_count();
        if let Some(cycle) = graph.cycle() {
            panic!("{}: the modules import each other in a cycle: {cycle}", src.display());
        }
    }
    assert!(checked > 80, "only {checked} imports between modules found: is the scan still reading them?");
}

/// `armada report` (and the offline summaries) read results, not the coordinator.
#[test]
fn the_offline_report_does_not_depend_on_the_coordinator() {
    let graph = Graph::new(&module_graph::read_sources(&common::manifest_dir().join("src")));
    assert!(!graph.depends(&["report"], &["coordinator"]), "report names the coordinator");
    assert!(!graph.depends(&["results"], &["coordinator"]), "results names the coordinator");
}

/// The coordinator's layers import only those below them: state <- durable <- scheduler
/// <- surface (ARCHITECTURE.md's code map).
#[test]
fn the_coordinators_layers_import_only_downward() {
    let graph = Graph::new(&module_graph::read_sources(&common::manifest_dir().join("src")));
    let layers = ["state", "durable", "scheduler", "surface"];
    for (i, lower) in layers.iter().enumerate() {
        for upper in &layers[i + 1..] {
            assert!(
                !graph.depends(&["coordinator", lower], &["coordinator", upper]),
                "coordinator::{lower} imports coordinator::{upper}, a layer above it"
            );
        }
        if i > 0 {
            assert!(
                graph.depends(&["coordinator", lower], &["coordinator", layers[i - 1]]),
                "coordinator::{lower} imports nothing of coordinator::{}: is the scan reading the layers?",
                layers[i - 1]
            );
        }
    }
}

/// The coordinator speaks the protocol (`armada-proto`: wire conversions, the token,
/// dialing, the lease depth), never the worker process's crate.
#[test]
fn the_coordinator_does_not_import_the_worker_crate() {
    let sources = module_graph::read_sources(&common::manifest_dir().join("src"));
    let coordinator: Vec<_> = sources.iter().filter(|(file, _)| file.starts_with("coordinator/")).collect();
    assert!(coordinator.len() > 20, "only {} coordinator files found", coordinator.len());
    let naming: Vec<&String> = coordinator
        .iter()
        .filter(|(_, text)| text.contains("armada_worker::") || text.contains("use armada_worker"))
        .map(|(file, _)| *file)
        .collect();
    assert!(naming.is_empty(), "coordinator files naming armada_worker: {naming:?}");
}

#[test]
fn the_cycle_check_sees_groups_globs_reexports_submodules_and_code_after_tests() {
    let sources = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    };
    // Grouped imports and inline paths, comments and strings ignored, test items dropped
    // but the code after them read.
    let graph = Graph::new(&sources(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a.rs", "use crate::{b::X, c};\n// crate::c\nfn f() { let s = \"crate::b\"; }"),
        ("b.rs", "#[cfg(test)]\nmod tests { use crate::a; }\nfn g() { crate::c::h(); }"),
        ("c.rs", "#[cfg(test)]\nuse crate::a::Y;\nfn h() {}\nstruct S { x: u8, #[cfg(test)] y: crate::a::Y }"),
    ]));
    assert!(graph.depends(&["a"], &["b"]) && graph.depends(&["a"], &["c"]) && graph.depends(&["b"], &["c"]));
    assert!(!graph.depends(&["b"], &["a"]) && !graph.depends(&["c"], &["a"]));
    assert_eq!(graph.cycle(), None);
    // A cycle among sub-modules, one edge after a test block.
    let graph = Graph::new(&sources(&[
        ("lib.rs", "pub mod coordinator;"),
        ("coordinator/mod.rs", "pub mod scheduler; pub mod commit; pub mod live;"),
        ("coordinator/scheduler.rs", "use super::commit::Commit;"),
        ("coordinator/commit.rs", "use super::live::Live;"),
        ("coordinator/live.rs", "#[cfg(test)]\nmod tests {}\nuse super::scheduler::SummaryInputs;"),
    ]));
    assert_eq!(graph.cycle().unwrap(), "coordinator: commit -> live -> scheduler -> commit");
    // A cycle through a glob of the parent's re-exports (only the names used count).
    let files = [
        ("lib.rs", "mod results;"),
        (
            "results/mod.rs",
            "mod along; mod summary; mod part;\npub use along::{along_file, Run};\npub use summary::summarize;",
        ),
        ("results/along.rs", "use super::*;\nfn along_file() { summarize(); }"),
        ("results/summary.rs", "use super::*;\nfn summarize() -> Run {}"),
        ("results/part.rs", "use super::*;\nfn p() {}"),
    ];
    assert_eq!(Graph::new(&sources(&files)).cycle().unwrap(), "results: along -> summary -> along");
    let graph = Graph::new(&sources(&files[..4]));
    assert!(!graph.depends(&["results", "part"], &["results", "along"]));
    // A module of tests only is left out.
    let graph = Graph::new(&sources(&[
        ("lib.rs", "mod a; #[cfg(test)] mod support;"),
        ("a.rs", "fn f() {}"),
        ("support.rs", "use crate::a::f;"),
    ]));
    assert!(!graph.depends(&["support"], &["a"]));
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

/// Today's sources with one of the import circles of old put back (live naming the scheduler,
/// along or part naming the summary that reads them): the check finds each.
#[test]
fn the_cycle_check_finds_the_old_circles_put_back() {
    let src = common::manifest_dir().join("src");
    let mut sources = module_graph::read_sources(&src);
    let live = sources.get_mut("coordinator/durable/summarizer.rs").unwrap();
    live.push_str("\nfn back() { let _ = crate::coordinator::scheduler::SchedulerHandle::clone; }\n");
    let cycle = Graph::new(&sources).cycle().expect("live -> scheduler closes a circle");
    assert!(cycle.starts_with("coordinator: ") && cycle.contains("scheduler") && cycle.contains("durable"), "{cycle}");
    for (file, back) in [
        ("results/along.rs", "use super::summary::summarize_cell;"),
        ("results/part/mod.rs", "fn back() { let _ = super::summary::summarize_cell; }"),
    ] {
        let mut sources = module_graph::read_sources(&src);
        sources.get_mut(file).unwrap().push_str(&format!("\n{back}\n"));
        let cycle = Graph::new(&sources).cycle().unwrap_or_else(|| panic!("{file}: `{back}` closes no circle"));
        assert!(cycle.starts_with("results: ") && cycle.contains("summary"), "{cycle}");
    }
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

/// Paths of the machine armada is built on, which a clone elsewhere does not have: its
/// checkout and workshop, its home directory.
const MACHINE_PATHS: &[&str] = &["/work/", "/root/", "../shared/", "shared/specs/", "/home/"];

/// The repository stands alone: no tracked text file (docs, scripts, CI, code) names a path
/// of the build machine or a document its reader does not have (the workshop's
/// implementation specs, its issue numbers: comments cite the papers themselves), and every
/// relative Markdown link resolves to a file or directory inside the repository.
#[test]
fn the_docs_scripts_and_ci_stay_inside_the_repository() {
    let root = common::manifest_dir().canonicalize().unwrap();
    let listed = Command::new("git").args(["ls-files", "-z"]).current_dir(&root).output();
    let Some(files) = listed.ok().filter(|o| o.status.success()) else {
        eprintln!("not a git checkout: skipped");
        return;
    };
    let files: Vec<&str> = std::str::from_utf8(&files.stdout).unwrap().split('\0').filter(|f| !f.is_empty()).collect();
    // This file names the paths it looks for.
    let this = "tests/integration/architecture.rs";
    let mut found = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue }; // binary
        for (n, line) in text.lines().enumerate() {
            if *file != this {
                if let Some(path) = MACHINE_PATHS.iter().find(|p| line.contains(*p)) {
                    found.push(format!("{file}:{}: names `{path}`", n + 1));
                }
                if let Some(what) = outside_document(line) {
                    found.push(format!("{file}:{}: cites {what}", n + 1));
                }
            }
            if file.ends_with(".md") {
                for target in markdown_links(line) {
                    if let Some(problem) = link_problem(&root, Path::new(file), target) {
                        found.push(format!("{file}:{}: link `{target}` {problem}", n + 1));
                    }
                }
            }
        }
    }
    assert!(files.len() > 100 && files.contains(&"README.md"), "git ls-files listed {} files", files.len());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// What a line cites that a reader of the repository does not have, if anything: a section,
/// gotcha or file of an implementation spec, or an issue by number.
fn outside_document(line: &str) -> Option<&'static str> {
    let line = line.to_lowercase();
    let followed_by_number = |word: &str| {
        line.match_indices(word).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + word.len()..].trim_start_matches('#');
            before.is_none_or(|c| !c.is_alphanumeric() && c != '_') && after.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    if line.contains("specs/") || line.contains("implementation spec") {
        Some("an implementation spec")
    } else if line.contains("spec section") || line.contains("spec gotcha") || followed_by_number("spec ") {
        Some("an implementation spec's section")
    } else if followed_by_number("issue ") || followed_by_number("issues ") {
        Some("an issue by number")
    } else {
        None
    }
}

/// The targets of a line's inline Markdown links, `[text](target)` or `[text](<target>)`
/// (an optional title after a space is not part of it).
fn markdown_links(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let (target, end) = match after.strip_prefix('<') {
            // `[text](<a path with spaces>)`
            Some(inner) => {
                let end = inner.find('>').unwrap_or(inner.len());
                (&inner[..end], end + 1)
            }
            None => {
                let end = after.find([')', ' ']).unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        out.push(target);
        rest = &after[end..];
    }
    out
}

/// Why a link of `file` (relative to the root) does not stay inside the repository, if so.
fn link_problem(root: &Path, file: &Path, target: &str) -> Option<&'static str> {
    if target.is_empty() || target.starts_with('#') || target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let path = target.split('#').next().unwrap();
    if path.starts_with('/') {
        return Some("is an absolute path");
    }
    let resolved = root.join(file).parent().unwrap().join(path);
    match resolved.canonicalize() {
        Err(_) => Some("names nothing in the repository"),
        Ok(p) if !p.starts_with(root) => Some("leads outside the repository"),
        Ok(_) => None,
    }
}

#[test]
fn the_link_check_finds_outside_and_missing_targets() {
    let root = common::manifest_dir().canonicalize().unwrap();
    let readme = Path::new("docs/papers.md");
    assert_eq!(
        markdown_links("see [a](../README.md#x) and [b](<c d.md>) [c](e.md \"t\")"),
        ["../README.md#x", "c d.md", "e.md"]
    );
    assert_eq!(link_problem(&root, readme, "../README.md#the-two-commands"), None);
    assert_eq!(link_problem(&root, readme, "https://arxiv.org/abs/2408.03144"), None);
    assert_eq!(link_problem(&root, readme, "../no-such-dir/spec.md"), Some("names nothing in the repository"));
    assert_eq!(link_problem(&root, readme, "../.."), Some("leads outside the repository"));
    assert_eq!(link_problem(&root, readme, "/etc/hosts"), Some("is an absolute path"));
    assert_eq!(link_problem(&root, readme, "nope.md"), Some("names nothing in the repository"));
}

#[test]
fn the_citation_check_finds_specs_and_issues_but_not_job_specs() {
    for line in [
        "// MILE (spec 2.7): the double loop",
        "see specs/lse_straddle.md",
        "the implementation spec says",
        "(spec sections 2.5.2 and 2.5.3)",
        "as spec gotcha 15 foresaw",
        "## Before issue 36's numerics",
        "(Issue #17, item 6)",
    ] {
        assert!(outside_document(line).is_some(), "{line}");
    }
    for line in [
        "let spec = JobSpec::new(1);",
        "the paper's Section 2.7, Eq. (7)",
        "no issue here; an issue with 3 parts",
        "WireSpec 4",
    ] {
        assert_eq!(outside_document(line), None, "{line}");
    }
}

/// The state layer (`src/coordinator/state`: the scheduler's state machines, its recovery
/// and the types they answer in) is pure: no I/O, no clock, no runtime. Its code (tests
/// aside) imports only std, itself, the domain crates and the protocol's types, and names
/// none of the things the scheduler executes for it.
#[test]
fn the_state_machines_do_no_io_and_read_no_clock() {
    let allowed = [
        "use std::",
        "use super::",
        "use armada_core::",
        "use armada_proto::",
        "use prost::",
        "use crate::results::",
        "use tracing::",
    ];
    let dir = common::manifest_dir().join("src/coordinator/state");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    assert!(files.len() >= 12, "only {} files in {}", files.len(), dir.display());
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
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
            assert!(allowed.iter().any(|a| line.starts_with(a)), "{file} imports `{line}`");
        }
        let forbidden = [
            "tokio",
            "durable::",
            "scheduler::",
            "surface::",
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
            // A name counts whole (`Store`, not `StoredJob`); other marks as written.
            let whole = |at: usize| {
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !forbidden.chars().all(char::is_alphanumeric)
                    || (!ident(code[..at].chars().last()) && !ident(code[at + forbidden.len()..].chars().next()))
            };
            assert!(
                !code.match_indices(forbidden).any(|(at, _)| whole(at)),
                "{file} (outside its tests) names `{forbidden}`"
            );
        }
    }
}
