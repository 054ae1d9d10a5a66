//! Per-observation cost of the incremental candidate cache versus a full refit.
//!
//! For n = 100, 300, 1000 observations on m = 2,500 candidates (50 x 50 grid on [0,1]^2, SE
//! kernel), times one step of `CandidateCache::observe_candidate` (O(n m)) against `Gp::fit` on
//! n+1 points plus `predict` on the m candidates (O(n^3 + n^2 m)). A few steps per n, median
//! reported. Run: `cargo bench -p armada-gp --bench incremental`.

use std::hint::black_box;
use std::time::Instant;

use armada_gp::{CandidateCache, Gp, Kernel};
use ndarray::{Array2, Axis};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const STEPS: usize = 5;

fn median_ms(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() {
    let side = 50;
    let cands = Array2::from_shape_vec(
        (side * side, 2),
        (0..side * side)
            .flat_map(|k| [(k % side) as f64 / (side - 1) as f64, (k / side) as f64 / (side - 1) as f64])
            .collect(),
    )
    .expect("side^2 x 2");
    let m = cands.nrows();
    let kernel = Kernel::squared_exponential(1.0, vec![0.15, 0.15]);
    let noise = 1e-3;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut order: Vec<usize> = (0..m).collect();
    order.shuffle(&mut rng);
    let y = |j: usize| {
        let c = cands.row(j);
        (6.0 * c[0]).sin() * (4.0 * c[1]).cos()
    };

    println!("m = {m} candidates, d = 2, SE kernel, median of {STEPS} steps");
    println!("{:>6} | {:>18} | {:>20} | {:>8}", "n", "incremental (ms)", "full refit (ms)", "ratio");
    println!("{:-<6}-+-{:-<18}-+-{:-<20}-+-{:-<8}", "", "", "", "");
    for &n in &[100usize, 300, 1000] {
        // Incremental: grow a cache to n observations, then time the next STEPS observations.
        let mut cache = CandidateCache::new(kernel.clone(), noise, cands.clone());
        for &j in &order[..n] {
            cache.observe_candidate(j, y(j)).expect("observe");
        }
        let mut inc = Vec::with_capacity(STEPS);
        for &j in &order[n..n + STEPS] {
            let t = Instant::now();
            cache.observe_candidate(j, y(j)).expect("observe");
            inc.push(t.elapsed().as_secs_f64() * 1e3);
            black_box(cache.mean()[0]);
        }
        // Full refit: factorise n+1 points from scratch and predict on all candidates.
        let mut refit = Vec::with_capacity(STEPS);
        for s in 0..STEPS.min(3) {
            let idx = &order[..n + 1 + s];
            let x = cands.select(Axis(0), idx);
            let ys: Vec<f64> = idx.iter().map(|&j| y(j)).collect();
            let t = Instant::now();
            let (gp, _) = Gp::fit(kernel.clone(), noise, x, ys).expect("fit");
            let (mean, var) = gp.predict(cands.view());
            refit.push(t.elapsed().as_secs_f64() * 1e3);
            black_box((mean[0], var[0]));
        }
        let (a, b) = (median_ms(inc), median_ms(refit));
        println!("{n:>6} | {a:>18.3} | {b:>20.3} | {:>7.1}x", b / a);
    }
}
