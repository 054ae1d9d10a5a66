//! Agreement with independent numpy / scikit-learn reference values (fixtures/make_fixtures.py).
//!
//! Tolerance: 1e-10 relative to the quantity's natural scale. Kernel values and the log marginal
//! likelihood are compared relative to their own magnitude; posterior means, variances and
//! covariances are compared relative to `max(|ref|, v)` with `v` the prior variance, because they
//! are computed as differences of O(v) terms (`k - V^T V`), so their absolute rounding error is
//! O(eps * cond(C) * v) ~ 1e-13 v for these well-conditioned (noise 1e-2) problems.

use armada_gp::{Gp, Kernel};
use serde_json::Value;

/// This checkout's root, read when the test runs: cargo reuses a test binary built from
/// another checkout of the same sources when both share a target directory, and
/// `env!("CARGO_MANIFEST_DIR")` would then still name that other checkout.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), std::path::PathBuf::from)
}

/// `data.len() / dim` points, one per row.
fn rows(dim: usize, data: Vec<f64>) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_vec((data.len() / dim, dim), data).unwrap()
}

const TOL: f64 = 1e-10;

fn fixtures() -> Value {
    let path = manifest_dir().join("tests/fixtures/reference.json");
    let text = std::fs::read_to_string(path).expect("reference.json present");
    serde_json::from_str(&text).expect("reference.json parses")
}

fn vecf(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

fn kernel_of(case: &Value) -> Kernel {
    let v = case["variance"].as_f64().unwrap();
    let ls = vecf(&case["lengthscales"]);
    match case["kind"].as_str().unwrap() {
        "se" => Kernel::squared_exponential(v, ls),
        "m32" => Kernel::matern32(v, ls),
        "m52" => Kernel::matern52(v, ls),
        k => panic!("unknown kind {k}"),
    }
}

fn assert_close(what: &str, got: f64, want: f64, scale: f64) {
    let err = (got - want).abs();
    assert!(err <= TOL * scale.max(want.abs()), "{what}: got {got:e}, want {want:e}, err {err:e}");
}

#[test]
fn kernel_matrices_match_sklearn() {
    let fx = fixtures();
    let cases = fx["posterior"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for case in cases {
        let kernel = kernel_of(case);
        let dim = case["dim"].as_u64().unwrap() as usize;
        let x = rows(dim, vecf(&case["x"]));
        let xq = rows(dim, vecf(&case["xq"]));
        let gram = kernel.gram(x.view());
        let want = vecf(&case["gram"]);
        let n = x.nrows();
        for i in 0..n {
            for j in 0..n {
                assert_close("gram", gram[(i, j)], want[i * n + j], 0.0);
            }
        }
        let cross = kernel.cross(x.view(), xq.view());
        let want = vecf(&case["cross"]);
        let m = xq.nrows();
        for i in 0..n {
            for j in 0..m {
                assert_close("cross", cross[(i, j)], want[i * m + j], 0.0);
            }
        }
    }
}

#[test]
fn posterior_and_lml_match_numpy_and_sklearn() {
    let fx = fixtures();
    for case in fx["posterior"].as_array().unwrap() {
        let kernel = kernel_of(case);
        let v = kernel.variance;
        let dim = case["dim"].as_u64().unwrap() as usize;
        let x = rows(dim, vecf(&case["x"]));
        let xq = rows(dim, vecf(&case["xq"]));
        let y = vecf(&case["y"]);
        let noise = case["noise"].as_f64().unwrap();

        // Both construction routes must agree with the reference.
        let (fitted, report) = Gp::fit(kernel.clone(), noise, x.clone(), y.clone()).unwrap();
        assert_eq!(report.attempts, 0);
        let mut appended = Gp::new(kernel.clone(), noise);
        for (i, yi) in y.iter().enumerate() {
            assert_eq!(appended.append(x.row(i), *yi).unwrap().attempts, 0);
        }
        for gp in [&fitted, &appended] {
            let (mean, var) = gp.predict(xq.view());
            for (g, w) in mean.iter().zip(vecf(&case["mean"])) {
                assert_close("mean", *g, w, v);
            }
            for (g, w) in var.iter().zip(vecf(&case["var"])) {
                assert_close("var", *g, w, v);
            }
            let cov = gp.posterior_cov(xq.view());
            let want = vecf(&case["cov"]);
            let m = xq.nrows();
            for i in 0..m {
                for j in 0..m {
                    assert_close("cov", cov[(i, j)], want[i * m + j], v);
                }
            }
            let lml = case["lml"].as_f64().unwrap();
            assert_close("lml", gp.log_marginal_likelihood(), lml, 0.0);
        }
    }
}

#[test]
fn paper_l_convention_matches_direct_formula() {
    let fx = fixtures();
    let c = &fx["paper_l"];
    let dim = c["dim"].as_u64().unwrap() as usize;
    let kernel =
        Kernel::squared_exponential_paper_l(c["variance"].as_f64().unwrap(), c["l_div"].as_f64().unwrap(), dim);
    assert_eq!(kernel.dim(), dim);
    let a = rows(dim, vecf(&c["a"]));
    let b = rows(dim, vecf(&c["b"]));
    for (i, want) in vecf(&c["values"]).into_iter().enumerate() {
        assert_close("paper L", kernel.eval(a.row(i).as_slice().unwrap(), b.row(i).as_slice().unwrap()), want, 0.0);
    }
}
