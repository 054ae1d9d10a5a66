//! Seconds per run for every rule on every benchmark, and the speed of the per-round MAP
//! refit with a warm start versus Trieste's cold multi-start, measured in the same process:
//! CPU seconds (from /proc; wall time elsewhere) and MAP objective evaluations per round.
//!
//! `cargo bench -p armada-safe --bench runs` (env: `SAFE_BENCH_T` rounds, default 50;
//! `SAFE_BENCH_ONLY` a substring of `benchmark/algorithm` to restrict the runs;
//! `SAFE_BENCH_3D_GRID` points per axis of the 3-D grid, default the paper's 75).

use armada_core::{JobSpec, JobStreams, ParamValue, Registry};
use armada_gp::{fit_map, log_posterior, log_posterior_and_grad, KernelKind, LogNormalPrior, MapConfig};
use armada_safe::SafeFamily;
use rand::SeedableRng;
use std::time::Instant;

const BENCHMARKS: [&str; 4] = ["clinical", "synthetic-2d", "synthetic-3d", "pendulum"];
const ALGORITHMS: [&str; 4] = ["msafeopt-case1", "msafeopt-case2", "safeopt-mc", "predvar"];

/// CPU seconds of this process (user + system) from /proc/self/stat, so that run times do
/// not depend on other load on the machine; `None` where /proc is unavailable.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// Seconds spent by `f`: CPU time when available, wall time otherwise.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let out = f();
    let seconds = match (cpu0, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => wall0.elapsed().as_secs_f64(),
    };
    (seconds, out)
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn spec(benchmark: &str, algorithm: &str, horizon: u32, refit: &str) -> JobSpec {
    let mut spec = JobSpec::new("safe", benchmark, algorithm);
    spec.horizon = horizon;
    spec.algorithm_params.insert("refit".into(), ParamValue::Str(refit.into()));
    if benchmark == "synthetic-3d" {
        spec.benchmark_params.insert("grid".into(), ParamValue::Int(env_or("SAFE_BENCH_3D_GRID", 75)));
    }
    spec
}

/// Runs one job; returns (seconds, final regret_avg, final violations, refit evaluations per round).
fn run(registry: &Registry, spec: &JobSpec) -> (f64, f64, f64, f64) {
    let job = registry.validate(spec).expect("valid spec");
    let family = registry.family("safe").unwrap();
    let idx = |n: &str| armada_safe::SafeMetrics::DEFS.iter().position(|m| m.name == n).unwrap();
    let (seconds, (last, evals)) = timed(|| {
        let mut episode = family.start(&job, &JobStreams::new(&job.spec)).expect("start");
        episode.initial_values().unwrap();
        let mut last = Vec::new();
        let mut evals = 0.0;
        for t in 1..=spec.horizon {
            last = episode.step_values(t).expect("step").expect("safe runs every step");
            evals += last[idx("refit_evals")];
        }
        (last, evals)
    });
    (seconds, last[idx("regret_avg")], last[idx("violations_cum")], evals / f64::from(spec.horizon))
}

/// Times refits on the data of a clinical run after 30 rounds: Trieste multi-start vs warm
/// start, and one grid prediction, the other per-round cost.
fn refit_ratio() {
    let registry = Registry::new(vec![Box::new(SafeFamily)]);
    let job = registry.validate(&spec("clinical", "msafeopt-case1", 30, "multistart")).unwrap();
    let bench = armada_safe::benchmarks::Benchmark::from_params("clinical", &job.spec.benchmark_params).unwrap();
    let config = armada_safe::run_config("msafeopt-case1", &job.spec.algorithm_params).unwrap();
    let mut episode = armada_safe::SafeEpisode::new(bench, config, &JobStreams::new(&job.spec)).unwrap();
    use armada_core::Episode;
    for t in 1..=30 {
        episode.step(t).unwrap();
    }
    let (x, y) = episode.f_data();
    let map = MapConfig::new(
        KernelKind::Matern52,
        LogNormalPrior { mu: 0.0, sigma: 1.0 },
        LogNormalPrior { mu: 0.2f64.ln(), sigma: 1.0 },
        1e-5,
    );
    let previous = episode.f_kernel().clone();
    let mut warm_cfg = map.clone();
    warm_cfg.n_prior_draws_per_param = 0;
    let reps = 100;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let time = |cfg: &MapConfig, rng: &mut rand_chacha::ChaCha8Rng| {
        let (seconds, (evals, lp)) = timed(|| {
            let (mut evals, mut lp) = (0, 0.0);
            for _ in 0..reps {
                let fit = fit_map(x, y, cfg, Some(&previous), rng).unwrap();
                evals += fit.n_evals;
                lp = fit.log_posterior;
            }
            (evals, lp)
        });
        (seconds / reps as f64, evals as f64 / reps as f64, lp)
    };
    let (cold, cold_evals, cold_lp) = time(&map, &mut rng);
    let (warm, warm_evals, warm_lp) = time(&warm_cfg, &mut rng);
    println!(
        "refit of f on {} points (clinical, after 30 rounds): multistart {:.2} ms ({cold_evals:.0} evals, log post {cold_lp:.3}), \
         warm {:.2} ms ({warm_evals:.0} evals, log post {warm_lp:.3}); warm is {:.1}x faster",
        y.len(),
        cold * 1e3,
        warm * 1e3,
        cold / warm
    );
    // The screen's cost per point: value only (armada-gp `log_posterior`) vs value and gradient.
    let (value_only, _) = timed(|| {
        for _ in 0..reps * 10 {
            std::hint::black_box(log_posterior(x, y, &previous, &map).unwrap());
        }
    });
    let (with_grad, _) = timed(|| {
        for _ in 0..reps * 10 {
            std::hint::black_box(log_posterior_and_grad(x, y, &previous, &map).unwrap());
        }
    });
    println!(
        "one MAP objective evaluation: {:.1} us value only (the screen), {:.1} us with the analytic gradient (L-BFGS); {:.1}x",
        value_only / (reps * 10) as f64 * 1e6,
        with_grad / (reps * 10) as f64 * 1e6,
        with_grad / value_only
    );
    let mut model = armada_safe::surrogate::Surrogate::new(2, 1.0, 1e-5, armada_safe::surrogate::RefitMode::Fixed, 0);
    for (z, &yi) in x.rows().into_iter().zip(y) {
        model.observe(z, yi);
    }
    let grid = &episode.benchmark().grid;
    let predict_reps = 20;
    let (generic, _) = timed(|| {
        for _ in 0..predict_reps {
            std::hint::black_box(model.predict(grid.points.view()).unwrap());
        }
    });
    let (tabled, _) = timed(|| {
        for _ in 0..predict_reps {
            std::hint::black_box(model.predict_grid(grid).unwrap());
        }
    });
    let (generic, tabled) = (generic / predict_reps as f64, tabled / predict_reps as f64);
    println!(
        "one GP's posterior on the {}-point grid: {:.2} ms generic (Gp::predict), {:.2} ms with distance tables ({:.1}x); \
         per round (two GPs): refits {:.2} ms multistart / {:.2} ms warm, predictions {:.2} ms",
        grid.len(),
        generic * 1e3,
        tabled * 1e3,
        generic / tabled,
        2.0 * cold * 1e3,
        2.0 * warm * 1e3,
        2.0 * tabled * 1e3
    );
}

fn main() {
    let horizon: u32 = env_or("SAFE_BENCH_T", 50);
    let only: String = env_or("SAFE_BENCH_ONLY", String::new());
    refit_ratio();
    let registry = Registry::new(vec![Box::new(SafeFamily)]);
    println!(
        "{:<14} {:<16} {:>10} {:>9} {:>11} {:>11} {:>11} {:>6}",
        "benchmark", "algorithm", "s/run", "s/run", "evals/round", "evals/round", "regret_avg", "viol"
    );
    println!("{:<14} {:<16} {:>10} {:>9} {:>11} {:>11}", "", "", "multistart", "warm", "multistart", "warm");
    for b in BENCHMARKS {
        for a in ALGORITHMS {
            if !format!("{b}/{a}").contains(&only) {
                continue;
            }
            let (cold, r, v, cold_evals) = run(&registry, &spec(b, a, horizon, "multistart"));
            let (warm, _, _, warm_evals) = run(&registry, &spec(b, a, horizon, "warm"));
            println!("{b:<14} {a:<16} {cold:>10.2} {warm:>9.2} {cold_evals:>11.1} {warm_evals:>11.1} {r:>11.4} {v:>6}");
        }
    }
}
