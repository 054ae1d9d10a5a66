//! armada-bindings: armada's built-in benchmarks, their random streams and their metrics as
//! a Python extension module (`armada_bindings`), so that a method written in Python runs on
//! the very instances, noise and metrics of the papers' methods (common random numbers).
//!
//! - [`job::Job`]: a job of a built-in family, its parameters completed as a Rust worker's
//!   lease carries them, its key, and its named random streams.
//! - [`stream::Stream`]: one stream, the generator (ChaCha8) and the samplers (armada-math's)
//!   of the Rust families, so a Python method can draw what a Rust one draws.
//! - [`lse`]: the finite LSE benchmarks ([`armada_lse::FiniteEnvironment`]) and the GP
//!   model they fix ([`armada_lse::CandidatePosterior`]).
//! - [`bandits`]: the `bandits` family's environments (contexts, rewards, regret).
//! - [`safe`]: the `safe` family's benchmarks (seeds, noisy observations, regrets).
//! - [`cvs`]: the `cvs` family's problems (plays of control sets, costs, regrets).
//! - [`math`]: armada-math's `exp`, `ln`, `erfc`, ... on floats and arrays, the families' bits.
//! - `run_builtin(job)`: a built-in algorithm's trajectory, computed as a worker computes it.
//!
//! Arrays: inputs are read in place when they are contiguous (a classification, say);
//! outputs are new numpy arrays (a posterior's mean: one copy of `N` floats per call).

mod bandits;
mod cvs;
mod job;
mod lse;
mod math;
mod safe;
mod stream;

use armada_core::{run_job, JobError, Registry};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ops::ControlFlow;

/// The built-in families the bindings know: the papers'.
pub(crate) fn registry() -> Registry {
    armada_families::paper_families()
}

/// A job's error as Python's: what the caller asked wrongly is a `ValueError`, a numerical
/// failure a `RuntimeError`.
pub(crate) fn job_error(e: JobError) -> PyErr {
    match e {
        JobError::Invalid(m) => PyValueError::new_err(m),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// The trajectory of a job of a built-in algorithm, as a worker computes it: one dict per
/// step, `step` and each of the family's metrics (an absent value is NaN), without
/// `elapsed_ms`.
#[pyfunction]
fn run_builtin<'py>(py: Python<'py>, job: &job::Job) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let registry = registry();
    let valid = job.builtin_job()?;
    let family = registry.family(&valid.spec.family).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let names: Vec<&str> = family.metrics().iter().map(|m| m.name).collect();
    let mut records = Vec::new();
    run_job(&registry, &valid, &mut |r| {
        records.push(r);
        ControlFlow::Continue(())
    })
    .map_err(job_error)?;
    records
        .into_iter()
        .map(|r| {
            let d = PyDict::new(py);
            d.set_item("step", r.step)?;
            for (name, v) in names.iter().zip(r.values) {
                d.set_item(name, v)?;
            }
            Ok(d)
        })
        .collect()
}

#[pymodule]
fn armada_bindings(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<job::Job>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<lse::LseEnvironment>()?;
    m.add_class::<lse::LsePosterior>()?;
    m.add_class::<lse::LseBoxEnvironment>()?;
    m.add_class::<bandits::BanditsEnvironment>()?;
    m.add_class::<safe::SafeEnvironment>()?;
    m.add_class::<cvs::CvsEnvironment>()?;
    m.add_function(wrap_pyfunction!(run_builtin, m)?)?;
    math::register(m)?;
    Ok(())
}
