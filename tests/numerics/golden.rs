//! Golden trajectories: a fixed small set of jobs per family (the sweep files
//! `workers/<crate>/golden/*.toml` of the family's crate, grouped by their `family`) whose
//! trajectories must come out bit for bit as `golden/<family>.txt` beside them records
//! them (every value, elapsed_ms aside).
//!
//! A family whose jobs compute something else fails here until its version
//! (`Family::version`) is bumped. A family whose version differs from its file's gets its
//! file written afresh (the regeneration that a bump runs); `.ci/run` then refuses the
//! change until the new file is committed, so the comparison is never skipped in CI.

use crate::common;

use armada::{registry, sweep};
use armada_core::{Family, ValidJob};
use armada_golden as golden;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Set in the copies of this test that [`the_same_bits_on_every_processor_model`] runs: they
/// compare and never write.
const COMPARE_ONLY: &str = "ARMADA_GOLDEN_COMPARE_ONLY";
/// Set there too: the families a copy compares (all when unset).
const ONLY_FAMILIES: &str = "ARMADA_GOLDEN_FAMILIES";

/// Every golden sweep file, in a stable order.
fn golden_files() -> Vec<PathBuf> {
    let workers = common::manifest_dir().join("workers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(workers)
        .unwrap()
        .flat_map(|krate| std::fs::read_dir(krate.unwrap().path().join("golden")).into_iter().flatten())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Every golden sweep, by family: the directory of its golden files, and its jobs in order.
fn golden_jobs(registry: &armada_core::Registry) -> BTreeMap<String, (PathBuf, Vec<ValidJob>)> {
    let mut by_family: BTreeMap<String, (PathBuf, Vec<ValidJob>)> = BTreeMap::new();
    for path in golden_files() {
        let s = sweep::load_sweep(&path, registry).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let dir = path.parent().unwrap().to_path_buf();
        let entry = by_family.entry(s.family.clone()).or_insert_with(|| (dir.clone(), Vec::new()));
        assert_eq!(entry.0, dir, "the golden files of family `{}` are in two directories", s.family);
        entry.1.extend(s.jobs);
    }
    by_family
}

/// What a family's recorded golden text and a computed one disagree on, if anything.
fn compare(family: &dyn Family, recorded: &str, computed: &str, path: &std::path::Path) -> Option<String> {
    if golden::data(recorded) == golden::data(computed) {
        return None;
    }
    let name = family.name();
    Some(format!(
        "family `{name}` (version {}) no longer computes its golden trajectories: {}\n  \
         If the change is meant, bump `{name}`'s version (its `Family::version`, with the \
         reason beside it): its results of older code are then not resumed, and this test \
         rewrites {} for you to commit. If it is not meant, it is a regression.",
        family.version(),
        golden::first_difference(family, &golden::data(recorded), &golden::data(computed)),
        path.display()
    ))
}

#[test]
fn every_family_computes_its_golden_trajectories_bit_for_bit() {
    let registry = registry();
    let by_family = golden_jobs(&registry);
    let mut failures = Vec::new();
    // The processor-model copies may each take some families (a comma-separated list).
    let only = std::env::var(ONLY_FAMILIES).ok();
    for family in registry.families() {
        let name = family.name();
        if only.as_deref().is_some_and(|only| !only.split(',').any(|f| f == name)) {
            continue;
        }
        let Some((dir, jobs)) = by_family.get(name) else {
            failures.push(format!("family `{name}` has no golden jobs: add golden/{name}.toml to its crate"));
            continue;
        };
        let computed = golden::render(family, &golden::run(&registry, jobs));
        let path = dir.join(format!("{name}.txt"));
        let recorded = std::fs::read_to_string(&path).unwrap_or_default();
        let recorded_version = golden::recorded_version(&recorded);
        if recorded_version != Some(family.version()) {
            if std::env::var_os(COMPARE_ONLY).is_some() {
                failures
                    .push(format!("family `{name}`: version {} recorded as {recorded_version:?}", family.version()));
                continue;
            }
            std::fs::write(&path, &computed).unwrap();
            eprintln!(
                "family `{name}`: version {} (recorded {recorded_version:?}): wrote {}; commit it",
                family.version(),
                path.display()
            );
            continue;
        }
        failures.extend(compare(family, &recorded, &computed, &path));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every benchmark and every algorithm of every family runs in its golden jobs, so that a
/// change to any of them that alters what it computes fails above.
#[test]
fn golden_jobs_cover_every_benchmark_and_algorithm() {
    let registry = registry();
    let mut covered: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
    let files = golden_files();
    let sweeps: Vec<sweep::Sweep> = files
        .iter()
        .map(|p| sweep::load_sweep(p, &registry).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    for s in &sweeps {
        let entry = covered.entry(s.family.as_str()).or_default();
        for job in &s.jobs {
            entry.0.push(job.spec.benchmark.clone());
            entry.1.push(job.spec.algorithm.clone());
        }
    }
    let mut missing = Vec::new();
    for family in registry.families() {
        let (benchmarks, algorithms) = covered.get(family.name()).cloned().unwrap_or_default();
        for b in family.benchmarks().iter().filter(|b| !benchmarks.contains(&b.name.to_string())) {
            missing.push(format!("{}: benchmark `{}`", family.name(), b.name));
        }
        for a in family.algorithms().iter().filter(|a| !algorithms.contains(&a.name.to_string())) {
            missing.push(format!("{}: algorithm `{}`", family.name(), a.name));
        }
    }
    assert!(
        missing.is_empty(),
        "no golden job runs these (add one to the family's golden/*.toml):\n{}",
        missing.join("\n")
    );
}

/// Processor models of qemu's user-mode emulator, one per x86-64 level: v1 (SSE2 only), v2
/// (SSE4.2), v3 (AVX2 and fused multiply-add: armada's AVX2 kernels run) and v4 (AVX-512 on
/// a real processor; qemu's TCG does not emulate AVX-512, so under it this model runs the AVX2
/// kernels, and armada's AVX-512 copies are held to the others natively, where the processor
/// has them: the native comparison, then again with them turned off).
const PROCESSOR_MODELS: [(&str, &str); 4] =
    [("qemu64", "x86-64-v1"), ("Nehalem", "x86-64-v2"), ("Haswell", "x86-64-v3"), ("Icelake-Server", "x86-64-v4")];

/// glibc's processor-specific variants (of `exp`, `memcpy`, ...) masked: its SSE2 ones run.
const GLIBC_SSE2_ONLY: &str = "glibc.cpu.hwcaps=-AVX,-AVX2,-FMA,-FMA4,-AVX512F,-AVX512DQ,-AVX512BW,-AVX512VL";

/// The golden trajectories come out bit for bit on every processor: this test binary runs the
/// comparison again under each emulated model of [`PROCESSOR_MODELS`] but the one of this
/// processor's level, which the native comparison covers (armada's kernels take their
/// baseline or their AVX2 path by what the processor reports), and natively with glibc's
/// processor-specific variants masked. A job's bits then depend on its key alone,
/// not on which node of a cluster ran it.
#[test]
fn the_same_bits_on_every_processor_model() {
    if !common::qemu_present() {
        return;
    }
    let qemu = "qemu-x86_64";
    let exe = std::env::current_exe().unwrap();
    let golden = common::test_name(module_path!(), "every_family_computes_its_golden_trajectories_bit_for_bit");
    let golden = golden.as_str();
    let mut runs: Vec<(String, std::process::Command)> = Vec::new();
    // The native comparison (the test above) covers this processor's own level.
    let native = armada_worker::processor::level();
    for (model, level) in PROCESSOR_MODELS.into_iter().filter(|(_, level)| *level != native) {
        let mut cmd = std::process::Command::new(qemu);
        cmd.args(["-cpu", model]).arg(&exe).args([golden, "--exact"]);
        runs.push((format!("qemu -cpu {model} ({level})"), cmd));
    }
    let mut masked = std::process::Command::new(&exe);
    masked.args([golden, "--exact"]).env("GLIBC_TUNABLES", GLIBC_SSE2_ONLY);
    runs.push(("native, glibc's SSE2 variants".into(), masked));
    if native == "x86-64-v4" {
        let mut avx2 = std::process::Command::new(&exe);
        avx2.args([golden, "--exact"]).env("ARMADA_NO_AVX512", "1");
        runs.push(("native, armada's AVX2 kernels (ARMADA_NO_AVX512=1)".into(), avx2));
    }
    let children: Vec<(String, std::process::Child)> = runs
        .into_iter()
        .map(|(what, mut cmd)| {
            cmd.env(COMPARE_ONLY, "1").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            (what, cmd.spawn().unwrap())
        })
        .collect();
    let mut failures = Vec::new();
    for (what, child) in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !stdout.contains("test result: ok. 1 passed") {
            failures.push(format!("{what}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Set by `.ci/run`: `armada-golden` (workers/golden) cross-compiled for aarch64.
const AARCH64_RUNNER: &str = "ARMADA_GOLDEN_AARCH64";

/// The golden trajectories come out bit for bit on another architecture too: `armada-golden`
/// built for aarch64 runs every paper family's golden jobs under `qemu-aarch64` (the test
/// kit's families live in the worker runtime and are not in it), and each family's text
/// equals its recorded file. `.ci/run` builds the runner and names it in
/// `ARMADA_GOLDEN_AARCH64`; without it the test says it is skipped, unless
/// `ARMADA_REQUIRE_AARCH64=1`.
#[test]
fn the_same_bits_on_aarch64() {
    let Some(runner) = std::env::var_os(AARCH64_RUNNER) else {
        assert!(
            std::env::var_os("ARMADA_REQUIRE_AARCH64").is_none(),
            "ARMADA_REQUIRE_AARCH64 is set but {AARCH64_RUNNER} is not (.ci/run sets both)"
        );
        eprintln!("skipped: {AARCH64_RUNNER} names no aarch64 build of armada-golden (.ci/run makes one)");
        return;
    };
    let qemu = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new("qemu-aarch64")
            .args(["-L", "/usr/aarch64-linux-gnu"])
            .arg(&runner)
            .args(args)
            .output()
            .expect("qemu-aarch64 runs (Debian: qemu-user)");
        assert!(out.status.success(), "armada-golden under qemu-aarch64: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let registry = registry();
    let test_kit = [armada_worker::testkit::TestkitFamily.name(), armada_worker::testkit::TestkitShortFamily.name()];
    let expected: Vec<&str> = registry.families().map(|f| f.name()).filter(|f| !test_kit.contains(f)).collect();
    assert_eq!(qemu(&["--families".as_ref()]).lines().collect::<Vec<_>>(), expected, "armada-golden's families");

    let by_family = golden_jobs(&registry);
    let jobs = expected.iter().flat_map(|f| &by_family[*f].1).map(|job| &job.spec);
    let tmp = tempfile::tempdir().unwrap();
    let (jobs_file, out) = (tmp.path().join("jobs.jsonl"), tmp.path().join("aarch64"));
    std::fs::write(&jobs_file, golden::write_jobs(jobs)).unwrap();
    qemu(&[jobs_file.as_os_str(), out.as_os_str()]);
    let mut failures = Vec::new();
    for name in expected {
        let family = registry.family(name).unwrap();
        let path = by_family[name].0.join(format!("{name}.txt"));
        let recorded = std::fs::read_to_string(&path).unwrap();
        let computed = std::fs::read_to_string(out.join(format!("{name}.txt"))).unwrap();
        assert_eq!(golden::recorded_version(&computed), Some(family.version()));
        failures.extend(compare(family, &recorded, &computed, &path).map(|f| format!("on aarch64: {f}")));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
