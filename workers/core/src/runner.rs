//! The job runner: drives an [`Episode`] from step 0 to its horizon.
//!
//! It knows nothing of who consumes the records (a thread pool writing Parquet, a
//! worker streaming them to a coordinator): records go to a sink that may ask to stop.

use crate::{JobError, JobStreams, Registry, StepRecord, ValidJob};
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// What a completed run reports besides its records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunOutcome {
    pub n_records: u32,
    pub total_ms: f64,
}

/// Run `job` to its horizon, handing each record to `sink` as soon as it exists.
///
/// A panic inside the family's code is caught and returned as [`JobError::Panicked`],
/// so a bad job never takes its runner down. A sink that returns `Break` cancels the job.
pub fn run_job(
    registry: &Registry,
    job: &ValidJob,
    sink: &mut dyn FnMut(StepRecord) -> ControlFlow<()>,
) -> Result<RunOutcome, JobError> {
    let result = catch_unwind(AssertUnwindSafe(|| run_inner(registry, job, sink)));
    match result {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            Err(JobError::Panicked(msg))
        }
    }
}

fn run_inner(
    registry: &Registry,
    job: &ValidJob,
    sink: &mut dyn FnMut(StepRecord) -> ControlFlow<()>,
) -> Result<RunOutcome, JobError> {
    let family = registry.family(&job.spec.family).map_err(|e| JobError::Invalid(e.to_string()))?;
    let n_metrics = family.metrics().len();
    let started = Instant::now();
    let streams = JobStreams::new(&job.spec);
    let mut episode = family.start(job, &streams)?;
    let mut n_records = 0;
    for step in 0..=job.spec.horizon {
        let t0 = Instant::now();
        let values = if step == 0 { episode.initial()? } else { episode.step(step)? };
        if values.len() != n_metrics {
            return Err(JobError::Invalid(format!(
                "family `{}` returned {} metrics, its schema has {n_metrics}",
                family.name(),
                values.len()
            )));
        }
        let record = StepRecord { step, elapsed_ms: t0.elapsed().as_secs_f64() * 1e3, values };
        n_records += 1;
        if sink(record).is_break() {
            return Err(JobError::Cancelled);
        }
    }
    Ok(RunOutcome { n_records, total_ms: started.elapsed().as_secs_f64() * 1e3 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ComponentDef, Declaration, Episode, Family, JobSpec, MetricDef, MetricKind};
    use rand::Rng;

    /// A family whose single metric is a draw from an environment stream plus the step,
    /// and whose `explode` algorithm panics at step 2.
    struct Toy;
    struct ToyEpisode {
        rng: crate::StreamRng,
        explode: bool,
    }
    impl Episode for ToyEpisode {
        fn initial(&mut self) -> Result<Vec<f64>, JobError> {
            Ok(vec![self.rng.random::<f64>()])
        }
        fn step(&mut self, step: u32) -> Result<Vec<f64>, JobError> {
            assert!(!(self.explode && step == 2), "boom at step 2");
            Ok(vec![self.rng.random::<f64>() + step as f64])
        }
    }
    const TOY: Declaration = Declaration {
        name: "toy",
        version: 1,
        doc: "test family",
        benchmarks: &[ComponentDef { name: "b", doc: "", params: &[] }],
        algorithms: &[
            ComponentDef { name: "calm", doc: "", params: &[] },
            ComponentDef { name: "explode", doc: "", params: &[] },
        ],
        metrics: &[MetricDef { name: "x", kind: MetricKind::Float, doc: "" }],
        headline_metrics: &[],
        summary_axes: &[],
    };
    impl Family for Toy {
        fn declaration(&self) -> &'static Declaration {
            &TOY
        }
        fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn Episode>, JobError> {
            Ok(Box::new(ToyEpisode { rng: streams.env("x"), explode: job.spec.algorithm == "explode" }))
        }
    }

    fn job(algo: &str) -> ValidJob {
        let registry = Registry::new(vec![Box::new(Toy)]);
        let mut spec = JobSpec::new("toy", "b", algo);
        spec.horizon = 3;
        registry.validate(&spec).unwrap()
    }

    #[test]
    fn runs_to_horizon_with_one_record_per_step() {
        let registry = Registry::new(vec![Box::new(Toy)]);
        let mut records = Vec::new();
        let out = run_job(&registry, &job("calm"), &mut |r| {
            records.push(r);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(out.n_records, 4);
        assert_eq!(records.iter().map(|r| r.step).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        // Step 3's value is a uniform draw plus 3.
        assert!((3.0..4.0).contains(&records[3].values[0]));
        let mut again = Vec::new();
        run_job(&registry, &job("calm"), &mut |r| {
            again.push(r.values);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(again, records.into_iter().map(|r| r.values).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_becomes_an_error_and_a_break_cancels() {
        let registry = Registry::new(vec![Box::new(Toy)]);
        let err = run_job(&registry, &job("explode"), &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert_eq!(err, JobError::Panicked("boom at step 2".into()));
        let mut n = 0;
        let err = run_job(&registry, &job("calm"), &mut |_| {
            n += 1;
            if n == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap_err();
        assert_eq!(err, JobError::Cancelled);
        assert_eq!(n, 2);
    }
}
