//! Each function against exact values: `reference.txt`, written by `reference.py` with
//! Python's decimal arithmetic (no libm involved), holds for every argument the double nearest
//! the exact value and the exact value's distance from it in ulps, so the error of a result
//! is known to a hundredth of an ulp. The bounds below are the crate's documented ones.

use std::collections::BTreeMap;

/// Each function's documented bound, in ulps of the exact result.
const BOUNDS: [(&str, f64); 10] = [
    ("exp", 1.0),
    ("ln", 1.0),
    ("log1p", 1.0),
    ("expm1", 1.0),
    ("sin", 1.0),
    ("cos", 1.0),
    ("erf", 1.0),
    ("erfc", 2.0),
    ("pow", 1.0),
    ("hypot", 1.0),
];

fn eval(name: &str, args: &[f64]) -> f64 {
    match (name, args) {
        ("exp", [x]) => armada_math::exp(*x),
        ("ln", [x]) => armada_math::ln(*x),
        ("log1p", [x]) => armada_math::log1p(*x),
        ("expm1", [x]) => armada_math::expm1(*x),
        ("sin", [x]) => armada_math::sin(*x),
        ("cos", [x]) => armada_math::cos(*x),
        ("erf", [x]) => armada_math::erf(*x),
        ("erfc", [x]) => armada_math::erfc(*x),
        ("pow", [x, y]) => armada_math::pow(*x, *y),
        ("hypot", [x, y]) => armada_math::hypot(*x, *y),
        _ => panic!("reference.txt names {name} with {} arguments", args.len()),
    }
}

/// A double's position on the line of all doubles (so that a difference counts ulps, across 0).
fn ordinal(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    if b < 0 {
        -(b & i64::MAX)
    } else {
        b
    }
}

fn parse_bits(hex: &str) -> f64 {
    f64::from_bits(u64::from_str_radix(hex, 16).expect("16 hex digits"))
}

#[test]
fn every_function_is_within_its_documented_ulp_bound() {
    let text = include_str!("reference.txt");
    let mut worst: BTreeMap<&str, (f64, String)> = BTreeMap::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (name, rest) = fields.split_first().expect("a function name");
        let (residual, rest) = rest.split_last().expect("a residual");
        let (nearest, args) = rest.split_last().expect("the nearest double");
        let args: Vec<f64> = args.iter().map(|a| parse_bits(a)).collect();
        let (nearest, residual): (f64, f64) = (parse_bits(nearest), residual.parse().expect("a residual"));
        let got = eval(name, &args);
        *counts.entry(name).or_default() += 1;
        if nearest.is_infinite() || (nearest == 0.0 && residual == 0.0) {
            // Exact results (decimal keeps no sign of zero: `signed_zeros` checks those).
            assert!(got == nearest, "{name}{args:?}: {got:e}, exactly {nearest:e}");
            continue;
        }
        let error = ((ordinal(got) - ordinal(nearest)) as f64 - residual).abs();
        let entry = worst.entry(name).or_insert((0.0, String::new()));
        if error > entry.0 {
            *entry = (error, format!("{name}{args:?} = {got:e}"));
        }
    }
    for (name, bound) in BOUNDS {
        assert!(counts.get(name).copied().unwrap_or(0) >= 500, "{name}: too few reference points");
        let (error, at) = &worst[name];
        println!("{name:>6}: worst {error:.3} ulp at {at}");
        assert!(*error <= bound, "{name}: {error:.3} ulp at {at}, over its bound of {bound} ulp");
    }
}

/// The odd functions keep the sign of zero; the even ones and `exp`, `erfc` give 1.
#[test]
fn signed_zeros() {
    use armada_math::*;
    for f in [sin, log1p, expm1, erf] {
        assert_eq!(f(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(f(0.0).to_bits(), 0);
    }
    assert_eq!((exp(-0.0), cos(-0.0), erfc(-0.0), pow(-0.0, 0.0)), (1.0, 1.0, 1.0, 1.0));
    assert_eq!((ln(0.0), ln(-0.0)), (f64::NEG_INFINITY, f64::NEG_INFINITY));
    assert!(ln(-1.0).is_nan() && exp(f64::NAN).is_nan() && sin(f64::INFINITY).is_nan());
}

armada_math::avx2_dispatch! {
    /// `fma` over slices, compiled as the kernels are: with the FMA instruction where the
    /// processor has it, else through the C library's `fma`.
    fn fused(a: &[f64], b: &[f64], c: &[f64], out: &mut [f64]) {
        for i in 0..out.len() {
            out[i] = armada_math::fma(a[i], b[i], c[i]);
        }
    }
}

/// `fma` is the fused multiply-add rounded once, bit for bit the `libm` crate's software
/// `fma` (musl's, exact integer arithmetic): on random operands over a wide range of
/// exponents, where `c` cancels the rounded product (the result is the product's rounding
/// error, lost without fusing), and on halfway cases; in a dispatched kernel (the FMA
/// instruction where the processor has it: the comparison that matters) and called directly
/// (the runtime library's `fma`).
#[test]
fn fma_is_the_correctly_rounded_fused_multiply_add() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    let wide = |rng: &mut rand_chacha::ChaCha8Rng| {
        let m: f64 = rng.random_range(-1.0..1.0);
        m * 2f64.powi(rng.random_range(-60..60))
    };
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..300_000 {
        let (x, y) = (wide(&mut rng), wide(&mut rng));
        let z = match k % 3 {
            0 => wide(&mut rng),
            1 => -(x * y),
            // 1 + 2^-53 (a tie for a + b; a fused product can break it either way).
            _ => 1.0 + f64::from_bits(rng.random_range(0..8)),
        };
        a.push(x);
        b.push(y);
        c.push(z);
    }
    a.extend([1.0 + f64::EPSILON, 0.1, 1e308, -0.0, f64::INFINITY, f64::NAN, 5e-324]);
    b.extend([1.0 - f64::EPSILON, 0.1, 10.0, 0.0, 0.0, 1.0, 0.5]);
    c.extend([-1.0, -(0.1 * 0.1), -f64::MAX, 0.0, 1.0, 1.0, 0.0]);
    let mut out = vec![0.0; a.len()];
    fused(&a, &b, &c, &mut out);
    for i in 0..a.len() {
        let want = libm::fma(a[i], b[i], c[i]);
        let same = |got: f64| got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
        assert!(same(out[i]), "fma({:e}, {:e}, {:e}) = {:e} in a kernel, want {want:e}", a[i], b[i], c[i], out[i]);
        let direct = armada_math::fma(a[i], b[i], c[i]);
        assert!(same(direct), "fma({:e}, {:e}, {:e}) = {direct:e}, want {want:e}", a[i], b[i], c[i]);
    }
    // Fusing is visible: the rounding error of 0.1 * 0.1 survives.
    assert_ne!(armada_math::fma(0.1, 0.1, -(0.1 * 0.1)), 0.0);
}
