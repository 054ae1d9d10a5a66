//! The `bandits` family's environments, for a bandit written in Python.

use crate::job::Job;
use crate::job_error;
use armada_bandits::env::Environment;
use armada_bandits::JobEnvironment;
use armada_core::StreamRng;
use numpy::{PyArray2, ToPyArray};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The environment of a `bandits` job, one round at a time: draw the round's contexts, pull
/// an arm, and get the family's metrics of the round (cumulative regret, the realised reward
/// and the sums of realised and expected rewards), exactly as the built-in loop counts them.
#[pyclass(module = "armada_bindings", unsendable)]
pub struct BanditsEnvironment {
    env: Box<dyn Environment + Send>,
    noise: StreamRng,
    /// Rounds whose arm was pulled.
    rounds: usize,
    /// Whether this round's contexts are drawn and wait for a pull.
    drawn: bool,
    regret: f64,
    reward_cum: f64,
    expected_cum: f64,
}

#[pymethods]
impl BanditsEnvironment {
    #[new]
    fn new(job: &Job) -> PyResult<Self> {
        let spec = job.spec_of("bandits")?;
        let JobEnvironment { env, noise } = JobEnvironment::of(spec, job.streams()).map_err(job_error)?;
        Ok(BanditsEnvironment { env, noise, rounds: 0, drawn: false, regret: 0.0, reward_cum: 0.0, expected_cum: 0.0 })
    }

    /// The feature dimension d.
    #[getter]
    fn dim(&self) -> usize {
        self.env.dim()
    }

    /// The rounds of the run, T (the job's horizon).
    #[getter]
    fn horizon(&self) -> usize {
        self.env.horizon()
    }

    /// Rounds played so far.
    #[getter]
    fn rounds(&self) -> usize {
        self.rounds
    }

    /// The next round's contexts, `K x d`, one arm per row (a new array).
    fn next_round<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if self.drawn {
            return Err(PyRuntimeError::new_err("this round's contexts are drawn already: pull an arm first"));
        }
        if self.rounds == self.env.horizon() {
            return Err(PyRuntimeError::new_err(format!("the run is over: all {} rounds are played", self.rounds)));
        }
        self.drawn = true;
        Ok(self.env.next_round().to_pyarray(py))
    }

    /// Pull `arm` this round: its reward, with noise from the algorithm's `noise` stream,
    /// and the family's metrics after the round.
    fn pull<'py>(&mut self, py: Python<'py>, arm: usize) -> PyResult<Bound<'py, PyDict>> {
        if !self.drawn {
            return Err(PyRuntimeError::new_err("no round is drawn: call next_round first"));
        }
        let n_arms = self.env.contexts().nrows();
        if arm >= n_arms {
            return Err(PyValueError::new_err(format!("arm: {arm} is out of range for {n_arms} arms")));
        }
        // The built-in loop's order: the reward, the arm's expected reward, its regret.
        let reward = self.env.sample_reward(arm, &mut self.noise);
        let expected = self.env.expected_reward(arm);
        self.regret += self.env.regret(arm);
        self.reward_cum += reward;
        self.expected_cum += expected;
        self.rounds += 1;
        self.drawn = false;
        let d = PyDict::new(py);
        d.set_item("regret", self.regret)?;
        d.set_item("reward", reward)?;
        d.set_item("reward_cum", self.reward_cum)?;
        d.set_item("expected_cum", self.expected_cum)?;
        d.set_item("arm", arm)?;
        Ok(d)
    }
}
