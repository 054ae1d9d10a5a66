//! The example family as armada uses it: a registry validates a job (defaults filled in,
//! bad parameters refused naming the field), and the runner drives it to its horizon.

use armada_core::{run_job, JobSpec, ParamValue, Registry, StepRecord};
use armada_example::ExampleFamily;
use std::ops::ControlFlow;

fn registry() -> Registry {
    Registry::new(vec![Box::new(ExampleFamily)])
}

fn run(algorithm: &str, seed: u64) -> Vec<StepRecord> {
    let mut spec = JobSpec::new("example", "quadratic", algorithm);
    spec.seed = seed;
    spec.horizon = 40;
    let job = registry().validate(&spec).unwrap();
    let mut records = Vec::new();
    run_job(&registry(), &job, &mut |r| {
        records.push(r);
        ControlFlow::Continue(())
    })
    .unwrap();
    records
}

#[test]
fn validation_fills_defaults_and_refuses_bad_parameters_by_name() {
    let r = registry();
    let mut spec = JobSpec::new("example", "quadratic", "hill-climb");
    spec.horizon = 10;
    let job = r.validate(&spec).unwrap();
    assert_eq!(job.spec.benchmark_params.get("dim"), Some(&ParamValue::Int(2)));
    assert_eq!(job.spec.algorithm_params.get("step"), Some(&ParamValue::Float(0.5)));
    spec.algorithm_params.insert("step".into(), ParamValue::Float(-1.0));
    assert_eq!(r.validate(&spec).unwrap_err().field_path, "algorithm_params.step");
    spec.algorithm = "gradient".into();
    assert_eq!(r.validate(&spec).unwrap_err().field_path, "algorithm");
}

#[test]
fn a_run_has_one_record_per_step_and_keeps_its_best_point() {
    for algorithm in ["random", "hill-climb"] {
        let records = run(algorithm, 3);
        assert_eq!(records.iter().map(|r| r.step).collect::<Vec<_>>(), (0..=40).collect::<Vec<_>>());
        for (i, r) in records.iter().enumerate() {
            let (y, best_f, evaluations) = (r.values[0], r.values[1], r.values[2]);
            assert!(y.is_finite() && (0.0..=18.0).contains(&best_f), "{algorithm} step {i}: {best_f}");
            assert_eq!(evaluations, (i + 1) as f64);
        }
        // The same job is the same trajectory, bit for bit (timings aside).
        let again = run(algorithm, 3);
        assert!(records.iter().zip(&again).all(|(a, b)| a.values == b.values));
    }
    // Common random numbers: the algorithms of a seed look at different first points (their
    // own streams) under the same noise (an environment stream): at step 0, best_f is f at
    // the first point, so y - best_f is the first noise draw (up to the rounding of f + noise).
    // Seeds differ.
    let noise = |r: &StepRecord| r.values[0] - r.values[1];
    let (random, climb) = (run("random", 3), run("hill-climb", 3));
    assert_ne!(random[0].values[1], climb[0].values[1]);
    assert!((noise(&random[0]) - noise(&climb[0])).abs() < 1e-12);
    assert!((noise(&random[0]) - noise(&run("random", 4)[0])).abs() > 1e-6);
}

#[test]
fn climbing_beats_its_start_where_random_search_need_not() {
    // Over a few seeds the hill climber ends well below its first point (2-D, 40 steps).
    for seed in 0..5 {
        let records = run("hill-climb", seed);
        let (first, last) = (records[0].values[1], records[40].values[1]);
        assert!(last < 0.5 * first.max(1e-3) || last < 0.05, "seed {seed}: {first} -> {last}");
    }
}
