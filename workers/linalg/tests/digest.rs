//! The bits themselves, pinned: digests of every kernel's results on fixed matrices, computed
//! on x86-64 and reproduced by every target (this test also runs under `qemu-aarch64`, and
//! the workspace's tests/numerics/golden.rs under emulated x86-64 processors of every level).

use armada_linalg::{
    cholesky_in_place, dot, matmul, solve_lower_in_place, solve_lower_transpose_in_place, squared_norm,
    symmetric_eigen, Accum, Mat,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// FNV-1a over the entries' bits, column by column.
fn digest(m: &Mat<f64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            for byte in m[(i, j)].to_bits().to_le_bytes() {
                h ^= byte as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    h
}

fn random(rows: usize, cols: usize, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Mat::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0))
}

#[test]
fn kernels_give_their_pinned_bits() {
    // A product over several blocks of every size, and a transposed operand.
    let (a, b) = (random(131, 300, 1), random(300, 37, 2));
    let mut ab = random(131, 37, 3);
    matmul(ab.as_mut(), Accum::Add, a.as_ref(), b.as_ref(), -0.75);
    let mut atb = Mat::zeros(300, 300);
    matmul(atb.as_mut(), Accum::Replace, a.transpose(), a.as_ref(), 1.0 / 131.0);
    // A positive definite matrix (a^T a / 131 + I), its factor, solves with it, its eigen.
    let mut spd = atb.clone();
    for i in 0..300 {
        spd[(i, i)] += 1.0;
    }
    let mut l = spd.clone();
    cholesky_in_place(l.as_mut()).unwrap();
    let mut x = random(300, 20, 4);
    solve_lower_in_place(l.as_ref(), x.as_mut());
    let mut y = random(300, 3, 5);
    solve_lower_transpose_in_place(l.as_ref(), y.as_mut());
    // Many right-hand sides, not a multiple of the substitution panels' width.
    let mut z = random(300, 21, 6);
    solve_lower_transpose_in_place(l.as_ref(), z.as_mut());
    let small = Mat::from_fn(40, 40, |i, j| spd[(i, j)]);
    let (u, lambda) = symmetric_eigen(small.as_ref());
    let v: Vec<f64> = (0..1001).map(|i| armada_math::sin(i as f64 * 0.37)).collect();
    let sums = Mat::from_fn(2, 1, |i, _| {
        if i == 0 {
            squared_norm(&v)
        } else {
            dot(&v, &v[..1001].iter().rev().copied().collect::<Vec<_>>())
        }
    });
    let got = [
        ("matmul", digest(&ab)),
        ("matmul transposed", digest(&atb)),
        ("cholesky", digest(&l)),
        ("solve L", digest(&x)),
        ("solve L^T", digest(&y)),
        ("solve L^T, many", digest(&z)),
        ("eigenvectors", digest(&u)),
        ("eigenvalues", digest(&Mat::from_fn(40, 1, |i, _| lambda[i]))),
        ("sums", digest(&sums)),
    ];
    assert_eq!(got, PINNED);
}

const PINNED: [(&str, u64); 9] = [
    ("matmul", 0x5f2b848194e969b4),
    ("matmul transposed", 0x5d15d85773591651),
    ("cholesky", 0x0ce1645aaf61ce3d),
    ("solve L", 0xe55c85ae32704511),
    ("solve L^T", 0x7657711d2025e6dd),
    ("solve L^T, many", 0x7f2c7a8a8a2f47b8),
    ("eigenvectors", 0xb511a5dd4b0a60eb),
    ("eigenvalues", 0x1c3d86567921c17c),
    ("sums", 0x4b11484852783923),
];
