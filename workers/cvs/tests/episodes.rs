//! Whole runs of the `cvs` family on small budgets: budget accounting, ETC's per-group play
//! counts, the proposed method's phases, round robin and alpha schedule (Algorithm 1 and the
//! paper's Experiments section), and bit-reproducibility with common random numbers across algorithms.

use armada_core::{run_job, JobSpec, ParamValue, Registry, StepRecord};
use armada_cvs::episode::CvsMetrics;
use armada_cvs::CvsFamily;

fn col(name: &str) -> usize {
    CvsMetrics::DEFS.iter().position(|m| m.name == name).unwrap()
}

fn spec(benchmark: &str, algorithm: &str, bench: &[(&str, ParamValue)], algo: &[(&str, ParamValue)]) -> JobSpec {
    let mut spec = JobSpec::new("cvs", benchmark, algorithm);
    for (k, v) in bench {
        spec.benchmark_params.insert(k.to_string(), v.clone());
    }
    // Small searches and MC sets keep the tests fast; the logic under test does not depend on them.
    let small = [
        ("n_mc", ParamValue::Int(64)),
        ("n_sigma", ParamValue::Int(16)),
        ("n_warmup_full", ParamValue::Int(200)),
        ("n_warmup_partial", ParamValue::Int(30)),
        ("n_iter", ParamValue::Int(2)),
    ];
    for (k, v) in small.iter().chain(algo) {
        spec.algorithm_params.insert(k.to_string(), v.clone());
    }
    spec.horizon = 400;
    spec
}

fn run(spec: &JobSpec) -> Vec<StepRecord> {
    let registry = Registry::new(vec![Box::new(CvsFamily)]);
    let job = registry.validate(spec).unwrap();
    let mut rows = Vec::new();
    run_job(&registry, &job, &mut |r| {
        rows.push(r);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    rows
}

/// The plays: every row after step 0.
fn played(rows: &[StepRecord]) -> Vec<&StepRecord> {
    rows.iter().filter(|r| r.step > 0).collect()
}

#[test]
fn a_run_ends_once_its_budget_is_spent() {
    let budget = 3.5;
    for rule in ["overshoot", "strict"] {
        let s = spec(
            "plant",
            "ucb-psq",
            &[("budget", ParamValue::Float(budget)), ("budget_rule", ParamValue::Str(rule.into()))],
            &[],
        );
        let rows = run(&s);
        let plays = played(&rows);
        let cum: Vec<f64> = plays.iter().map(|r| r.values[col("cum_cost")]).collect();
        // Cumulative cost is the running sum of realised costs, strictly increasing.
        let mut sum = 0.0;
        for (r, c) in plays.iter().zip(&cum) {
            sum += r.values[col("cost")];
            assert!((sum - c).abs() < 1e-12);
        }
        assert!(cum.windows(2).all(|w| w[1] > w[0]));
        // Every play but the last started with budget left.
        assert!(cum[..cum.len() - 1].iter().all(|&c| c < budget));
        match rule {
            "overshoot" => assert!(*cum.last().unwrap() >= budget),
            _ => assert!(*cum.last().unwrap() <= budget),
        }
        // UCB-PSQ always plays plant's full set (no partial set beats it); costs about 1 => 3 or 4 plays.
        assert!(plays.iter().all(|r| r.values[col("set")] == 7.0));
        assert!((3..=4).contains(&plays.len()), "{} plays", plays.len());
        // The run ends with its last play, long before the horizon: steps 0..=plays, and
        // each play counts itself.
        assert_eq!(rows.len(), plays.len() + 1);
        assert!(rows.len() < s.horizon as usize);
        assert!(rows.iter().enumerate().all(|(i, r)| r.step as usize == i && r.values[col("n_evals")] == i as f64));
        // Simple regret is the oracle best-so-far: non-increasing, and >= 0 (f* is the max).
        let sr: Vec<f64> = plays.iter().map(|r| r.values[col("simple_regret")]).collect();
        assert!(sr.windows(2).all(|w| w[1] <= w[0]) && sr.iter().all(|&v| v >= -1e-9));
    }
}

#[test]
fn etc_plays_each_group_its_quota_then_commits() {
    let s = spec(
        "hartmann6-12d",
        "etc",
        &[("budget", ParamValue::Float(3.0)), ("cost_set", ParamValue::Str("moderate".into()))],
        &[("plays_per_group", ParamValue::Int(4))],
    );
    let rows = run(&s);
    let sets: Vec<f64> = played(&rows).iter().map(|r| r.values[col("set")]).collect();
    let groups: Vec<f64> = played(&rows).iter().map(|r| r.values[col("etc_group")]).collect();
    // Size groups: {I_1..I_4} (3 variables), {I_5, I_6} (6 variables), then the full set I_7.
    assert!(sets[..4].iter().all(|s| (1.0..=4.0).contains(s)), "{sets:?}");
    assert!(sets[4..8].iter().all(|s| (5.0..=6.0).contains(s)), "{sets:?}");
    assert!(sets[8..].iter().all(|&s| s == 7.0), "{sets:?}");
    assert_eq!(&groups[..9], &[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0]);
    // Moderate costs: 4 x 0.1 + 4 x 0.2 = 1.2 before the commit, then full-set plays of ~1.
    assert!(sets.len() == 10 || sets.len() == 11, "{} plays", sets.len());
}

#[test]
fn proposed_explores_round_robin_then_exploits_with_halving_alpha() {
    let budget = 5.0;
    let s = spec(
        "plant",
        "proposed",
        &[("budget", ParamValue::Float(budget)), ("cost_set", ParamValue::Str("moderate".into()))],
        &[],
    );
    let rows = run(&s);
    let plays = played(&rows);
    let mut spent_before = 0.0;
    let mut n_exploit = 0;
    for (t, r) in plays.iter().enumerate() {
        let phase = r.values[col("phase")];
        if spent_before < 0.6 * budget {
            assert_eq!(phase, 1.0, "play {t}: still exploring");
            assert_eq!(r.values[col("set")], (t % 7 + 1) as f64, "round robin ((t-1) mod m) + 1");
        } else {
            assert_eq!(phase, 2.0, "play {t}: exploiting");
            // alpha = 0.1 * 0.5^floor(n_exp / d), d = 5 on plant.
            assert_eq!(r.values[col("alpha")], 0.1 * 0.5f64.powi(n_exploit / 5));
            assert!(r.values[col("n_s3")] >= 1.0 && r.values[col("n_s3")] <= r.values[col("n_s1")]);
            n_exploit += 1;
        }
        spent_before = r.values[col("cum_cost")];
    }
    assert!(n_exploit > 0);
    // lcb_bar is a running max over the run (Algorithm 1, line 14) unless S1 emptied and it was reset.
    let lcb: Vec<f64> = plays.iter().map(|r| r.values[col("lcb_bar")]).collect();
    assert!(lcb.iter().all(|v| v.is_finite()));
}

#[test]
fn runs_are_reproducible_and_share_the_environment() {
    let s = spec("plant", "ts-psq", &[("budget", ParamValue::Float(2.5))], &[("n_features", ParamValue::Int(64))]);
    let a: Vec<Vec<f64>> = run(&s).into_iter().map(|r| r.values).collect();
    let b: Vec<Vec<f64>> = run(&s).into_iter().map(|r| r.values).collect();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    // Common random numbers: the realised cost sequence of the full set is the same for two
    // algorithms that both play it every time.
    let u = spec("plant", "ucb-psq", &[("budget", ParamValue::Float(2.5))], &[]);
    let costs = |rows: Vec<StepRecord>| played(&rows).iter().map(|r| r.values[col("cost")]).collect::<Vec<_>>();
    assert_eq!(costs(run(&s)), costs(run(&u)));
}

#[test]
fn code_mode_and_ucb_cvs_run_on_airfoil() {
    for (algo, extra) in [
        ("proposed", vec![("mode", ParamValue::Str("code".into())), ("n_mc", ParamValue::Int(96))]),
        ("ucb-cvs", vec![]),
    ] {
        let s = spec(
            "airfoil",
            algo,
            &[("budget", ParamValue::Float(1.0)), ("cost_set", ParamValue::Str("moderate".into()))],
            &extra,
        );
        let rows = run(&s);
        let plays = played(&rows);
        // Airfoil has no full set: every choice is one of the seven 2-variable sets.
        assert!(plays.iter().all(|r| (1.0..=7.0).contains(&r.values[col("set")])));
        // Simple regret against the per-variance f*: F of a played pair never beats it.
        assert!(plays.iter().all(|r| r.values[col("simple_regret")] >= -1e-9));
    }
}

#[test]
fn bad_combinations_are_refused_naming_the_field() {
    let registry = Registry::new(vec![Box::new(CvsFamily)]);
    let s = spec("airfoil", "ucb-psq", &[("variance", ParamValue::Float(0.03))], &[]);
    let e = registry.validate(&s).unwrap_err();
    assert_eq!(e.field_path, "benchmark_params.variance");
    let s = spec("plant", "ucb-psq", &[], &[("n_sigma", ParamValue::Int(2000))]);
    assert_eq!(registry.validate(&s).unwrap_err().field_path, "algorithm_params.n_sigma");
}

#[test]
fn code_mode_caps_on_the_stale_posterior_with_and_without_the_refit() {
    let bench = [("budget", ParamValue::Float(6.0)), ("cost_set", ParamValue::Str("cheap".into()))];
    // Exploration (until 40 % of the budget remains) plays sets round robin, so its length
    // depends on the costs only: measure it once, and cap two exploitation plays after it.
    let uncapped = [("mode", ParamValue::Str("code-fixed".into())), ("t_cap", ParamValue::Int(0))];
    let rows = run(&spec("plant", "proposed", &bench, &uncapped));
    let n_explore = played(&rows).iter().filter(|r| r.values[col("phase")] == 1.0).count() as i64;
    let t_cap = n_explore + 3;
    for mode in ["code", "code-fixed"] {
        let algo = [("mode", ParamValue::Str(mode.into())), ("t_cap", ParamValue::Int(t_cap))];
        let rows = run(&spec("plant", "proposed", &bench, &algo));
        let exploit: Vec<&StepRecord> = played(&rows).into_iter().filter(|r| r.values[col("phase")] == 2.0).collect();
        let (before, capped): (Vec<&StepRecord>, Vec<&StepRecord>) =
            exploit.iter().partition(|r| (r.values[col("n_evals")] as i64) < t_cap);
        assert!(
            !before.is_empty() && !capped.is_empty(),
            "{mode}: {} before the cap, {} after",
            before.len(),
            capped.len()
        );
        // Before the cap C4 computes Lmax and the feasible sets; from the cap on, C5 draws a set
        // and optimises it on the posterior kept from iteration t_cap - 1.
        assert!(before.iter().all(|r| r.values[col("lcb_bar")].is_finite() && r.values[col("n_s1")] >= 1.0));
        assert!(capped.iter().all(|r| r.values[col("lcb_bar")].is_nan() && r.values[col("n_s1")] == 0.0));
    }
}
