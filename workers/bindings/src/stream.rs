//! One named random stream of a job, with the Rust families' samplers.

use armada_core::StreamRng;
use armada_math::dist::StandardNormal;
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rand::{Rng, RngCore};

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
