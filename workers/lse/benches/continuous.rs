//! Cost of the continuous 5-D block (paper section 5.2): seconds per run of the
//! randomized straddle on each function at the default sizes (pool 10,000, evaluation set
//! 100,000), with metrics every step and every 10 steps, plus one run with the optional
//! polishing (top 5, 60 AF evaluations each), so the lead can size sweeps.
//!
//! Runs go through the registry and the real episode loop. By default every run has the
//! paper's 500 steps; `cargo bench -p armada-lse --bench continuous -- T` times `T` steps
//! instead and extrapolates to 500 with the cost model of the loop (per-step cost linear in
//! the number of observations n: the pool and evaluation-set updates are O(|P| n) and
//! O(|X~| n)), fitted to the measured step times; the output says when it extrapolates.
//! Memory: the evaluation-set cache holds 8 * 100,000 * (T + 1) bytes (400 MB at T = 500).

use armada_core::{run_job, JobSpec, ParamValue, Registry};
use armada_lse::LseFamily;
use std::ops::ControlFlow;
use std::time::Instant;

const PAPER_T: u32 = 500;

struct Timing {
    setup_s: f64,
    steps_s: Vec<f64>,
    total_s: f64,
}

fn time_run(registry: &Registry, benchmark: &str, horizon: u32, bp: &[(&str, i64)]) -> Timing {
    let mut spec = JobSpec::new("lse", benchmark, "rand-straddle");
    spec.horizon = horizon;
    for (k, v) in bp {
        spec.benchmark_params.insert(k.to_string(), ParamValue::Int(*v));
    }
    let job = registry.validate(&spec).expect("valid spec");
    let mut steps_s = Vec::new();
    let t0 = Instant::now();
    run_job(registry, &job, &mut |r| {
        steps_s.push(r.elapsed_ms / 1e3);
        ControlFlow::Continue(())
    })
    .expect("run completes");
    let total_s = t0.elapsed().as_secs_f64();
    Timing { setup_s: total_s - steps_s.iter().sum::<f64>(), steps_s, total_s }
}

/// Seconds for `PAPER_T` steps: measured when the run had them, else setup plus a
/// least-squares fit `a + b n` of the step times (steps >= 1), summed over n = 1..PAPER_T.
fn seconds_for_paper_t(t: &Timing) -> (f64, bool) {
    let steps = &t.steps_s[1..];
    if steps.len() as u32 >= PAPER_T {
        return (t.total_s, false);
    }
    let n = steps.len() as f64;
    let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for (i, &y) in steps.iter().enumerate() {
        let x = (i + 1) as f64;
        (sx, sy, sxx, sxy) = (sx + x, sy + y, sxx + x * x, sxy + x * y);
    }
    let b = ((n * sxy - sx * sy) / (n * sxx - sx * sx)).max(0.0);
    let a = (sy - b * sx) / n;
    let t_f = PAPER_T as f64;
    (t.setup_s + t.steps_s[0] + a * t_f + b * t_f * (t_f + 1.0) / 2.0, true)
}

fn main() {
    let horizon: u32 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(PAPER_T);
    let registry = Registry::new(vec![Box::new(LseFamily)]);
    println!("rand-straddle, pool 10,000, eval set 100,000; {horizon} steps timed, seconds per {PAPER_T}-step run");
    println!(
        "{:<20} {:<28} {:>8} {:>10} {:>12} {:>14}",
        "benchmark", "variant", "setup_s", "timed_s", "last_step_s", "per_500_run_s"
    );
    let variants: [(&str, &[(&str, i64)]); 3] = [
        ("metrics_every=1", &[("metrics_every", 1)]),
        ("metrics_every=10", &[("metrics_every", 10)]),
        ("polish 5x60, every=10", &[("metrics_every", 10), ("polish_top_k", 5), ("polish_evals", 60)]),
    ];
    let wall = Instant::now();
    let mut any_extrapolated = false;
    for bench in ["sphere-5d", "rosenbrock-5d", "styblinski-tang-5d"] {
        for (i, (name, bp)) in variants.iter().enumerate() {
            // Polishing is timed on the sphere only (its cost does not depend on f).
            if i == 2 && bench != "sphere-5d" {
                continue;
            }
            let t = time_run(&registry, bench, horizon, bp);
            let (per_run, extrapolated) = seconds_for_paper_t(&t);
            any_extrapolated |= extrapolated;
            println!(
                "{bench:<20} {name:<28} {:>8.2} {:>10.2} {:>12.4} {:>13.1}{}",
                t.setup_s,
                t.total_s,
                t.steps_s.last().copied().unwrap_or(f64::NAN),
                per_run,
                if extrapolated { "*" } else { "" }
            );
        }
    }
    if any_extrapolated {
        println!("* extrapolated from {horizon} steps with a per-step cost linear in n (rough when metrics_every > 1)");
    }
    println!("total wall {:.0} s", wall.elapsed().as_secs_f64());
}
