//! Prints one run's trajectory: `cargo run --release -p armada-safe --example trace --
//! BENCHMARK ALGORITHM [T] [SEED] [key=value ...]` (benchmark parameters `grid`, `h`, `l_f`,
//! `l_g`, `v0`, `fstar`, `noise_var` go to the benchmark, every other `key=value` to the
//! algorithm). With `SAFE_TRACE_CSV=1` it prints every metric as CSV instead of a summary.

use armada_core::{JobSpec, JobStreams, ParamValue, Registry};
use armada_safe::{SafeFamily, METRICS};

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
    for kv in rest.iter().filter(|a| a.contains('=')) {
        let (k, v) = kv.split_once('=').unwrap();
        let value = if let Ok(i) = v.parse::<i64>() {
            ParamValue::Int(i)
        } else if let Ok(f) = v.parse::<f64>() {
            ParamValue::Float(f)
        } else if let Ok(b) = v.parse::<bool>() {
            ParamValue::Bool(b)
        } else {
            ParamValue::Str(v.to_string())
        };
        let target = if ["grid", "h", "l_f", "l_g", "v0", "fstar", "noise_var"].contains(&k) {
            &mut spec.benchmark_params
        } else {
            &mut spec.algorithm_params
        };
        target.insert(k.to_string(), value);
    }
    let registry = Registry::new(vec![Box::new(SafeFamily)]);
    let job = match registry.validate(&spec) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let family = registry.family("safe").unwrap();
    let mut episode = family.start(&job, &JobStreams::new(&job.spec)).expect("start");
    if std::env::var("SAFE_TRACE_CSV").is_ok_and(|v| v == "1") {
        let names: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
        println!("step,elapsed_ms,{}", names.join(","));
        let emit = |t: u32, v: Vec<f64>, ms: f64| {
            let cells: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
            println!("{t},{ms},{}", cells.join(","));
        };
        emit(0, episode.initial().expect("initial"), 0.0);
        for t in 1..=spec.horizon {
            let start = std::time::Instant::now();
            let v = episode.step(t).expect("step");
            emit(t, v, start.elapsed().as_secs_f64() * 1e3);
        }
        return;
    }
    let show = [
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
        "f_variance",
        "g_variance",
    ];
    let idx: Vec<usize> = show.iter().map(|n| METRICS.iter().position(|m| m.name == *n).unwrap()).collect();
    println!("step {}", show.join(" "));
    let print = |t: u32, v: &[f64]| {
        let cells: Vec<String> = idx.iter().map(|&i| format!("{:.4}", v[i])).collect();
        println!("{t} {}", cells.join(" "));
    };
    print(0, &episode.initial().expect("initial"));
    for t in 1..=spec.horizon {
        print(t, &episode.step(t).expect("step"));
    }
}
