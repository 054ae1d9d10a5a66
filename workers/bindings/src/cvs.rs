//! The `cvs` family's problems, for a cost-aware method written in Python.

use crate::job::Job;
use crate::job_error;
use armada_cvs::environment::CvsEnvironment as Environment;
use numpy::{PyArray1, PyArray2, ToPyArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The problem of a `cvs` job: control sets with unknown noisy costs, the random inputs of
/// the other variables, a budget; plays with the draws every algorithm of the seed sees, and
/// the family's metrics of the plays (best value, simple, quality and cost regrets).
#[pyclass(module = "armada_bindings", unsendable)]
pub struct CvsEnvironment {
    env: Environment,
}

#[pymethods]
impl CvsEnvironment {
    #[new]
    fn new(job: &Job) -> PyResult<Self> {
        let spec = job.spec_of("cvs")?;
        let (problem, rule) = armada_cvs::family::problem(spec).map_err(job_error)?;
        Ok(CvsEnvironment { env: Environment::new(problem, rule, job.streams()) })
    }

    /// The dimension d of the domain `[0,1]^d`.
    #[getter]
    fn dim(&self) -> usize {
        self.env.problem().dim
    }

    /// The control sets: each the indices of the variables it sets, in order.
    #[getter]
    fn control_sets(&self) -> Vec<Vec<usize>> {
        self.env.problem().sets.clone()
    }

    /// The budget C: a run plays until its realised costs reach it.
    #[getter]
    fn budget(&self) -> f64 {
        self.env.problem().budget
    }

    /// Plays so far.
    #[getter]
    fn plays(&self) -> usize {
        self.env.stats().t
    }

    /// The cost spent so far.
    #[getter]
    fn spent(&self) -> f64 {
        self.env.stats().spent
    }

    /// Whether the run is over (the budget is spent).
    #[getter]
    fn done(&self) -> bool {
        self.env.is_done()
    }

    /// The Monte Carlo set the built-in methods share: `n` draws of every variable from its
    /// input distribution (`n x d`). Ask once per run.
    fn mc_samples<'py>(&mut self, py: Python<'py>, n: usize) -> Bound<'py, PyArray2<f64>> {
        self.env.mc_samples(n).to_pyarray(py)
    }

    /// The initial design: `(X, y)`, uniform points of `[0,1]^d` observed with noise (no
    /// cost). Ask once, first.
    fn initial_design<'py>(&mut self, py: Python<'py>) -> (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<f64>>) {
        let design = self.env.initial_design();
        let x: Vec<Vec<f64>> = design.iter().map(|(x, _)| x.clone()).collect();
        let y: Vec<f64> = design.iter().map(|(_, y)| *y).collect();
        (PyArray2::from_vec2(py, &x).expect("rows of d coordinates"), PyArray1::from_vec(py, y))
    }

    /// Play control set `set` at `x_ctrl` (its variables' values in `[0, 1]`, in the set's
    /// order): the full query `x` (the other variables drawn), its noisy observation `y`,
    /// the realised `cost`, its `value` and the family's metrics after it; None when the
    /// strict budget rule refused the play (the run is then over).
    fn play<'py>(&mut self, py: Python<'py>, set: usize, x_ctrl: Vec<f64>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(play) = self.env.play(set, &x_ctrl).map_err(job_error)? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("x", PyArray1::from_vec(py, play.x))?;
        d.set_item("y", play.y)?;
        d.set_item("cost", play.cost)?;
        d.set_item("value", play.value)?;
        d.set_item("n_evals", self.env.stats().t)?;
        d.set_item("cum_cost", self.env.stats().spent)?;
        d.set_item("best_value", self.env.best_value())?;
        d.set_item("simple_regret", self.env.simple_regret())?;
        d.set_item("quality_regret", self.env.quality_regret())?;
        d.set_item("cost_regret", self.env.cost_regret())?;
        Ok(Some(d))
    }
}
