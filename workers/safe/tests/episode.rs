//! Whole runs through the registry: reproducibility, common random numbers, metrics recomputed
//! from the recorded choices, parameter checks, and the MAP refit.

use armada_core::{Family, JobSpec, JobStreams, ParamValue, Registry};
use armada_gp::{log_posterior_and_grad, KernelKind, LogNormalPrior, MapConfig};
use armada_safe::benchmarks::Benchmark;
use armada_safe::regret::RegretReference;
use armada_safe::surrogate::{RefitMode, Surrogate};
use armada_safe::{SafeFamily, SafeMetrics};
use ndarray::aview1;
use rand::SeedableRng;

fn registry() -> Registry {
    Registry::new(vec![Box::new(SafeFamily)])
}

fn spec(benchmark: &str, algorithm: &str, grid: i64, horizon: u32, seed: u64) -> JobSpec {
    let mut spec = JobSpec::new("safe", benchmark, algorithm);
    spec.benchmark_params.insert("grid".into(), ParamValue::Int(grid));
    spec.horizon = horizon;
    spec.seed = seed;
    spec
}

fn run(spec: &JobSpec) -> Vec<Vec<f64>> {
    let registry = registry();
    let job = registry.validate(spec).unwrap();
    let mut episode = SafeFamily.start(&job, &JobStreams::new(&job.spec)).unwrap();
    let mut rows = vec![episode.initial_values().unwrap()];
    for t in 1..=spec.horizon {
        rows.push(episode.step_values(t).unwrap().expect("safe runs every step"));
    }
    rows
}

fn col(name: &str) -> usize {
    SafeMetrics::DEFS.iter().position(|m| m.name == name).unwrap()
}

fn bits(rows: &[Vec<f64>]) -> Vec<Vec<u64>> {
    rows.iter().map(|r| r.iter().map(|v| v.to_bits()).collect()).collect()
}

#[test]
fn a_job_is_bit_reproducible() {
    let s = spec("pendulum", "msafeopt-case1", 20, 4, 3);
    assert_eq!(bits(&run(&s)), bits(&run(&s)));
}

#[test]
fn seed_points_and_the_first_fit_are_common_to_all_algorithms_of_a_seed() {
    let step0 = |alg: &str, seed: u64| run(&spec("clinical", alg, 20, 1, seed)).remove(0);
    let hyper = ["f_variance", "g_variance", "f_lengthscale_s", "g_lengthscale_s"].map(col);
    let a = step0("msafeopt-case1", 0);
    for alg in ["msafeopt-case2", "safeopt-mc", "predvar"] {
        let b = step0(alg, 0);
        assert!(hyper.iter().all(|&i| a[i] == b[i]), "{alg}");
    }
    let other = step0("msafeopt-case1", 1);
    assert!(hyper.iter().any(|&i| a[i] != other[i]));
}

#[test]
fn recorded_metrics_agree_with_the_recorded_choices() {
    for alg in ["msafeopt-case1", "msafeopt-case2", "safeopt-mc", "predvar"] {
        let s = spec("synthetic-2d", alg, 25, 6, 0);
        let rows = run(&s);
        let bench =
            Benchmark::from_params("synthetic-2d", &registry().validate(&s).unwrap().spec.benchmark_params).unwrap();
        let reference = RegretReference::new(&bench);
        let (mut cum, mut cum2, mut violations) = (0.0, 0.0, 0.0);
        for (t, row) in rows.iter().enumerate().skip(1) {
            let k = row[col("grid_index")] as usize;
            let z = bench.grid.points.row(k);
            assert_eq!((row[col("s")], row[col("x1")]), (z[0], z[1]));
            assert!(row[col("x2")].is_nan());
            // Brute force: best safe f overall and in the chosen row.
            let n_s = bench.grid.n_s();
            let safe_max = |ks: std::ops::Range<usize>| {
                ks.filter(|&k| bench.g[k] <= bench.h).map(|k| bench.f[k]).fold(f64::NEG_INFINITY, f64::max)
            };
            let r = safe_max(0..bench.f.len()) - bench.f[k];
            let row_start = k / n_s * n_s;
            let r2 = safe_max(row_start..row_start + n_s) - bench.f[k];
            cum += r;
            cum2 += r2;
            violations += f64::from(u8::from(bench.g[k] > bench.h));
            assert_eq!(row[col("regret_inst")], r);
            assert_eq!(row[col("regret2_inst")], r2);
            assert!((row[col("regret_avg")] - cum / t as f64).abs() < 1e-12);
            assert!((row[col("regret2_cum")] - cum2).abs() < 1e-12);
            assert_eq!(row[col("violations_cum")], violations);
            // r^X is a max over rows of non-negative gaps (s_hat is certified at s = 0 at worst)
            // and at least the gap of any single row; r' <= r since f(s_*^(x)) <= f(s_*).
            assert!(row[col("regretx_inst")] >= 0.0 && r2 <= r + 1e-15);
            assert_eq!(reference.fstar, safe_max(0..bench.f.len()));
            match alg {
                "msafeopt-case2" | "safeopt-mc" | "predvar" => assert_eq!(row[col("active_x")], 25.0),
                _ => assert!(row[col("active_x")] <= 25.0),
            }
            if alg == "predvar" {
                assert!(row[col("expanders")].is_nan() && row[col("maximisers")].is_nan());
            }
        }
    }
}

#[test]
fn bad_parameter_combinations_are_refused_naming_the_field() {
    let r = registry();
    let e = r.validate(&spec("synthetic-3d", "predvar", 80, 5, 0)).unwrap_err();
    assert_eq!(e.field_path, "benchmark_params.grid", "{e}");
    let mut s = spec("clinical", "predvar", 20, 5, 0);
    s.algorithm_params.insert("restarts_per_param".into(), ParamValue::Int(0));
    assert_eq!(r.validate(&s).unwrap_err().field_path, "algorithm_params.restarts_per_param");
    s.algorithm_params.insert("refit".into(), ParamValue::Str("warm".into()));
    assert!(r.validate(&s).is_ok());
    // Clinical g(0, 2) = 0.8808: h = 0.88 makes a seed action unsafe; the default 0.9 does not.
    let mut s = spec("clinical", "predvar", 20, 5, 0);
    s.benchmark_params.insert("h".into(), ParamValue::Float(0.88));
    let e = r.validate(&s).unwrap_err();
    assert_eq!(e.field_path, "benchmark_params.h", "{e}");
    assert!(e.message.contains("0.8807"), "{e}");
    let mut s = spec("clinical", "msafeopt-case2", 20, 5, 0);
    s.algorithm_params.insert("elimination".into(), ParamValue::Str("progressive".into()));
    assert_eq!(r.validate(&s).unwrap_err().field_path, "algorithm_params.elimination");
}

/// The refit never lowers the MAP objective below the previous estimate's (the previous
/// values are one of the screened starts), in both the multi-start and the warm mode.
#[test]
fn refits_never_lose_to_the_previous_hyperparameters() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let config = MapConfig::new(
        KernelKind::Matern52,
        LogNormalPrior { mu: 0.0, sigma: 1.0 },
        LogNormalPrior { mu: 0.2f64.ln(), sigma: 1.0 },
        1e-5,
    );
    for mode in [RefitMode::Multistart, RefitMode::Warm] {
        let mut model = Surrogate::new(2, 1.0, 1e-5, mode, 10);
        for i in 0..12 {
            let (s, x) = ((i * 7 % 12) as f64 / 11.0, (i * 5 % 12) as f64 / 5.5);
            let (f, _) = armada_safe::benchmarks::clinical::eval(s, aview1(&[x]));
            let before = model.kernel().clone();
            model.observe(aview1(&[s, x]), f);
            let (xs, ys) = model.data();
            let (xs, ys) = (xs.to_owned(), ys.to_vec());
            let j = |k| log_posterior_and_grad(xs.view(), &ys, k, &config).unwrap().0;
            let j_before = j(&before);
            model.refit(&mut rng).unwrap();
            assert!(j(model.kernel()) >= j_before - 1e-9, "{mode:?} at {i}");
        }
    }
    let mut fixed = Surrogate::new(2, 1.0, 1e-5, RefitMode::Fixed, 10);
    fixed.observe(aview1(&[0.5, 0.5]), 1.0);
    fixed.refit(&mut rng).unwrap();
    assert_eq!((fixed.kernel().variance, fixed.kernel().lengthscales.clone()), (1.0, vec![0.2, 0.2]));
}

#[test]
fn the_posterior_interpolates_noiseless_data_and_reverts_to_the_prior_far_away() {
    let mut model = Surrogate::new(2, 2.0, 1e-8, RefitMode::Fixed, 10);
    model.observe(aview1(&[0.1, 0.2]), 0.7);
    model.observe(aview1(&[0.9, 0.4]), -0.3);
    let q = ndarray::array![[0.1, 0.2], [0.9, 0.4], [50.0, 50.0]];
    let (mu, sd) = model.predict(q.view()).unwrap();
    // The same points column-major (a transposed view): the same numbers.
    let qt = q.t().to_owned();
    assert_eq!(model.predict(qt.t()).unwrap(), (mu.clone(), sd.clone()));
    assert!((mu[0] - 0.7).abs() < 1e-6 && (mu[1] + 0.3).abs() < 1e-6);
    assert!(sd[0] < 1e-3 && sd[1] < 1e-3);
    assert!(mu[2].abs() < 1e-12 && (sd[2] - 2f64.sqrt()).abs() < 1e-12);
}

/// Every rule on every benchmark, with every switch: per-step invariants of the recorded
/// sets (from the paper's definitions: s = 0 is always certified, Case 2 keeps every row,
/// M-SafeOpt's expanders and maximisers come from surviving rows, one per row) and of the
/// counters.
#[test]
fn set_sizes_and_counters_obey_their_invariants_for_every_rule_and_benchmark() {
    let variants: [(&str, &[(&str, ParamValue)]); 9] = [
        ("msafeopt-case1", &[]),
        ("msafeopt-case1", &[("elimination", ParamValue::Str("progressive".into()))]),
        ("msafeopt-case1", &[("refined_acquisition", ParamValue::Bool(true)), ("l_scale", ParamValue::Float(0.1))]),
        ("msafeopt-case2", &[("refit", ParamValue::Str("warm".into()))]),
        ("msafeopt-case3a", &[]),
        ("msafeopt-case3b", &[("refit", ParamValue::Str("fixed".into()))]),
        ("safeopt-mc", &[]),
        ("predvar", &[]),
        ("msafeopt-case1", &[("beta_f", ParamValue::Float(1.0)), ("beta_g", ParamValue::Float(5.0))]),
    ];
    for bench in ["clinical", "synthetic-2d", "synthetic-3d", "pendulum"] {
        let grid = if bench == "synthetic-3d" { 6 } else { 12 };
        for (alg, params) in variants {
            let mut s = spec(bench, alg, grid, 4, 1);
            for (k, v) in params {
                s.algorithm_params.insert(k.to_string(), v.clone());
            }
            let rows = run(&s);
            let n_x = (grid as usize).pow(if bench == "synthetic-3d" { 2 } else { 1 }) as f64;
            let mut violations = 0.0;
            for (t, row) in rows.iter().enumerate().skip(1) {
                let v = |name: &str| row[col(name)];
                let what = format!("{bench}/{alg} {params:?} step {t}");
                assert!(v("certified") >= n_x, "{what}: the s = 0 column is always certified");
                assert!(v("active_x") >= 1.0 && v("active_x") <= n_x, "{what}");
                if alg.starts_with("msafeopt") {
                    assert!(v("expanders") <= v("active_x"), "{what}: one expander per surviving row at most");
                }
                if matches!(alg, "msafeopt-case1" | "msafeopt-case2") {
                    assert_eq!(v("maximisers"), v("active_x"), "{what}: one maximiser per surviving row");
                }
                if alg == "msafeopt-case2" {
                    assert_eq!(v("active_x"), n_x, "{what}");
                }
                assert!(v("violations_cum") >= violations && v("violations_cum") <= t as f64, "{what}");
                violations = v("violations_cum");
                assert!((v("regret_cum") / t as f64 - v("regret_avg")).abs() < 1e-12, "{what}");
                assert!(v("acquisition").is_finite() && v("acquisition") >= 0.0, "{what}");
                assert!((0.0..=1.0).contains(&v("s")), "{what}");
                assert_eq!(v("refit_evals") == 0.0, alg == "msafeopt-case3b", "{what}: only `fixed` skips refits");
            }
        }
    }
}
