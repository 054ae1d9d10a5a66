//! Algorithm 2 (paper Appendix A.1) end to end: its beta offset, and a returned classification
//! that is one of the recorded ones, with exactly the losses recorded for it.

use armada_core::{run_job, JobSpec, ParamValue, Registry};
use std::ops::ControlFlow;

#[test]
fn returned_classification_is_a_recorded_one_with_its_recorded_losses() {
    let registry = Registry::new(vec![Box::new(armada_lse::LseFamily)]);
    let names: Vec<&str> = armada_lse::LseMetrics::DEFS.iter().map(|m| m.name).collect();
    let col = |n: &str| names.iter().position(|&m| m == n).unwrap();
    for seed in 0..2 {
        let mut spec = JobSpec::new("lse", "sinusoidal", "rand-straddle-max");
        spec.algorithm_params.insert("mc_paths".into(), ParamValue::Int(100));
        spec.horizon = 25;
        spec.seed = seed;
        let job = registry.validate(&spec).unwrap();
        let mut rows = Vec::new();
        run_job(&registry, &job, &mut |r| {
            rows.push(r.values);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(rows.len(), 26);
        // beta_t = xi_t + 2 ln|X| >= 2 ln 2500 at every acquisition.
        for row in &rows[1..] {
            assert!(row[col("beta_sqrt")].powi(2) >= 2.0 * 2500f64.ln());
        }
        // Only the last step carries the returned classification.
        for row in &rows[..25] {
            assert!(row[col("returned_step")].is_nan() && row[col("returned_loss")].is_nan());
        }
        let last = &rows[25];
        let step = last[col("returned_step")];
        assert!(step.fract() == 0.0 && (0.0..25.0).contains(&step), "{step}");
        let chosen = &rows[step as usize];
        assert_eq!(last[col("returned_loss")], chosen[col("loss")]);
        assert_eq!(last[col("returned_max_loss")], chosen[col("max_loss")]);
    }
}
