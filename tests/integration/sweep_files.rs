//! Every sweep file shipped in sweeps/ validates, and each `-quick` variant has the
//! benchmarks and algorithms of its full sweep (only seeds and horizon shrink).

use crate::common;

use std::collections::BTreeSet;

fn cells(sweep: &armada::sweep::Sweep) -> BTreeSet<(String, String, String, String)> {
    sweep
        .jobs
        .iter()
        .map(|j| {
            let s = &j.spec;
            (s.benchmark.clone(), s.benchmark_params.to_string(), s.algorithm.clone(), s.algorithm_params.to_string())
        })
        .collect()
}

#[test]
fn shipped_sweeps_validate_and_quick_variants_match_their_full_sweeps() {
    let registry = armada::registry();
    let dir = common::manifest_dir().join("sweeps");
    let mut n_files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        n_files += 1;
        let sweep = armada::sweep::load_sweep(&path, &registry).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(sweep.name, stem, "a sweep's name should be its file stem");
        if let Some(full) = stem.strip_suffix("-quick") {
            let full_path = dir.join(format!("{full}.toml"));
            let full = armada::sweep::load_sweep(&full_path, &registry).unwrap();
            // Benchmark params may differ (e.g. smaller evaluation sets); names and algorithms may not.
            let names = |s: &armada::sweep::Sweep| -> BTreeSet<(String, String, String)> {
                cells(s).into_iter().map(|(b, _, a, ap)| (b, a, ap)).collect()
            };
            assert_eq!(names(&sweep), names(&full), "{stem} and {} differ in cells", full_path.display());
            assert!(sweep.jobs.len() < full.jobs.len());
        }
    }
    assert!(n_files >= 2);
}
