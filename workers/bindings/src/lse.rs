//! The finite LSE benchmarks and the GP model each fixes, for a method written in Python.

use crate::job::Job;
use crate::job_error;
use armada_lse::{CandidatePosterior, FiniteEnvironment};
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, ToPyArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::borrow::Cow;

/// The benchmark of an `lse` job (a finite one: 2-D grids, the carrier map, the 1-D toy):
/// its candidates, threshold and GP model, its observations (with the noise every algorithm
/// of the seed sees), and the family's metrics of a classification.
#[pyclass(module = "armada_bindings")]
pub struct LseEnvironment {
    env: FiniteEnvironment,
}

#[pymethods]
impl LseEnvironment {
    #[new]
    fn new(job: &Job) -> PyResult<Self> {
        let spec = &job.spec;
        if spec.family != "lse" {
            return Err(PyValueError::new_err(format!("family: `{}` is not lse", spec.family)));
        }
        if armada_lse::benchmarks::ContinuousProblem::by_name(&spec.benchmark).is_some() {
            return Err(PyValueError::new_err(format!(
                "benchmark: `{}` is a continuous benchmark; the bindings have the finite ones only",
                spec.benchmark
            )));
        }
        let env = FiniteEnvironment::for_benchmark(&spec.benchmark, job.streams()).map_err(job_error)?;
        Ok(LseEnvironment { env })
    }

    /// The candidates, one per row (a new array).
    #[getter]
    fn candidates<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.env.problem().candidates.to_pyarray(py)
    }

    #[getter]
    fn n_candidates(&self) -> usize {
        self.env.problem().f.len()
    }

    /// The threshold `theta`: the upper set is `{x : f(x) >= theta}`.
    #[getter]
    fn theta(&self) -> f64 {
        self.env.problem().theta
    }

    /// The GP model's noise variance (also the observations' when they are noisy).
    #[getter]
    fn noise_var(&self) -> f64 {
        self.env.problem().noise_var
    }

    /// Whether observations carry noise (else they are `f` exactly).
    #[getter]
    fn noisy_observations(&self) -> bool {
        self.env.problem().protocol.noisy_observations
    }

    /// Whether a candidate may be observed again.
    #[getter]
    fn allow_repeats(&self) -> bool {
        self.env.problem().protocol.allow_repeats
    }

    /// Which candidates have been observed (a new bool array).
    #[getter]
    fn observed<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        PyArray1::from_slice(py, self.env.observed())
    }

    /// Step 0's candidate: the benchmark's fixed one, or a uniform draw from its stream.
    fn initial_index(&mut self) -> PyResult<usize> {
        self.env.initial_index().map_err(job_error)
    }

    /// The observation of candidate `index`.
    fn observe(&mut self, index: usize) -> PyResult<f64> {
        self.env.observe(index).map_err(job_error)
    }

    /// The family's metrics `loss`, `fscore` and `max_loss` of the classification `upper`
    /// (a bool per candidate: estimated in the upper set).
    fn metrics<'py>(&self, py: Python<'py>, upper: PyReadonlyArray1<'py, bool>) -> PyResult<Bound<'py, PyDict>> {
        let upper: Cow<'_, [bool]> = match upper.as_slice() {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => Cow::Owned(upper.as_array().to_vec()),
        };
        let m = self.env.metrics(&upper).map_err(job_error)?;
        let d = PyDict::new(py);
        d.set_item("loss", m.loss)?;
        d.set_item("fscore", m.fscore)?;
        d.set_item("max_loss", m.max_loss)?;
        Ok(d)
    }

    /// The prior of the benchmark's GP model on its candidates, as the built-in methods
    /// keep it: mean and variance, or with `covariance` the full covariance too (MILE's).
    #[pyo3(signature = (covariance=false))]
    fn posterior(&self, covariance: bool) -> LsePosterior {
        LsePosterior { posterior: CandidatePosterior::of_model(self.env.problem(), covariance), jitter: 0.0 }
    }
}

/// The posterior of an LSE benchmark's GP model on its candidates, updated one
/// observation at a time (the built-in methods' own, so its numbers are theirs bit for bit).
#[pyclass(module = "armada_bindings")]
pub struct LsePosterior {
    posterior: CandidatePosterior,
    jitter: f64,
}

#[pymethods]
impl LsePosterior {
    /// Condition on `y` observed at candidate `index`; returns the diagonal jitter this
    /// update needed (0 unless a factorisation failed).
    fn observe(&mut self, index: usize, y: f64) -> PyResult<f64> {
        let n = self.posterior.mean().len();
        if index >= n {
            return Err(PyValueError::new_err(format!("index: candidate {index} out of range for {n} candidates")));
        }
        let report = self.posterior.observe_candidate(index, y).map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.jitter += report.jitter;
        Ok(report.jitter)
    }

    /// The posterior mean on the candidates (a new array).
    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.posterior.mean())
    }

    /// The posterior variance on the candidates (a new array).
    #[getter]
    fn var<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.posterior.var())
    }

    /// The jitter all updates so far needed (the family's `jitter` metric).
    #[getter]
    fn jitter(&self) -> f64 {
        self.jitter
    }
}
