//! Prints every record of a fixed list of `cvs` jobs as the bits of its values (16 hex digits
//! each, as `golden/cvs.txt`), so that a speed change can be checked for bit-identity without
//! the root crate's golden test: record the output before the change, diff it after. Each
//! job's seconds go to stderr.
//!
//! ```text
//! cargo run --release -p armada-cvs --example trajectory_bits > /tmp/before.txt          # quick jobs
//! cargo run --release -p armada-cvs --example trajectory_bits -- --full > /tmp/full.txt  # + numbench's run
//! cargo run --release -p armada-cvs --example trajectory_bits -- --only plant            # jobs whose label has `plant`
//! ```
//!
//! The quick jobs are the golden jobs of `golden/cvs.toml` plus larger proposed-method runs
//! (the default Monte Carlo and search sizes on short budgets, every benchmark kind, every
//! mode); `--full` adds two budget-100 runs: bocvs-fig1's (`n_sigma = 32`) and
//! armada-numbench's `bocvs-proposed` (the defaults). `--timing` prints each step's
//! milliseconds to stderr.

use armada_core::{run_job, JobSpec, ParamValue, Registry};
use armada_cvs::CvsFamily;
use std::ops::ControlFlow;
use std::time::Instant;

fn job(benchmark: &str, algorithm: &str, bench: &[(&str, ParamValue)], algo: &[(&str, ParamValue)]) -> JobSpec {
    let mut spec = JobSpec::new("cvs", benchmark, algorithm);
    for (k, v) in bench {
        spec.benchmark_params.insert(k.to_string(), v.clone());
    }
    for (k, v) in algo {
        spec.algorithm_params.insert(k.to_string(), v.clone());
    }
    spec.horizon = 10_000;
    spec
}

fn jobs(full: bool) -> Vec<JobSpec> {
    use ParamValue::{Float, Int, Str};
    let budget = |b: f64| [("budget", Float(b))];
    let golden = [("n_mc", Int(64)), ("n_sigma", Int(64)), ("n_warmup_full", Int(200))];
    let mut out = Vec::new();
    // golden/cvs.toml (horizon 6, budget 1).
    for mode in ["paper", "code", "code-fixed"] {
        let mut algo = golden.to_vec();
        algo.push(("mode", Str(mode.into())));
        out.push(JobSpec { horizon: 6, ..job("hartmann6-12d", "proposed", &budget(1.0), &algo) });
    }
    for name in ["ucb-psq", "ts-psq", "etc", "ucb-cvs"] {
        let mut algo = golden.to_vec();
        match name {
            "ts-psq" => algo.push(("n_features", Int(128))),
            "etc" => algo.push(("plays_per_group", Int(1))),
            _ => {}
        }
        out.push(JobSpec { horizon: 6, ..job("hartmann6-12d", name, &budget(1.0), &algo) });
    }
    // The proposed method at its default sizes, on budgets of tens of plays.
    out.push(job("hartmann6-12d", "proposed", &budget(6.0), &[]));
    out.push(job("plant", "proposed", &budget(10.0), &[]));
    out.push(job("airfoil", "proposed", &budget(4.0), &[]));
    out.push(job("ackley6-12d", "proposed", &budget(4.0), &[("n_sigma", Int(200))]));
    out.push(job("hartmann6-12d", "proposed", &budget(3.0), &[("mode", Str("code".into())), ("t_cap", Int(25))]));
    out.push(job("hartmann6-12d", "proposed", &budget(3.0), &[("sigma_mode", Str("rms".into()))]));
    out.push(job("hartmann6-12d", "ucb-psq", &budget(2.0), &[]));
    out.push(job("plant", "ts-psq", &budget(2.0), &[]));
    if full {
        // bocvs-fig1's setting (n_sigma = 32), the first speed table's run, then numbench's (defaults).
        out.push(job("hartmann6-12d", "proposed", &[], &[("n_sigma", Int(32))]));
        out.push(job("hartmann6-12d", "proposed", &[], &[]));
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--full");
    let timing = args.iter().any(|a| a == "--timing");
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1));
    let registry = Registry::new(vec![Box::new(CvsFamily)]);
    for spec in jobs(full) {
        let label =
            format!("{} {} {} {}", spec.benchmark, spec.benchmark_params, spec.algorithm, spec.algorithm_params);
        if only.is_some_and(|o| !label.contains(o.as_str())) {
            continue;
        }
        let job = registry.validate(&spec).unwrap_or_else(|e| panic!("{label}: {e}"));
        let start = Instant::now();
        let mut lines = Vec::new();
        run_job(&registry, &job, &mut |r| {
            if timing {
                eprintln!("step {} {:.1} ms", r.step, r.elapsed_ms);
            }
            let bits: Vec<String> = r.values.iter().map(|v| format!("{:016x}", v.to_bits())).collect();
            lines.push(format!("{label} {} {}", r.step, bits.join(" ")));
            ControlFlow::Continue(())
        })
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        eprintln!("{:>9.3} s  {:>4} rows  {label}", start.elapsed().as_secs_f64(), lines.len());
        for l in lines {
            println!("{l}");
        }
    }
}
