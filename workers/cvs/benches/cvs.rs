//! Seconds per run per algorithm, and the factorised MC expectation against the naive one.
//!
//! `cargo bench -p armada-cvs --bench cvs -- [budget] [benchmark...]` (defaults: budget 100,
//! hartmann6-12d and plant, cheap costs, variance 0.02, seed 0, the default parameters).
//! `name=value` arguments override algorithm parameters (integers or strings); `CVS_BENCH_ALGOS=etc,proposed`
//! restricts the algorithms. The naive expectation builds the `N` full queries `[x^I, s_n]` and predicts each with
//! armada-gp's posterior; the factorised one is `SetExpectation` (the SE kernel factorises over
//! coordinates). Both are timed here, on the same posterior, and their ratio printed.

use std::time::Instant;

use armada_core::{Episode, JobSpec, JobStreams, ParamValue, Registry};
use armada_cvs::surrogate::{full_query, GpConfig, SetCache, SetExpectation, Surrogate};
use armada_cvs::CvsFamily;
use armada_gp::{Gp, Kernel, Points};
use ndarray::{aview1, ArrayView2};
use rand::{Rng, SeedableRng};

fn run(benchmark: &str, algorithm: &str, budget: f64, overrides: &[(String, ParamValue)]) -> (f64, usize) {
    let registry = Registry::new(vec![Box::new(CvsFamily)]);
    let mut spec = JobSpec::new("cvs", benchmark, algorithm);
    spec.benchmark_params.insert("budget".into(), ParamValue::Float(budget));
    for (k, v) in overrides {
        spec.algorithm_params.insert(k.clone(), v.clone());
    }
    spec.horizon = 100_000;
    let job = registry.validate(&spec).unwrap();
    let streams = JobStreams::new(&job.spec);
    let t0 = Instant::now();
    let mut ep = armada_cvs::family::episode(&job.spec, &streams).unwrap();
    ep.initial().unwrap();
    let mut step = 1;
    while !ep.is_done() {
        ep.step(step).unwrap();
        step += 1;
    }
    (t0.elapsed().as_secs_f64(), ep.stats().t)
}

fn expectation_ratio(n: usize, n_mc: usize) {
    let d = 12;
    let mut rng = armada_core::StreamRng::seed_from_u64(1);
    let mut s = Surrogate::new(GpConfig::default(), d);
    let mut gp = Gp::new(Kernel::squared_exponential(1.0, vec![0.2; d]), 1e-4);
    for _ in 0..n {
        let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
        let y = x[0].sin();
        s.add(aview1(&x), y).unwrap();
        gp.append(aview1(&x), y).unwrap();
    }
    let samples: Vec<f64> = (0..n_mc * d).map(|_| rng.random()).collect();
    let ctrl = [0, 1, 2, 3, 4, 5];
    let points: Vec<f64> = (0..20 * 6).map(|_| rng.random()).collect();
    let post = s.posterior();
    let t0 = Instant::now();
    let mut cache = SetCache::new(d, &ctrl, n_mc, n_mc);
    cache.update(&post, ArrayView2::from_shape((n_mc, d), &samples).unwrap());
    let mut e = SetExpectation::new(&post, &ctrl, &cache);
    let (mut mu, mut sd) = (vec![0.0; 20], vec![0.0; 20]);
    e.moments_many(ArrayView2::from_shape((20, 6), &points).unwrap(), &mut mu, &mut sd);
    let fact = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    for xc in points.chunks(6) {
        let mut q = Points::new(d);
        for smp in samples.chunks(d) {
            q.push(&full_query(&ctrl, xc, smp));
        }
        let _ = gp.predict(q.view());
    }
    let naive = t0.elapsed().as_secs_f64();
    println!(
        "E[mu], E[sigma] at 20 points, n = {n}, N = {n_mc}: factorised {:.4} s (incl. B), naive {:.4} s, naive/factorised = {:.1}",
        fact,
        naive,
        naive / fact
    );
}

fn main() {
    let all: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    // `name=value` arguments override algorithm parameters (e.g. n_sigma=64, sigma_mode=rms).
    let overrides: Vec<(String, ParamValue)> = all
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| {
            let value = v.parse().map(ParamValue::Int).unwrap_or_else(|_| ParamValue::Str(v.to_string()));
            (k.to_string(), value)
        })
        .collect();
    let only: Vec<String> =
        std::env::var("CVS_BENCH_ALGOS").map(|v| v.split(',').map(String::from).collect()).unwrap_or_default();
    let args: Vec<String> = all.into_iter().filter(|a| !a.contains('=')).collect();
    let budget: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100.0);
    let benches: Vec<String> =
        if args.len() > 1 { args[1..].to_vec() } else { vec!["hartmann6-12d".into(), "plant".into()] };
    for (n, n_mc) in [(100, 1024), (400, 1024), (400, 64)] {
        expectation_ratio(n, n_mc);
    }
    for b in &benches {
        for algo in ["ucb-psq", "ts-psq", "etc", "proposed"] {
            if !only.is_empty() && !only.iter().any(|o| o == algo) {
                continue;
            }
            let (secs, plays) = run(b, algo, budget, &overrides);
            println!(
                "{b:>14} {algo:>9} budget {budget}: {secs:8.2} s/run, {plays} plays, {:.4} s/play",
                secs / plays as f64
            );
        }
    }
}
