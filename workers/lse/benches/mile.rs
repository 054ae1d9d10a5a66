//! Cost of MILE (paper Section 5.1), the cost centre of the finite experiments, against the
//! randomized straddle as the baseline.
//!
//! * N = 2,500 (sinusoidal, paper Section 5.1): a full 300-iteration run of each method;
//! * N = 6,586 (carrier-lifetime stand-in, Section 5.3): the first `T` iterations of each
//!   (default 20; the paper's runs have 200: `cargo bench -p armada-lse --bench mile -- 200`).
//!
//! Runs go through the registry and the real episode loop; per-iteration times come from the
//! step records (posterior update + acquisition + metrics), setup is the rest (for MILE the
//! N x N prior covariance). Run: `cargo bench -p armada-lse --bench mile`.

use armada_core::{run_job, JobSpec, Registry};
use armada_gp::CandidateCovariance;
use armada_lse::algorithms::mile_af;
use armada_lse::benchmarks::carrier_lifetime;
use armada_lse::LseFamily;
use std::ops::ControlFlow;
use std::time::Instant;

/// Seconds of one covariance downdate and of one MILE AF evaluation on the carrier stand-in
/// after `n_obs` observations on a coarse sub-grid (the breakdown of an iteration).
fn breakdown(n_obs: usize) -> (f64, f64) {
    let p = carrier_lifetime();
    let mut cov = CandidateCovariance::new(p.kernel.clone(), p.noise_var, p.candidates.clone());
    let stride = p.f.len() / n_obs;
    for k in 0..n_obs {
        cov.observe_candidate(k * stride, p.f[k * stride]).unwrap();
    }
    let t0 = Instant::now();
    let af = mile_af(&cov, p.theta, 3.0, None);
    let af_s = t0.elapsed().as_secs_f64();
    std::hint::black_box(af);
    let t0 = Instant::now();
    cov.observe_candidate(1, p.f[1]).unwrap();
    (t0.elapsed().as_secs_f64(), af_s)
}

struct Timing {
    setup_s: f64,
    per_iter_s: f64,
    last_iter_s: f64,
    total_s: f64,
}

fn time_run(registry: &Registry, benchmark: &str, algorithm: &str, horizon: u32) -> Timing {
    let mut spec = JobSpec::new("lse", benchmark, algorithm);
    spec.horizon = horizon;
    let job = registry.validate(&spec).expect("valid spec");
    let mut step_ms = Vec::new();
    let outcome = run_job(registry, &job, &mut |r| {
        step_ms.push(r.elapsed_ms);
        ControlFlow::Continue(())
    })
    .expect("run");
    let iter_ms: f64 = step_ms[1..].iter().sum();
    Timing {
        setup_s: (outcome.total_ms - step_ms.iter().sum::<f64>()) / 1e3,
        per_iter_s: iter_ms / horizon as f64 / 1e3,
        last_iter_s: step_ms.last().copied().unwrap_or(f64::NAN) / 1e3,
        total_s: outcome.total_ms / 1e3,
    }
}

fn main() {
    let carrier_horizon: u32 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(20);
    let registry = Registry::new(vec![Box::new(LseFamily)]);
    println!(
        "{:<18} {:>5} {:<14} {:>5} {:>10} {:>12} {:>12} {:>10}",
        "benchmark", "N", "algorithm", "T", "setup s", "s/iter mean", "s/iter last", "run s"
    );
    for (benchmark, n, horizon) in [("sinusoidal", 2500, 300), ("carrier-lifetime", 6586, carrier_horizon)] {
        let mut per_iter = Vec::new();
        for algorithm in ["mile", "rand-straddle"] {
            let t = time_run(&registry, benchmark, algorithm, horizon);
            println!(
                "{benchmark:<18} {n:>5} {algorithm:<14} {horizon:>5} {:>10.3} {:>12.3e} {:>12.3e} {:>10.2}",
                t.setup_s, t.per_iter_s, t.last_iter_s, t.total_s
            );
            per_iter.push(t.per_iter_s);
        }
        println!("{benchmark}: MILE / rand-straddle per iteration = {:.0}x", per_iter[0] / per_iter[1]);
    }
    for n_obs in [1, 50, 200] {
        let (downdate_s, af_s) = breakdown(n_obs);
        println!("carrier-lifetime after {n_obs:>3} observations: downdate {downdate_s:.3e} s, MILE AF {af_s:.3e} s");
    }
}
