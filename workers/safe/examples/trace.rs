//! Runs one job and prints it: `cargo run --release -p armada-safe --example trace --
//! BENCHMARK ALGORITHM [T] [SEED] [key=value ...]`.
//!
//! `grid`, `h`, `l_f`, `l_g`, `v0`, `fstar`, `noise_var` go to the benchmark, `sweep_seed` to
//! the job, every other `key=value` to the algorithm. With the same parameters, seed and
//! sweep seed as a sweep's job it reproduces that job's trajectory exactly.
//!
//! `SAFE_TRACE` chooses the output: `summary` (default; a readable table), `csv` (every metric
//! of every step), or `final` (CSV, one line per x-row: the discovered boundary `s_t^(x)` and
//! the estimate `s_hat^(x)` of the posterior after the last round, for Figures 1 and 3).

use armada_core::Metrics;
use armada_core::{Episode, JobSpec, JobStreams, ParamValue, Registry};
use armada_safe::benchmarks::Benchmark;
use armada_safe::{run_config, SafeEpisode, SafeFamily, SafeMetrics};

const BENCHMARK_PARAMS: [&str; 7] = ["grid", "h", "l_f", "l_g", "v0", "fstar", "noise_var"];

fn parse_value(v: &str) -> ParamValue {
    if let Ok(i) = v.parse::<i64>() {
        ParamValue::Int(i)
    } else if let Ok(f) = v.parse::<f64>() {
        ParamValue::Float(f)
    } else if let Ok(b) = v.parse::<bool>() {
        ParamValue::Bool(b)
    } else {
        ParamValue::Str(v.trim_matches('"').to_string())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [benchmark, algorithm, rest @ ..] = args.as_slice() else {
        eprintln!("usage: trace BENCHMARK ALGORITHM [T] [SEED] [key=value ...]");
        std::process::exit(2);
    };
    let mut spec = JobSpec::new("safe", benchmark, algorithm);
    let mut positional = rest.iter().filter(|a| !a.contains('='));
    spec.horizon = positional.next().and_then(|t| t.parse().ok()).unwrap_or(50);
    spec.seed = positional.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    for (k, v) in rest.iter().filter_map(|a| a.split_once('=')) {
        if k == "sweep_seed" {
            spec.sweep_seed = v.parse().expect("sweep_seed is an integer");
        } else if BENCHMARK_PARAMS.contains(&k) {
            spec.benchmark_params.insert(k.to_string(), parse_value(v));
        } else {
            spec.algorithm_params.insert(k.to_string(), parse_value(v));
        }
    }
    let registry = Registry::new(vec![Box::new(SafeFamily)]);
    let job = registry.validate(&spec).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let spec = &job.spec;
    let bench = Benchmark::from_params(&spec.benchmark, &spec.benchmark_params).expect("benchmark");
    let config = run_config(&spec.algorithm, &spec.algorithm_params).expect("algorithm");
    let mut episode = SafeEpisode::new(bench, config, &JobStreams::new(spec)).expect("start");
    let mode = std::env::var("SAFE_TRACE").unwrap_or_else(|_| "summary".into());
    let show: Vec<&str> = match mode.as_str() {
        "csv" => SafeMetrics::DEFS.iter().map(|m| m.name).collect(),
        _ => vec![
            "regret_inst",
            "regret_avg",
            "regret2_avg",
            "regretx_inst",
            "violations_cum",
            "certified",
            "active_x",
            "expanders",
            "maximisers",
            "acquisition",
            "s",
            "x1",
            "x2",
            "f_lengthscale_s",
            "g_lengthscale_s",
        ],
    };
    let idx: Vec<usize> = show.iter().map(|n| SafeMetrics::DEFS.iter().position(|m| m.name == *n).unwrap()).collect();
    let sep = if mode == "csv" { "," } else { " " };
    let print = |t: u32, v: &[f64], ms: f64| {
        if mode == "final" {
            return;
        }
        let cells: Vec<String> =
            idx.iter().map(|&i| if mode == "csv" { format!("{:?}", v[i]) } else { format!("{:.4}", v[i]) }).collect();
        println!("{t}{sep}{ms:.3}{sep}{}", cells.join(sep));
    };
    if mode != "final" {
        println!("step{sep}elapsed_ms{sep}{}", show.join(sep));
    }
    print(0, &episode.initial().expect("initial").into_values(), 0.0);
    for t in 1..=spec.horizon {
        let start = std::time::Instant::now();
        let v = episode.step(t).expect("step").expect("safe runs every step").into_values();
        print(t, &v, start.elapsed().as_secs_f64() * 1e3);
    }
    if mode == "final" {
        let sets = episode.round_sets();
        let estimates = config.algorithm.estimates(&sets);
        let grid = &episode.benchmark().grid;
        println!("row,x1,x2,boundary_s,s_hat");
        for (i, (x, (&b, &e))) in grid.x.rows().into_iter().zip(sets.boundary.iter().zip(estimates)).enumerate() {
            let x2 = x.get(1).map_or("NaN".to_string(), |v| format!("{v:?}"));
            println!("{i},{:?},{x2},{:?},{:?}", x[0], grid.s[b], grid.s[e]);
        }
    }
}
