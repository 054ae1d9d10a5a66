//! The numerics benchmark: every workload of armada's speed table timed in one
//! run, each beside its recorded baseline (`baseline.tsv`, seconds on this machine), the
//! reference code's time on this machine (recorded, or measured with `--reference-lse`),
//! and its speed target (twice the bound set by the work it must do). A workload is one job of a family, run through
//! the registry and the real episode loop, as a worker runs it (no orchestration).
//!
//! ```text
//! cargo run --release -p armada-numbench                   # the quick workloads (~40 s)
//! cargo run --release -p armada-numbench -- --full         # also GLM-TSL, BO-uCVS and TS-PSQ (minutes)
//! cargo run --release -p armada-numbench -- --only cdt     # workloads whose name contains `cdt`
//! cargo run --release -p armada-numbench -- --record       # rewrite baseline.tsv from this run
//! cargo run --release -p armada-numbench -- --reference-lse REFERENCE_DIR \
//!     --python /path/to/venv/bin/python                    # time the LSE numpy reference too
//! cargo run --release -p armada-numbench -- --only cdt --reference-cdt /path/to/CDT_exp \
//!     --python /path/to/venv/bin/python                    # and the CDT authors' code (one run each)
//! cargo run --release -p armada-numbench -- --against /tmp/base/target/release/armada-numbench \
//!     --rounds 5                                           # A/B against another build, same run
//! cargo run --release -p armada-numbench -- --cdt-table1   # the CDT paper's Table 1 (about 5 min)
//! ```
//!
//! `--against BIN` times each workload in this build and in another numbench binary (a
//! baseline commit's, built from a `git worktree`; any numbench build, since it is read through
//! its printed table), in `--rounds` rounds that alternate which build runs first, so both see
//! the same machine, loaded or not; it prints the medians and their ratio. `--rounds N` alone
//! takes the median of N runs of this build.
//!
//! `--reference-cdt` runs the CDT authors' code (a checkout of their `CDT_exp`, set up as
//! docs/investigations.md "CDT beside the authors' code" says) through `analysis/cdt_authors.py`,
//! one repetition of each CDT workload in the run except GLM-TSL (their GLM-TSL + CDT does not
//! run as released; its recorded time stays).
//!
//! Ratios are armada's seconds over the other column: below 1 is faster than it.

mod table1;

use armada_core::{run_job, JobSpec, ParamValue, Registry};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// One row of the speed table.
struct Workload {
    name: &'static str,
    /// The job it times.
    spec: fn() -> JobSpec,
    /// Whether the default run includes it (the others need `--full`).
    quick: bool,
    /// The reference code's seconds per run on this machine, as recorded, and what it is.
    reference: Option<(f64, &'static str)>,
    /// The speed target in seconds, and where it comes from: twice the bound that the work
    /// it must do sets, where one was set.
    target: Option<(f64, &'static str)>,
}

fn spec(family: &str, benchmark: &str, algorithm: &str, horizon: u32) -> JobSpec {
    let mut spec = JobSpec::new(family, benchmark, algorithm);
    spec.horizon = horizon;
    spec
}

fn with(mut spec: JobSpec, benchmark_params: &[(&str, &str)]) -> JobSpec {
    for (k, v) in benchmark_params {
        spec.benchmark_params.insert(k.to_string(), ParamValue::Str(v.to_string()));
    }
    spec
}

/// The reference figures of the first speed table, measured on this machine.
const NUMPY_LSE: (f64, &str) = (2.9, "the LSE numpy reference (recorded)");
const LSE_TARGET: (f64, &str) = (0.060, "2x bound: O(N t) posterior updates, ~1e8 flops, ~30 ms");

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "lse-straddle",
        spec: || spec("lse", "himmelblau", "straddle", 300),
        quick: true,
        reference: Some(NUMPY_LSE),
        target: Some(LSE_TARGET),
    },
    Workload {
        name: "lse-random",
        spec: || spec("lse", "himmelblau", "random", 300),
        quick: true,
        reference: Some(NUMPY_LSE),
        target: Some(LSE_TARGET),
    },
    Workload {
        name: "lse-rand-straddle",
        spec: || spec("lse", "himmelblau", "rand-straddle", 300),
        quick: true,
        reference: Some(NUMPY_LSE),
        target: Some(LSE_TARGET),
    },
    Workload {
        name: "lse-continuous",
        // One run of LSE Figure 4 (sweeps/lse-fig4.toml): most of its time is catching up the
        // posterior mean on the 100,000 evaluation points every fifth step.
        spec: || {
            let mut s = spec("lse", "rosenbrock-5d", "rand-straddle", 500);
            s.benchmark_params.insert("metrics_every".into(), ParamValue::Int(5));
            s
        },
        quick: true,
        reference: None,
        target: None,
    },
    Workload {
        name: "mile",
        spec: || spec("lse", "sinusoidal", "mile", 300),
        quick: true,
        reference: None,
        target: Some((2.0, "2x bound: rank-1 downdates of a 2500^2 covariance, ~2e9 flops, < 1 s")),
    },
    Workload {
        name: "cdt-linucb",
        spec: || with(spec("bandits", "synthetic", "cdt", 14_000), &[("bottom", "linucb")]),
        quick: true,
        reference: Some((2.6, "CDT authors' Python with CDT (recorded)")),
        target: Some((0.1, "2x bound: ~1e9 flops, ~50 ms")),
    },
    Workload {
        name: "cdt-ucb-glm",
        spec: || with(spec("bandits", "synthetic", "cdt", 14_000), &[("bottom", "ucb-glm")]),
        quick: true,
        reference: Some((32.5, "CDT authors' Python with CDT, 31-34 s (recorded)")),
        target: Some((2.0, "2x bound: warm-started MLE, O(t d) gradient passes, < 1 s")),
    },
    Workload {
        name: "cdt-glm-tsl",
        spec: || with(spec("bandits", "synthetic", "cdt", 14_000), &[("bottom", "glm-tsl")]),
        quick: false,
        reference: Some((466.0, "CDT authors' Python with CDT, 1 BLAS thread (recorded)")),
        target: None,
    },
    Workload {
        name: "bocvs-proposed",
        // bocvs-fig1's setting, the runs the first speed table timed at 2-10 min: E[sigma] over
        // the first 32 MC samples (the family's default, all 1,024, solves 32 times as many
        // columns: about an hour per run). The budget (100) ends the run; the horizon only has to exceed its plays.
        spec: || {
            let mut s = spec("cvs", "hartmann6-12d", "proposed", 10_000);
            s.algorithm_params.insert("n_sigma".into(), ParamValue::Int(32));
            s
        },
        quick: false,
        reference: None,
        target: Some((30.0, "the proposed method within 30 s per run")),
    },
    Workload {
        name: "bocvs-ts-psq",
        // bocvs-fig1's TS-PSQ (1-4 min per run before the processor-independent numerics, 73%
        // in `sincos`): a fresh RFF sample path every play, averaged over the MC samples and
        // maximised.
        spec: || spec("cvs", "hartmann6-12d", "ts-psq", 10_000),
        quick: false,
        reference: None,
        target: None,
    },
];

/// The recorded seconds of each workload (`baseline.tsv`).
fn read_baseline(path: &Path) -> BTreeMap<String, (f64, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut fields = l.splitn(3, '\t');
            let name = fields.next()?.to_string();
            let seconds = fields.next()?.parse().ok()?;
            Some((name, (seconds, fields.next().unwrap_or("").to_string())))
        })
        .collect()
}

fn write_baseline(path: &Path, measured: &BTreeMap<&str, f64>, old: &BTreeMap<String, (f64, String)>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out: String = text.lines().filter(|l| l.starts_with('#')).map(|l| format!("{l}\n")).collect();
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    for w in WORKLOADS {
        match (measured.get(w.name), old.get(w.name)) {
            (Some(s), _) => out.push_str(&format!("{}\t{s:.3}\tarmada-numbench --record at {commit}\n", w.name)),
            (None, Some((s, from))) => out.push_str(&format!("{}\t{s}\t{from}\n", w.name)),
            (None, None) => {}
        }
    }
    std::fs::write(path, out).expect("baseline.tsv is writable");
}

/// This crate's directory: as `cargo run` says when it runs us (a build that another checkout
/// of the same sources made, in a shared target directory, keeps that checkout's compile-time
/// path), else where we were built.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from)
}

/// One timed run of a workload.
struct Run {
    seconds: f64,
    /// FNV-1a over the bits of every metric value of every step: two builds that print the same
    /// digest ran the same trajectory, to the last bit.
    digest: u64,
}

/// One run of `spec`, through the registry and the family's episode.
fn time_job(registry: &Registry, spec: &JobSpec) -> Run {
    let job = registry.validate(spec).unwrap_or_else(|e| panic!("{}: {e}", spec.benchmark));
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let start = Instant::now();
    run_job(registry, &job, &mut |record| {
        for value in &record.values {
            for byte in value.to_bits().to_le_bytes() {
                digest = (digest ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        ControlFlow::Continue(())
    })
    .unwrap_or_else(|e| panic!("{}: {e}", job.describe()));
    Run { seconds: start.elapsed().as_secs_f64(), digest }
}

/// The LSE numpy reference's seconds per run of each method on Himmelblau (two runs each;
/// `ref.py` prints each method's time).
fn time_numpy_lse(dir: &Path, python: &str) -> BTreeMap<&'static str, f64> {
    let out = std::env::temp_dir().join("armada-numbench-ref.json");
    // Run from its own directory (it reads its data beside it), so name the script alone: a
    // relative `dir` joined again would point nowhere.
    let run = Command::new(python)
        .arg("ref.py")
        .args(["himm", "straddle,random,proposed", "2"])
        .arg(&out)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{python} {}: {e}", dir.join("ref.py").display()));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "the numpy reference failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    let mut seconds = BTreeMap::new();
    for line in stdout.lines() {
        // `himm straddle time 5.8 r@50,100,300 ...`
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [_, method, "time", t, ..] = words[..] {
            let workload = match method {
                "straddle" => "lse-straddle",
                "random" => "lse-random",
                "proposed" => "lse-rand-straddle",
                _ => continue,
            };
            seconds.insert(workload, t.parse::<f64>().expect("a time") / 2.0);
        }
    }
    seconds
}

/// The CDT authors' seconds for one run of `bottom` (their module name, e.g. `ucbglm`) with CDT
/// on Sim (d = 25, K = 120, T = 14,000), as `analysis/cdt_authors.py` measures it: their
/// algorithm's time, without building the context tensor.
fn time_authors_cdt(code: &Path, python: &str, bottom: &str) -> f64 {
    let driver = manifest_dir().join("../../analysis/cdt_authors.py");
    let out = std::env::temp_dir().join(format!("armada-numbench-cdt-{bottom}-{}.csv", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let run = Command::new(python)
        .arg(&driver)
        .args(["run", "--code"])
        .arg(code)
        .args(["--algo", bottom, "--tuners", "cdt", "--reps", "1", "--out"])
        .arg(&out)
        .env("OMP_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("MKL_NUM_THREADS", "1")
        .output()
        .unwrap_or_else(|e| panic!("{python} {}: {e}", driver.display()));
    assert!(
        run.status.success(),
        "the CDT authors' code failed ({bottom}):\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    let _ = std::fs::remove_file(&out);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let column = header.iter().position(|h| *h == "seconds").expect("a seconds column");
    let row: Vec<&str> = lines.next().expect("one repetition").split(',').collect();
    row[column].parse().expect("seconds")
}

/// One run of `workload` by another numbench binary (`--against`): its table's `armada s`
/// column, in the row named after the workload, and the digest at the row's end (none from a
/// build older than the digest).
fn time_other_build(bin: &Path, workload: &Workload) -> Result<(f64, Option<u64>), String> {
    let mut command = Command::new(bin);
    command.args(["--only", workload.name]);
    if !workload.quick {
        command.arg("--full");
    }
    let out = command.output().map_err(|e| format!("--against {}: {e}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "--against {} failed on {} ({}):\n{stdout}{}",
            bin.display(),
            workload.name,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let seconds = seconds_in_table(&stdout, workload.name)
        .ok_or_else(|| format!("--against {}: no row for {} in its output:\n{stdout}", bin.display(), workload.name))?;
    Ok((seconds, digest_in_table(&stdout, workload.name)))
}

/// The digest (`digest=<16 hex digits>`) in the row named `name` of a numbench table.
fn digest_in_table(table: &str, name: &str) -> Option<u64> {
    let hex = table_row(table, name)?.split_whitespace().find_map(|w| w.strip_prefix("digest="))?;
    u64::from_str_radix(hex, 16).ok()
}

/// The row named `name` (its first word) of a numbench table.
fn table_row<'a>(table: &'a str, name: &str) -> Option<&'a str> {
    table.lines().find(|line| line.split_whitespace().next() == Some(name))
}

/// The `armada s` column of the row named `name` in a numbench table.
fn seconds_in_table(table: &str, name: &str) -> Option<f64> {
    table_row(table, name)?.split_whitespace().nth(1)?.parse().ok()
}

fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    }
}

fn fail(message: &str) -> ! {
    eprintln!("armada-numbench: {message}");
    std::process::exit(2)
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.3}", a / b)
}

/// The command line. Anything it does not know is an error: a mistyped `--rouns 5` must not
/// quietly run the defaults and print a table that looks like the one asked for.
#[derive(Debug, Default, PartialEq)]
struct Args {
    full: bool,
    record: bool,
    cdt_table1: bool,
    only: Option<String>,
    python: Option<String>,
    reference_lse: Option<String>,
    reference_cdt: Option<String>,
    against: Option<String>,
    rounds: Option<String>,
}

const USAGE: &str = "usage: armada-numbench [--full] [--only NAME] [--record] [--rounds N] [--against BIN]
                       [--reference-lse DIR] [--reference-cdt DIR] [--python PY]
       armada-numbench --cdt-table1 [--rounds N]
(see workers/numbench/src/main.rs and README.md for what each does)";

/// `Ok(None)` for `--help`.
fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let slot = match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--full" => {
                parsed.full = true;
                continue;
            }
            "--record" => {
                parsed.record = true;
                continue;
            }
            "--cdt-table1" => {
                parsed.cdt_table1 = true;
                continue;
            }
            "--only" => &mut parsed.only,
            "--python" => &mut parsed.python,
            "--reference-lse" => &mut parsed.reference_lse,
            "--reference-cdt" => &mut parsed.reference_cdt,
            "--against" => &mut parsed.against,
            "--rounds" => &mut parsed.rounds,
            other => return Err(format!("unknown argument `{other}`")),
        };
        match rest.next() {
            Some(value) if !value.starts_with("--") => *slot = Some(value.clone()),
            _ => return Err(format!("{arg} needs a value")),
        }
    }
    Ok(Some(parsed))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(e) => fail(&format!("{e}\n{USAGE}")),
    };
    let (full, record) = (args.full, args.record);
    let others =
        [args.only.is_some(), args.against.is_some(), args.reference_lse.is_some(), args.reference_cdt.is_some()];
    if args.cdt_table1 && (full || record || others.contains(&true)) {
        fail("--cdt-table1 takes only --rounds: it times its own cells, with no baseline or reference");
    }
    let only = args.only;
    if let Some(o) = &only {
        if !WORKLOADS.iter().any(|w| w.name.contains(o.as_str())) {
            let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
            fail(&format!("--only {o}: no workload's name contains it (workloads: {})", names.join(", ")));
        }
    }
    let baseline_path = manifest_dir().join("baseline.tsv");
    let baseline = read_baseline(&baseline_path);
    let registry = armada_families::paper_families();
    let python = args.python.unwrap_or_else(|| "python3".into());
    let mut measured_reference: BTreeMap<&str, (f64, &str)> = BTreeMap::new();
    if let Some(dir) = args.reference_lse {
        for (workload, seconds) in time_numpy_lse(Path::new(&dir), &python) {
            measured_reference.insert(workload, (seconds, "the LSE numpy reference, measured now"));
        }
    }
    let reference_cdt = args.reference_cdt;
    let against = args.against.map(PathBuf::from);
    let rounds = match args.rounds {
        None => {
            if against.is_some() {
                3
            } else {
                1
            }
        }
        Some(r) => r
            .parse::<usize>()
            .ok()
            .filter(|&r| r > 0)
            .unwrap_or_else(|| fail(&format!("--rounds {r}: a positive integer"))),
    };
    if args.cdt_table1 {
        println!("{}", table1::table(&registry, rounds, |registry, spec| time_job(registry, spec).seconds));
        return;
    }
    if let Some(bin) = &against {
        if !bin.is_file() {
            fail(&format!("--against {}: no such file (a numbench binary of another build)", bin.display()));
        }
    }
    // (workload, this build's runs, the other build's runs), per round.
    type OtherRun = (f64, Option<u64>);
    let mut ab: Vec<(&str, Vec<Run>, Vec<OtherRun>)> = Vec::new();

    println!(
        "{:<18} {:>9} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8}  reference; target",
        "workload", "armada s", "recorded", "ratio", "ref s", "ratio", "target s", "ratio"
    );
    let mut measured = BTreeMap::new();
    for w in WORKLOADS {
        if !(w.quick || full) || only.as_ref().is_some_and(|o| !w.name.contains(o.as_str())) {
            continue;
        }
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            // Alternate which build goes first, so that neither always meets the other's wake.
            let other_first = round % 2 == 0;
            let mut other = || {
                if let Some(bin) = &against {
                    theirs.push(time_other_build(bin, w).unwrap_or_else(|e| fail(&e)));
                }
            };
            if other_first {
                other();
            }
            ours.push(time_job(&registry, &(w.spec)()));
            if !other_first {
                other();
            }
        }
        let seconds = median(&ours.iter().map(|r| r.seconds).collect::<Vec<_>>());
        // Every round of one build runs the same trajectory (a job is deterministic).
        let digest = ours[0].digest;
        assert!(ours.iter().all(|r| r.digest == digest), "{}: the rounds ran different trajectories", w.name);
        measured.insert(w.name, seconds);
        if against.is_some() {
            ab.push((w.name, ours, theirs));
        }
        let recorded = baseline.get(w.name).map(|b| b.0);
        // The authors' module for each CDT workload whose reference runs as released.
        let authors_bottom = match w.name {
            "cdt-linucb" => Some("linucb"),
            "cdt-ucb-glm" => Some("ucbglm"),
            _ => None,
        };
        if let (Some(code), Some(bottom)) = (&reference_cdt, authors_bottom) {
            let seconds = time_authors_cdt(Path::new(code), &python, bottom);
            measured_reference.insert(w.name, (seconds, "CDT authors' Python with CDT, measured now"));
        }
        let reference = measured_reference.get(w.name).copied().or(w.reference);
        let cell = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3}"));
        let vs = |x: Option<f64>| x.map_or("-".to_string(), |x| ratio(seconds, x));
        println!(
            "{:<18} {:>9.3} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8}  {}; {}; digest={digest:016x}",
            w.name,
            seconds,
            cell(recorded),
            vs(recorded),
            cell(reference.map(|r| r.0)),
            vs(reference.map(|r| r.0)),
            cell(w.target.map(|b| b.0)),
            vs(w.target.map(|b| b.0)),
            reference.map_or("-", |r| r.1),
            w.target.map_or("-", |b| b.1),
        );
    }
    if let Some(bin) = &against {
        println!("\nA/B against {} (median of {rounds} rounds, alternating which build runs first;", bin.display());
        println!("trajectory: the two builds' digests of every metric value, `-` from a build without one)");
        println!(
            "{:<18} {:>9} {:>9} {:>8} {:>10}  per-round ratios",
            "workload", "this s", "other s", "ratio", "trajectory"
        );
        for (name, ours, theirs) in &ab {
            let per_round: Vec<String> = ours.iter().zip(theirs).map(|(a, b)| ratio(a.seconds, b.0)).collect();
            let a = median(&ours.iter().map(|r| r.seconds).collect::<Vec<_>>());
            let b = median(&theirs.iter().map(|r| r.0).collect::<Vec<_>>());
            let same = match theirs[0].1 {
                Some(d) if d == ours[0].digest => "same",
                Some(_) => "differs",
                None => "-",
            };
            println!("{name:<18} {a:>9.3} {b:>9.3} {:>8} {same:>10}  {}", ratio(a, b), per_round.join(" "));
        }
    }
    if record {
        write_baseline(&baseline_path, &measured, &baseline);
        println!("recorded {} workload(s) in {}", measured.len(), baseline_path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_seconds_of_the_named_row_only() {
        let table = "workload            armada s  recorded    ratio ...\n\
                     lse-rand-straddle      0.041     0.075    0.547 ...\n\
                     lse-straddle           0.033     0.068    0.485 ...\n";
        assert_eq!(seconds_in_table(table, "lse-straddle"), Some(0.033));
        assert_eq!(seconds_in_table(table, "lse-rand-straddle"), Some(0.041));
        // a name that is only a prefix or a part of a row's name is not that row
        assert_eq!(seconds_in_table(table, "lse"), None);
        assert_eq!(seconds_in_table(table, "straddle"), None);
        assert_eq!(seconds_in_table("mile oops\n", "mile"), None);
    }

    #[test]
    fn reads_the_digest_of_the_named_row_only() {
        let table = "mile   9.7  18.2  0.53  -  -  2.0  4.8  -; bound; digest=00ff00ff00ff00ff\n\
                     mile-x 1.0  -  -  -  -  -  -  -; -; digest=0000000000000001\n\
                     lse    0.1  -  -  -  -  -  -  -; -\n";
        assert_eq!(digest_in_table(table, "mile"), Some(0x00ff_00ff_00ff_00ff));
        assert_eq!(digest_in_table(table, "mile-x"), Some(1));
        // an older build's row has no digest
        assert_eq!(digest_in_table(table, "lse"), None);
        assert_eq!(digest_in_table(table, "absent"), None);
    }

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn arguments_parse_and_mistakes_are_named() {
        let args = parse(&["--full", "--only", "cdt", "--rounds", "5", "--against", "/b/numbench"]).unwrap().unwrap();
        assert_eq!(
            args,
            Args {
                full: true,
                only: Some("cdt".into()),
                rounds: Some("5".into()),
                against: Some("/b/numbench".into()),
                ..Args::default()
            }
        );
        assert_eq!(parse(&[]).unwrap(), Some(Args::default()));
        let table1 = parse(&["--cdt-table1", "--rounds", "3"]).unwrap().unwrap();
        assert_eq!(table1, Args { cdt_table1: true, rounds: Some("3".into()), ..Args::default() });
        assert_eq!(parse(&["--record", "--help"]).unwrap(), None);
        assert_eq!(parse(&["--rouns", "5"]).unwrap_err(), "unknown argument `--rouns`");
        assert_eq!(parse(&["--only"]).unwrap_err(), "--only needs a value");
        assert_eq!(parse(&["--against", "--full"]).unwrap_err(), "--against needs a value");
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }
}
