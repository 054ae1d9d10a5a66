//! The vector lanes against the same functions one value at a time, in the same run: prints
//! each slice function's time per value and the ratio (lanes / one at a time). Both give the
//! one-at-a-time bits (the unit tests). The arguments come from a pool far larger than one
//! call, as a family's do, so that the one-at-a-time functions' branches are not learnt.
//!
//! Run: cargo bench -p armada-math --bench lanes (and again with ARMADA_NO_AVX512=1 for the
//! four-lane copies where the processor has AVX-512)

use armada_math::lanes::{exp_in_place, sin_cos_each, std_normal_cdf_in_place};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Values per call: BO-uCVS's `A_a` has one per observation (hundreds), MILE's `Phi` a
/// block of candidates, TS-PSQ's phases one per random frequency (1,024).
const LEN: usize = 1024;
const REPS: usize = 2000;
/// Calls take their arguments from a pool this many times larger, so that the one-at-a-time
/// functions' branches meet new values (repeating one array would let the branch predictor
/// learn its pattern, which a family's arguments never repeat).
const POOL: usize = REPS;

/// The fastest of five rounds of `REPS` calls, call `r` on the `r`-th slice of the pool (the
/// least disturbed by the rest of the machine).
fn best(mut f: impl FnMut(usize)) -> Duration {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for r in 0..REPS {
                f(r * LEN);
            }
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// `POOL x LEN` pseudo-random values in `[lo, hi)`.
fn pool(lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..POOL * LEN)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn report(name: &str, lanes: Duration, one: Duration) {
    let per = |d: Duration| d.as_secs_f64() * 1e9 / (REPS * LEN) as f64;
    println!(
        "{name:<20} lanes {:>6.2} ns/value   one at a time {:>6.2} ns/value   ratio {:>5.2}",
        per(lanes),
        per(one),
        lanes.as_secs_f64() / one.as_secs_f64()
    );
}

/// A slice function of the lanes, and the same function one value at a time.
type InPlace = fn(&mut [f64]);
type OneAtATime = fn(f64) -> f64;

fn main() {
    #[cfg(target_arch = "x86_64")]
    let eight = armada_math::has_avx512();
    #[cfg(not(target_arch = "x86_64"))]
    let eight = false;
    println!("lanes: {} (ARMADA_NO_AVX512=1 keeps four)", if eight { "eight, AVX-512" } else { "four" });
    // Arguments in the ranges the families use: exp of -r^2/2 terms, Phi of MILE's z, phases.
    let xs = pool(-40.0, 0.0, 1);
    let zs = pool(-10.0, 8.5, 2);
    let phases = pool(-15.0, 15.0, 3);
    let mut buf = vec![0.0; LEN];
    let in_place: [(&str, &[f64], InPlace, OneAtATime); 2] = [
        ("exp", &xs, exp_in_place, armada_math::exp),
        ("std_normal_cdf", &zs, std_normal_cdf_in_place, armada_math::std_normal_cdf),
    ];
    for (name, args, lanes_fn, one_fn) in in_place {
        let lanes = best(|at| {
            buf.copy_from_slice(&args[at..at + LEN]);
            lanes_fn(black_box(&mut buf));
        });
        let one = best(|at| {
            for (b, x) in buf.iter_mut().zip(&args[at..at + LEN]) {
                *b = one_fn(black_box(*x));
            }
        });
        report(name, lanes, one);
    }
    let lanes = best(|at| sin_cos_each(LEN, |k| black_box(phases[at + k]), |k, s, c| buf[k] = s + c));
    let one = best(|at| {
        for (b, p) in buf.iter_mut().zip(&phases[at..at + LEN]) {
            let (s, c) = armada_math::sin_cos(black_box(*p));
            *b = s + c;
        }
    });
    report("sin_cos", lanes, one);
    black_box(buf);
}
