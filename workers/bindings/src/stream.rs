//! One named random stream of a job, with the Rust families' samplers.

use armada_core::StreamRng;
use armada_math::dist::{Beta, ChiSquared, Gamma, Normal, StandardNormal};
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rand::distr::Distribution;
use rand::{Rng, RngCore};

/// A distribution's parameters refused (`what` names them), as Python's `ValueError`.
fn refused(what: &str) -> impl FnOnce(String) -> PyErr + '_ {
    move |e| PyValueError::new_err(format!("{what}: {e}"))
}

/// A job's random stream: ChaCha8 seeded as the Rust families seed it, drawn with their
/// samplers, so a Python method and a Rust one draw the same numbers from the same stream.
#[pyclass(module = "armada_bindings")]
pub struct Stream {
    pub(crate) rng: StreamRng,
}

#[pymethods]
impl Stream {
    /// A uniform float in [0, 1) (rand's `random::<f64>()`: 53 random bits).
    fn random(&mut self) -> f64 {
        self.rng.random()
    }

    /// A uniform integer in [0, n) (rand's `random_range(0..n)`, as the families draw an index).
    fn randrange(&mut self, n: usize) -> PyResult<usize> {
        if n == 0 {
            return Err(PyValueError::new_err("randrange(0): the range is empty"));
        }
        Ok(self.rng.random_range(0..n))
    }

    /// A standard normal (armada-math's ziggurat, the families' `StandardNormal`).
    fn standard_normal(&mut self) -> f64 {
        self.rng.sample(StandardNormal)
    }

    /// A uniform float in [lo, hi) as the families draw one (rand's `random_range(lo..hi)`,
    /// which is not `lo + (hi - lo) * random()` bit for bit).
    fn uniform(&mut self, lo: f64, hi: f64) -> PyResult<f64> {
        if !(lo < hi && (hi - lo).is_finite()) {
            return Err(PyValueError::new_err(format!("uniform({lo}, {hi}): expected finite lo < hi")));
        }
        Ok(self.rng.random_range(lo..hi))
    }

    /// A normal with mean `mean` and standard deviation `sd` (armada-math's).
    fn normal(&mut self, mean: f64, sd: f64) -> PyResult<f64> {
        Ok(Normal::new(mean, sd).map_err(refused("normal(mean, sd)"))?.sample(&mut self.rng))
    }

    /// A gamma variate of shape `shape` and scale `scale` (Marsaglia-Tsang, armada-math's).
    fn gamma(&mut self, shape: f64, scale: f64) -> PyResult<f64> {
        Ok(Gamma::new(shape, scale).map_err(refused("gamma(shape, scale)"))?.sample(&mut self.rng))
    }

    /// A chi-squared variate of `k` degrees of freedom (armada-math's).
    fn chi_squared(&mut self, k: f64) -> PyResult<f64> {
        Ok(ChiSquared::new(k).map_err(refused("chi_squared(k)"))?.sample(&mut self.rng))
    }

    /// A beta variate of parameters `a` and `b` (armada-math's).
    fn beta(&mut self, a: f64, b: f64) -> PyResult<f64> {
        Ok(Beta::new(a, b).map_err(refused("beta(a, b)"))?.sample(&mut self.rng))
    }

    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// `size` uniform floats in [0, 1), the same as `size` calls of `random`.
    fn random_array<'py>(&mut self, py: Python<'py>, size: usize) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, (0..size).map(|_| self.rng.random()).collect())
    }

    /// `size` standard normals, the same as `size` calls of `standard_normal`.
    fn standard_normal_array<'py>(&mut self, py: Python<'py>, size: usize) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, (0..size).map(|_| self.rng.sample(StandardNormal)).collect())
    }
}
