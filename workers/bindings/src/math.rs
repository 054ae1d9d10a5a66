//! armada-math's functions for Python: the bits the Rust families compute, on any processor
//! (numpy's `exp` or `log` may round otherwise, and differently from one processor to the
//! next), so a numpy method can reproduce a family's arithmetic exactly where it must.

use numpy::{PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// `f` applied to a float (a float back) or to an array of floats (a new array).
fn apply<'py>(x: &Bound<'py, PyAny>, f: fn(f64) -> f64) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(v) = x.extract::<f64>() {
        return Ok(f(v).into_pyobject(x.py())?.into_any());
    }
    let a: PyReadonlyArrayDyn<'py, f64> = x.extract()?;
    let out = PyArrayDyn::<f64>::zeros(x.py(), a.shape(), false);
    {
        let mut out = out.readwrite();
        out.as_array_mut().zip_mut_with(&a.as_array(), |o, &v| *o = f(v));
    }
    Ok(out.into_any())
}

macro_rules! functions {
    ($($name:ident: $doc:literal),* $(,)?) => {
        $(
            #[doc = $doc]
            #[pyfunction]
            pub fn $name<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                apply(x, armada_math::$name)
            }
        )*

        /// Add every function to the module.
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

functions! {
    exp: "e^x, as armada's families compute it (a float, or each float of an array).",
    ln: "The natural logarithm, as armada's families compute it.",
    log1p: "ln(1 + x), as armada's families compute it.",
    expm1: "e^x - 1, as armada's families compute it.",
    sin: "The sine, as armada's families compute it.",
    cos: "The cosine, as armada's families compute it.",
    erf: "The error function, as armada's families compute it.",
    erfc: "The complementary error function, as armada's families compute it.",
    std_normal_cdf: "The standard normal CDF, as armada's families compute it.",
}
