//! The `safe` family's benchmarks, for a safe-optimisation rule written in Python.

use crate::job::Job;
use crate::job_error;
use armada_safe::benchmarks::Benchmark;
use armada_safe::SafeEnvironment as Environment;
use numpy::{PyArray1, PyArray2, ToPyArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The benchmark of a `safe` job: actions `(s, x)` on a grid (flat index x-major, s-minor),
/// the two seed points and the observation noise every rule of the seed sees, and the
/// family's regrets and violations of the actions and estimates a rule reports.
#[pyclass(module = "armada_bindings", unsendable)]
pub struct SafeEnvironment {
    env: Environment,
}

#[pymethods]
impl SafeEnvironment {
    #[new]
    fn new(job: &Job) -> PyResult<Self> {
        let spec = job.spec_of("safe")?;
        let bench = Benchmark::from_params(&spec.benchmark, &spec.benchmark_params).map_err(job_error)?;
        Ok(SafeEnvironment { env: Environment::new(bench, job.streams()) })
    }

    /// The grid's actions, one `(s, x...)` per row in flat order (a new array).
    #[getter]
    fn points<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.env.benchmark().grid.points.to_pyarray(py)
    }

    /// The values of s, increasing (the grid's rows of one x).
    #[getter]
    fn s<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.env.benchmark().grid.s)
    }

    /// The safety threshold h: `(s, x)` is safe when `g(s, x) <= h`.
    #[getter]
    fn h(&self) -> f64 {
        self.env.benchmark().h
    }

    /// The growth constants `(L_f, L'_g)` the benchmark states (paper Eqs. (4), (5)).
    #[getter]
    fn growth_constants(&self) -> (f64, f64) {
        let b = self.env.benchmark();
        (b.l_f, b.l_g)
    }

    /// The observation noise variance (0: exact observations).
    #[getter]
    fn noise_var(&self) -> f64 {
        self.env.benchmark().noise_var
    }

    /// The next seed point `(0, x)`, `x` uniform in the benchmark's box.
    fn seed_point<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.env.seed_point())
    }

    /// The noisy `(f, g)` at any point `(s, x...)` (a seed point, say).
    fn observe_point(&mut self, z: Vec<f64>) -> PyResult<(f64, f64)> {
        self.env.observe_point(&z).map_err(job_error)
    }

    /// The noisy `(f, g)` of grid action `k`.
    fn observe(&mut self, k: usize) -> PyResult<(f64, f64)> {
        self.env.observe(k).map_err(job_error)
    }

    /// The round's regrets of action `k` and of the estimates `s_hat` (one s-index per
    /// x-row: the rule's recommended safe s of each x), with their running sums and the
    /// violations so far. Call it once per round, before observing `k`.
    fn score<'py>(&mut self, py: Python<'py>, k: usize, s_hat: Vec<usize>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.env.score(k, &s_hat).map_err(job_error)?;
        let d = PyDict::new(py);
        d.set_item("regret_inst", s.regret_inst)?;
        d.set_item("regret_cum", s.regret_cum)?;
        d.set_item("regret2_inst", s.regret2_inst)?;
        d.set_item("regret2_cum", s.regret2_cum)?;
        d.set_item("regretx_inst", s.regretx_inst)?;
        d.set_item("regretx_cum", s.regretx_cum)?;
        d.set_item("violations_cum", s.violations_cum)?;
        Ok(d)
    }

    /// `r^X` of the estimates after the round's observation, and its running sum.
    fn score_after(&mut self, s_hat: Vec<usize>) -> PyResult<(f64, f64)> {
        self.env.score_after(&s_hat).map_err(job_error)
    }
}
