//! armada-linalg against faer on the shapes the families use, in the same run: prints each
//! kernel's time and the ratio (armada / faer). faer is faster where it fuses multiply-adds
//! and uses wider vectors; the ratio is the price of the same bits on every processor.
//!
//! Run: cargo bench -p armada-linalg [-- WORD]   (WORD: only the kernels whose name has it)

use armada_linalg::{
    cholesky_in_place, matmul, solve_lower_in_place, solve_lower_transpose_in_place, weighted_gram,
    weighted_gram_symmetric, Accum, LowerFactor, Mat, MatMut,
};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::Par;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs per kernel: the fastest is kept (the least disturbed by the rest of the machine).
const REPS: usize = 15;

/// The fastest of `reps` runs (the least disturbed by the rest of the machine).
fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn random(rows: usize, cols: usize, seed: u64) -> Mat<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    Mat::from_fn(rows, cols, |_, _| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    })
}

fn spd(n: usize) -> Mat<f64> {
    let a = random(n, n, 3);
    let mut c = Mat::zeros(n, n);
    faer::linalg::matmul::matmul(c.as_mut(), Accum::Replace, a.as_ref(), a.transpose(), 1.0 / n as f64, Par::Seq);
    for i in 0..n {
        c[(i, i)] += 1.0;
    }
    c
}

fn report(name: &str, ours: Duration, faer: Duration) {
    println!(
        "{name:<44} armada {:>9.3} ms   faer {:>9.3} ms   ratio {:>5.2}",
        ours.as_secs_f64() * 1e3,
        faer.as_secs_f64() * 1e3,
        ours.as_secs_f64() / faer.as_secs_f64()
    );
}

/// A solve in place of its right-hand side.
type Solve<'a> = dyn Fn(MatMut<'_, f64>) + 'a;

fn main() {
    #[cfg(target_arch = "x86_64")]
    println!(
        "armada's kernels: {} (ARMADA_NO_AVX512=1 runs the AVX2 ones)",
        if armada_math::has_avx512() { "AVX-512" } else { "AVX2 or baseline" }
    );
    // `cargo bench -p armada-linalg -- WORD`: only the kernels whose name contains WORD.
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |what: &str| only.as_deref().is_none_or(|w| what.contains(w));
    for (m, n, k, what) in [
        (500, 500, 500, "matmul 500x500x500"),
        (1000, 1000, 200, "matmul v^T v: 1000x1000, inner 200"),
        (1000, 16, 1000, "matmul L z: 1000x1000 times 1000x16"),
        (20, 20, 2000, "matmul X^T X: 20x20, inner 2000"),
    ] {
        if !wanted(what) {
            continue;
        }
        let (a, b) = (random(m, k, 1), random(k, n, 2));
        let mut c = Mat::zeros(m, n);
        let ours = best(REPS, || matmul(c.as_mut(), Accum::Replace, a.as_ref(), b.as_ref(), 1.0));
        let theirs = best(REPS, || {
            faer::linalg::matmul::matmul(c.as_mut(), Accum::Replace, a.as_ref(), b.as_ref(), 1.0, Par::Seq)
        });
        report(what, ours, theirs);
    }
    // GLM-TSL's curvature `X^T (W X)` every round: the history row-major, d = 25.
    let what = "matmul X^T W X: 25x25, inner 14000, row-major";
    if wanted(what) {
        let (n, d) = (14_000, 25);
        let (x, wx) = (random(n * d, 1, 6), random(n * d, 1, 7));
        let lhs = faer::MatRef::from_row_major_slice(wx.col(0).try_as_col_major().unwrap().as_slice(), n, d);
        let rhs = faer::MatRef::from_row_major_slice(x.col(0).try_as_col_major().unwrap().as_slice(), n, d);
        let mut c = Mat::zeros(d, d);
        let ours = best(REPS, || matmul(c.as_mut(), Accum::Replace, lhs.transpose(), rhs, 1.0));
        let theirs = best(REPS, || {
            faer::linalg::matmul::matmul(c.as_mut(), Accum::Replace, lhs.transpose(), rhs, 1.0, Par::Seq)
        });
        report(what, ours, theirs);
    }
    // The same curvature from the history and its weights: `weighted_gram` against faer's
    // product with `W X` formed first, as it must be for faer.
    let what = "weighted_gram X^T W X: 25x25, 14000 rows";
    if wanted(what) {
        let (n, d) = (14_000, 25);
        let x = random(n * d, 1, 6);
        let x = x.col(0).try_as_col_major().unwrap().as_slice();
        let w: Vec<f64> = random(n, 1, 8).col(0).iter().map(|v| v.abs()).collect();
        let mut wx = vec![0.0; n * d];
        let mut gram = vec![0.0; d * d];
        let ours = best(REPS, || weighted_gram(x, d, &w, &mut gram));
        let mut product = Mat::zeros(d, d);
        let theirs = best(REPS, || {
            for ((o, row), wk) in wx.chunks_exact_mut(d).zip(x.chunks_exact(d)).zip(&w) {
                for (o, v) in o.iter_mut().zip(row) {
                    *o = wk * v;
                }
            }
            let lhs = faer::MatRef::from_row_major_slice(&wx, n, d);
            let rhs = faer::MatRef::from_row_major_slice(x, n, d);
            faer::linalg::matmul::matmul(product.as_mut(), Accum::Replace, lhs.transpose(), rhs, 1.0, Par::Seq)
        });
        report(what, ours, theirs);
        // From one triangle (GLM-TSL's curvature since `bandits` 5), against faer's full product too.
        let symmetric = best(REPS, || weighted_gram_symmetric(x, d, &w, &mut gram));
        report("weighted_gram_symmetric X^T W X: 25x25, 14000 rows", symmetric, theirs);
    }
    for n in [100, 500, 1500] {
        if !wanted(&format!("cholesky {n}")) {
            continue;
        }
        let a = spd(n);
        let ours = best(REPS, || {
            let mut l = a.clone();
            cholesky_in_place(l.as_mut()).unwrap();
            black_box(l);
        });
        let mut mem = MemBuffer::new(faer::linalg::cholesky::llt::factor::cholesky_in_place_scratch::<f64>(
            n,
            Par::Seq,
            Default::default(),
        ));
        let theirs = best(REPS, || {
            let mut l = a.clone();
            faer::linalg::cholesky::llt::factor::cholesky_in_place(
                l.as_mut(),
                Default::default(),
                Par::Seq,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .unwrap();
            black_box(l);
        });
        report(&format!("cholesky {n}"), ours, theirs);
    }
    // (700, 32): BO-uCVS's E[sigma] at one point, 32 MC samples, 700 plays in.
    for (n, m) in [(200, 4096), (700, 32), (500, 1), (100, 100)] {
        let name = |direction: &str, kept: &str| format!("solve {direction}{kept}: {n}x{n}, {m} columns");
        let directions = ["L X = B", "L^T X = B"];
        if !directions.iter().any(|d| wanted(&name(d, "")) || wanted(&name(d, ", kept factor"))) {
            continue;
        }
        let mut l = spd(n);
        cholesky_in_place(l.as_mut()).unwrap();
        let l = Mat::from_fn(n, n, |i, j| if i >= j { l[(i, j)] } else { 0.0 });
        let b = random(n, m, 5);
        // A factor kept for many solves (BO-uCVS's posterior): its blocks packed once.
        let kept = LowerFactor::new(l.as_ref());
        let time = |solve: &Solve| {
            best(REPS, || {
                let mut x = b.clone();
                solve(x.as_mut());
                black_box(x);
            })
        };
        let forward: [&Solve; 3] = [&|x| solve_lower_in_place(l.as_ref(), x), &|x| kept.solve_in_place(x), &|x| {
            faer::linalg::triangular_solve::solve_lower_triangular_in_place(l.as_ref(), x, Par::Seq)
        }];
        let backward: [&Solve; 3] =
            [&|x| solve_lower_transpose_in_place(l.as_ref(), x), &|x| kept.solve_transpose_in_place(x), &|x| {
                faer::linalg::triangular_solve::solve_upper_triangular_in_place(l.transpose(), x, Par::Seq)
            }];
        for (direction, [free, kept, faer]) in directions.into_iter().zip([forward, backward]) {
            let theirs = time(faer);
            report(&name(direction, ""), time(free), theirs);
            // Below 8 columns a kept factor solves column by column, as the free functions do.
            if m >= 8 {
                report(&name(direction, ", kept factor"), time(kept), theirs);
            }
        }
    }
}
