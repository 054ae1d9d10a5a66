//! The job runner: drives an [`Episode`] from step 0 to its horizon, or to its early end.
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

/// Run `job` to its horizon (or to the step before its episode ends, for a family that
/// declares `ends_early`), handing each record to `sink` as soon as it exists.
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
    let started = Instant::now();
    let streams = JobStreams::new(&job.spec);
    let mut episode = family.start(job, &streams)?;
    // The records must be what the family declares: its consumers read them by position.
    if episode.metrics() != family.metrics() {
        return Err(JobError::Invalid(format!(
            "family `{}` started an episode whose metrics are not its declaration's",
            family.name()
        )));
    }
    let mut n_records = 0;
    for step in 0..=job.spec.horizon {
        let t0 = Instant::now();
        let values = if step == 0 { Some(episode.initial_values()?) } else { episode.step_values(step)? };
        let Some(values) = values else {
            if !family.ends_early() {
                return Err(JobError::Invalid(format!(
                    "family `{}` ended its episode before step {step}, but its declaration does not say `ends_early`",
                    family.name()
                )));
            }
            break;
        };
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
    use crate::{AnyEpisode, ComponentDef, Declaration, Episode, Family, JobSpec};
    use rand::Rng;

    crate::metrics! {
        struct ToyMetrics {
            x: f64 = "a draw from an environment stream plus the step",
        }
    }

    /// A family whose single metric is a draw from an environment stream plus the step;
    /// `explode` panics at step 2, and `short` ends after step 2 (the family declares an
    /// early end when `ends_early` is set).
    struct Toy {
        ends_early: bool,
    }
    struct ToyEpisode {
        rng: crate::StreamRng,
        algorithm: String,
    }
    impl Episode for ToyEpisode {
        type Metrics = ToyMetrics;
        fn initial(&mut self) -> Result<ToyMetrics, JobError> {
            Ok(ToyMetrics { x: self.rng.random::<f64>() })
        }
        fn step(&mut self, step: u32) -> Result<Option<ToyMetrics>, JobError> {
            assert!(!(self.algorithm == "explode" && step == 2), "boom at step 2");
            if self.algorithm == "short" && step > 2 {
                return Ok(None);
            }
            Ok(Some(ToyMetrics { x: self.rng.random::<f64>() + step as f64 }))
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
            ComponentDef { name: "short", doc: "", params: &[] },
            ComponentDef { name: "mislabelled", doc: "", params: &[] },
        ],
        metrics: ToyMetrics::DEFS,
        ends_early: false,
        headline_metrics: &[],
        summary_axes: &[],
    };
    const TOY_ENDS_EARLY: Declaration = Declaration { ends_early: true, ..TOY };

    crate::metrics! {
        struct OtherMetrics {
            y: f64 = "not the toy's metric",
        }
    }
    struct Other;
    impl Episode for Other {
        type Metrics = OtherMetrics;
        fn initial(&mut self) -> Result<OtherMetrics, JobError> {
            Ok(OtherMetrics { y: 0.0 })
        }
        fn step(&mut self, _step: u32) -> Result<Option<OtherMetrics>, JobError> {
            Ok(Some(OtherMetrics { y: 0.0 }))
        }
    }

    impl Family for Toy {
        fn declaration(&self) -> &'static Declaration {
            if self.ends_early {
                &TOY_ENDS_EARLY
            } else {
                &TOY
            }
        }
        fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
            if job.spec.algorithm == "mislabelled" {
                return Ok(Box::new(Other));
            }
            Ok(Box::new(ToyEpisode { rng: streams.env("x"), algorithm: job.spec.algorithm.clone() }))
        }
    }

    fn toy() -> Registry {
        Registry::new(vec![Box::new(Toy { ends_early: false })])
    }

    fn run(registry: &Registry, algo: &str) -> Result<Vec<StepRecord>, JobError> {
        let mut records = Vec::new();
        let out = run_job(registry, &job(algo), &mut |r| {
            records.push(r);
            ControlFlow::Continue(())
        })?;
        assert_eq!(out.n_records as usize, records.len());
        Ok(records)
    }

    fn job(algo: &str) -> ValidJob {
        let registry = toy();
        let mut spec = JobSpec::new("toy", "b", algo);
        spec.horizon = 3;
        registry.validate(&spec).unwrap()
    }

    #[test]
    fn runs_to_horizon_with_one_record_per_step() {
        let registry = toy();
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
        let registry = toy();
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

    #[test]
    fn an_episode_ends_early_only_when_its_family_declares_it() {
        let early = Registry::new(vec![Box::new(Toy { ends_early: true })]);
        let records = run(&early, "short").unwrap();
        assert_eq!(records.iter().map(|r| r.step).collect::<Vec<_>>(), vec![0, 1, 2]);
        // The same draws as a full run, cut after step 2.
        let full = run(&early, "calm").unwrap();
        assert_eq!(full.len(), 4);
        assert_eq!(
            records.iter().map(|r| &r.values).collect::<Vec<_>>(),
            full[..3].iter().map(|r| &r.values).collect::<Vec<_>>()
        );
        let err = run(&toy(), "short").unwrap_err();
        assert_eq!(
            err,
            JobError::Invalid(
                "family `toy` ended its episode before step 3, but its declaration does not say `ends_early`".into()
            )
        );
    }

    #[test]
    fn an_episode_whose_metrics_are_not_the_declarations_is_refused() {
        let err = run(&toy(), "mislabelled").unwrap_err();
        assert_eq!(
            err,
            JobError::Invalid("family `toy` started an episode whose metrics are not its declaration's".into())
        );
    }
}
