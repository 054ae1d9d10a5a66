//! The bits themselves, pinned: a digest of every function over fixed arguments and of fixed
//! draws of every variate. The digests were computed on x86-64; every target must reproduce
//! them (`tests/numerics/golden.rs` of the workspace runs the families under emulated x86-64
//! processors, and this test also runs under `qemu-aarch64`). A dependency update that moved
//! a single bit (the `libm` crate's algorithms) fails here, before it could change what jobs
//! compute without a family's version bump.

use armada_math::dist::{Beta, ChiSquared, Distribution, Gamma, Normal, StandardNormal};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// FNV-1a over the values' bits.
fn digest(values: impl IntoIterator<Item = f64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        for byte in v.to_bits().to_le_bytes() {
            h ^= byte as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// 100,000 arguments per function, uniform over the ranges the families use and beyond.
fn arguments(seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..100_000).map(|_| rng.random_range(lo..hi)).collect()
}

#[test]
fn functions_give_their_pinned_bits() {
    use armada_math::*;
    let got = [
        ("exp", digest(arguments(1, -745.0, 709.0).into_iter().map(exp))),
        ("ln", digest(arguments(2, 0.0, 1e6).into_iter().map(ln))),
        ("log1p", digest(arguments(3, -1.0, 10.0).into_iter().map(log1p))),
        ("expm1", digest(arguments(4, -40.0, 40.0).into_iter().map(expm1))),
        ("sin", digest(arguments(5, -1e4, 1e4).into_iter().map(sin))),
        ("cos", digest(arguments(6, -1e4, 1e4).into_iter().map(cos))),
        ("erfc", digest(arguments(7, -10.0, 30.0).into_iter().map(erfc))),
        ("erf", digest(arguments(8, -7.0, 7.0).into_iter().map(erf))),
        ("pow", digest(arguments(9, 0.0, 10.0).into_iter().zip(arguments(10, -30.0, 30.0)).map(|(x, y)| pow(x, y)))),
        ("hypot", digest(arguments(11, -1e3, 1e3).into_iter().zip(arguments(12, -1.0, 1.0)).map(|(x, y)| hypot(x, y)))),
        ("exp4", digest(arguments(13, -700.0, 700.0).chunks_exact(4).flat_map(|c| lanes::exp4(c.try_into().unwrap())))),
    ];
    let pinned: [(&str, u64); 11] = PINNED_FUNCTIONS;
    assert_eq!(got, pinned);
}

#[test]
fn variates_give_their_pinned_bits() {
    fn draws(d: impl Distribution<f64>, seed: u64) -> u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        digest((0..100_000).map(|_| d.sample(&mut rng)))
    }
    let got = [
        ("standard normal", draws(StandardNormal, 1)),
        ("normal", draws(Normal::new(1.5, 0.3).unwrap(), 2)),
        ("gamma 0.3", draws(Gamma::new(0.3, 1.0).unwrap(), 3)),
        ("gamma 7.5", draws(Gamma::new(7.5, 2.0).unwrap(), 4)),
        ("chi-squared 3", draws(ChiSquared::new(3.0).unwrap(), 5)),
        ("beta 2 5", draws(Beta::new(2.0, 5.0).unwrap(), 6)),
    ];
    assert_eq!(got, PINNED_VARIATES);
}

const PINNED_FUNCTIONS: [(&str, u64); 11] = [
    ("exp", 0x2396c0fb9a491e9e),
    ("ln", 0x17c7267b54588b15),
    ("log1p", 0xe559442e4ebfa19b),
    ("expm1", 0x01b9664a2be4e552),
    ("sin", 0x65a806eb8be84a32),
    ("cos", 0x3ed9ab27ba84ac1a),
    ("erfc", 0x7c51d782d4721c15),
    ("erf", 0x5b660274c28224ba),
    ("pow", 0x249175ca1aae493a),
    ("hypot", 0x6ad58306b5f8b20c),
    ("exp4", 0xbc960e0840c7eb28),
];

const PINNED_VARIATES: [(&str, u64); 6] = [
    ("standard normal", 0x71a2f2133dc73785),
    ("normal", 0xe87bf07725634b72),
    ("gamma 0.3", 0xa969669a51040bc0),
    ("gamma 7.5", 0x6b6a64cd01f5cc24),
    ("chi-squared 3", 0x24733ee9d696d55e),
    ("beta 2 5", 0xa5ca280cea1b67c5),
];
