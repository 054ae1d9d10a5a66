//! Seconds per run for every rule on every benchmark, and the speed of the per-round MAP
//! refit with a warm start versus Trieste's cold multi-start, measured in the same process:
//! wall time (sensitive to machine load) and MAP objective evaluations per round (exact).
//!
//! `cargo bench -p armada-safe --bench runs` (env: `SAFE_BENCH_T` rounds, default 50;
//! `SAFE_BENCH_ONLY` a substring of `benchmark/algorithm` to restrict the runs;
//! `SAFE_BENCH_3D_GRID` points per axis of the 3-D grid, default the paper's 75).

use armada_core::{JobSpec, JobStreams, ParamValue, Registry};
use armada_gp::{fit_map, KernelKind, LogNormalPrior, MapConfig};
use armada_safe::SafeFamily;
use rand::SeedableRng;
use std::time::Instant;

const BENCHMARKS: [&str; 4] = ["clinical", "synthetic-2d", "synthetic-3d", "pendulum"];
const ALGORITHMS: [&str; 4] = ["msafeopt-case1", "msafeopt-case2", "safeopt-mc", "predvar"];

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
    let start = Instant::now();
    let mut episode = family.start(&job, &JobStreams::new(&job.spec)).expect("start");
    episode.initial().unwrap();
    let idx = |n: &str| armada_safe::METRICS.iter().position(|m| m.name == n).unwrap();
    let mut last = Vec::new();
    let mut evals = 0.0;
    for t in 1..=spec.horizon {
        last = episode.step(t).expect("step");
        evals += last[idx("refit_evals")];
    }
    let seconds = start.elapsed().as_secs_f64();
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
    let reps = 20;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let time = |cfg: &MapConfig, rng: &mut rand_chacha::ChaCha8Rng| {
        let start = Instant::now();
        let mut evals = 0;
        let mut lp = 0.0;
        for _ in 0..reps {
            let fit = fit_map(x, y, cfg, Some(&previous), rng).unwrap();
            evals += fit.n_evals;
            lp = fit.log_posterior;
        }
        (start.elapsed().as_secs_f64() / reps as f64, evals as f64 / reps as f64, lp)
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
    let mut model = armada_safe::surrogate::Surrogate::new(2, 1.0, 1e-5, armada_safe::surrogate::RefitMode::Fixed, 0);
    for (z, &yi) in x.iter().zip(y) {
        model.observe(z, yi);
    }
    let grid = &episode.benchmark().grid;
    let start = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(model.predict(&grid.points).unwrap());
    }
    let generic = start.elapsed().as_secs_f64() / reps as f64;
    let start = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(model.predict_grid(grid).unwrap());
    }
    let tabled = start.elapsed().as_secs_f64() / reps as f64;
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
