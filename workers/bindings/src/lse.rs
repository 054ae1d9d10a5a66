//! The finite LSE benchmarks and the GP model each fixes, for a method written in Python.

use crate::job::Job;
use crate::job_error;
use armada_lse::benchmarks::{ContinuousConfig, ContinuousProblem};
use armada_lse::{CandidatePosterior, ContinuousEnvironment, FiniteEnvironment};
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
        let spec = job.spec_of("lse")?;
        if ContinuousProblem::by_name(&spec.benchmark).is_some() {
            return Err(PyValueError::new_err(format!(
                "benchmark: `{}` is a continuous benchmark: use LseBoxEnvironment",
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
        metrics_dict(py, self.env.metrics(&in_place(&upper)).map_err(job_error)?)
    }

    /// The prior of the benchmark's GP model on its candidates, as the built-in methods
    /// keep it: mean and variance, or with `covariance` the full covariance too (MILE's).
    #[pyo3(signature = (covariance=false))]
    fn posterior(&self, covariance: bool) -> LsePosterior {
        LsePosterior { posterior: CandidatePosterior::of_model(self.env.problem(), covariance), jitter: 0.0 }
    }
}

/// A bool array read in place when it is contiguous, else copied once.
fn in_place<'a>(upper: &'a PyReadonlyArray1<'_, bool>) -> Cow<'a, [bool]> {
    match upper.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(upper.as_array().to_vec()),
    }
}

fn metrics_dict(py: Python<'_>, m: armada_lse::metrics::ClassificationMetrics) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("loss", m.loss)?;
    d.set_item("fscore", m.fscore)?;
    d.set_item("max_loss", m.max_loss)?;
    Ok(d)
}

/// The benchmark of an `lse` job of the continuous block (`sphere-5d`, `rosenbrock-5d`,
/// `styblinski-tang-5d`): the box, the candidate pool every algorithm of the seed is
/// offered, the evaluation set the metrics are measured on, the initial point and the noise.
#[pyclass(module = "armada_bindings", unsendable)]
pub struct LseBoxEnvironment {
    env: ContinuousEnvironment,
    horizon: u32,
}

#[pymethods]
impl LseBoxEnvironment {
    #[new]
    fn new(job: &Job) -> PyResult<Self> {
        let spec = job.spec_of("lse")?;
        let Some(problem) = ContinuousProblem::by_name(&spec.benchmark) else {
            return Err(PyValueError::new_err(format!(
                "benchmark: `{}` is not a continuous benchmark: use LseEnvironment",
                spec.benchmark
            )));
        };
        let config: ContinuousConfig = spec.benchmark_params.parse().map_err(job_error)?;
        config.check().map_err(job_error)?;
        Ok(LseBoxEnvironment { env: ContinuousEnvironment::new(problem, config, job.streams()), horizon: spec.horizon })
    }

    /// The box `[lo, hi]^dim`: `(lo, hi, dim)`.
    #[getter]
    fn bounds(&self) -> (f64, f64, usize) {
        let p = self.env.problem();
        (p.lo, p.hi, p.dim)
    }

    /// The threshold `theta`.
    #[getter]
    fn theta(&self) -> f64 {
        self.env.problem().theta
    }

    /// The noise variance of the observations (also the GP model's).
    #[getter]
    fn noise_var(&self) -> f64 {
        self.env.problem().noise_var
    }

    /// The candidate pool, one point per row (a new array).
    #[getter]
    fn pool<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.env.pool_points().to_pyarray(py)
    }

    /// The evaluation set, one point per row (a new array): classify these for `metrics`.
    #[getter]
    fn eval_points<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.env.eval_points().to_pyarray(py)
    }

    /// Step 0's point, uniform in the box.
    fn initial_point<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.env.initial_point())
    }

    /// The noisy observation of a point of the box.
    fn observe(&mut self, x: Vec<f64>) -> PyResult<f64> {
        self.env.observe(&x).map_err(job_error)
    }

    /// Whether the family reports the metrics at `step` (else they are NaN).
    fn metrics_due(&self, step: u32) -> bool {
        self.env.metrics_due(step, self.horizon)
    }

    /// The family's metrics of the classification `upper` of the evaluation set.
    fn metrics<'py>(&self, py: Python<'py>, upper: PyReadonlyArray1<'py, bool>) -> PyResult<Bound<'py, PyDict>> {
        metrics_dict(py, self.env.metrics(&in_place(&upper)).map_err(job_error)?)
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
