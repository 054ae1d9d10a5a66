//! A job of a built-in family as Python sees it: its spec completed as a lease carries it,
//! and its named random streams.

use crate::stream::Stream;
use armada_core::{
    check_params, find_component, validate_as, JobSpec, JobStreams, ParamValue, Params, SpecError, ValidJob,
    MAX_HORIZON, MAX_SEED,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

/// One job: family, benchmark and algorithm with their parameters, seed, horizon and sweep
/// seed. The benchmark's parameters are completed with their defaults (its random streams
/// depend on them); so are a built-in algorithm's, and its key is the one a coordinator
/// gives it. Another algorithm's parameters are kept as given.
#[pyclass(module = "armada_bindings", frozen)]
pub struct Job {
    pub(crate) spec: JobSpec,
    streams: JobStreams,
    builtin: Option<ValidJob>,
}

fn spec_error(e: SpecError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// `params` (a dict of bools, ints, floats and strings) as armada's parameters; `field`
/// names it in errors.
fn params_of(field: &str, params: Option<&Bound<'_, PyDict>>) -> PyResult<Params> {
    let mut out = Params::new();
    for (name, value) in params.into_iter().flat_map(|d| d.iter()) {
        let name: String = name.extract().map_err(|_| PyTypeError::new_err(format!("{field}: names are strings")))?;
        let value = if value.is_instance_of::<PyBool>() {
            ParamValue::Bool(value.extract()?)
        } else if value.is_instance_of::<PyInt>() {
            ParamValue::Int(
                value.extract().map_err(|_| PyValueError::new_err(format!("{field}.{name}: out of range")))?,
            )
        } else if value.is_instance_of::<PyFloat>() {
            ParamValue::Float(value.extract()?)
        } else if value.is_instance_of::<PyString>() {
            ParamValue::Str(value.extract()?)
        } else {
            return Err(PyTypeError::new_err(format!(
                "{field}.{name}: a parameter is a bool, an int, a float or a str, not {}",
                value.get_type().name()?
            )));
        };
        out.insert(name, value);
    }
    Ok(out)
}

fn params_dict<'py>(py: Python<'py>, params: &Params) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in params.iter() {
        match value {
            ParamValue::Bool(b) => d.set_item(name, b)?,
            ParamValue::Int(i) => d.set_item(name, i)?,
            ParamValue::Float(x) => d.set_item(name, x)?,
            ParamValue::Str(s) => d.set_item(name, s)?,
        }
    }
    Ok(d)
}

impl Job {
    /// The validated job of a built-in algorithm, or an error saying it is not one.
    pub(crate) fn builtin_job(&self) -> PyResult<ValidJob> {
        self.builtin.clone().ok_or_else(|| {
            PyValueError::new_err(format!(
                "algorithm `{}` is not one of family `{}`'s built-in algorithms",
                self.spec.algorithm, self.spec.family
            ))
        })
    }

    pub(crate) fn streams(&self) -> &JobStreams {
        &self.streams
    }

    /// The job of a spec: a built-in algorithm's validated and keyed as a coordinator does;
    /// another algorithm's (an extension's) with its benchmark completed and checked as the
    /// family checks it, its own parameters kept as given.
    fn of_spec(mut spec: JobSpec) -> PyResult<Job> {
        let registry = crate::registry();
        let fam = registry.family(&spec.family).map_err(spec_error)?;
        let builtin = if fam.algorithms().iter().any(|a| a.name == spec.algorithm) {
            let valid = validate_as(fam, &spec).map_err(spec_error)?;
            spec = valid.spec.clone();
            Some(valid)
        } else {
            let def =
                find_component(fam.benchmarks(), &spec.benchmark, "benchmark", &spec.family).map_err(spec_error)?;
            spec.benchmark_params =
                check_params(def, &spec.benchmark_params).map_err(|e| spec_error(e.within("benchmark_params")))?;
            let (horizon, seed) = (spec.horizon, spec.seed);
            if !(1..=MAX_HORIZON).contains(&horizon) {
                return Err(PyValueError::new_err(format!("horizon: {horizon} is out of range [1, {MAX_HORIZON}]")));
            }
            if seed > MAX_SEED {
                return Err(PyValueError::new_err(format!("seed: {seed} is out of range [0, {MAX_SEED}]")));
            }
            fam.check_benchmark(&spec).map_err(spec_error)?;
            None
        };
        Ok(Job { streams: JobStreams::new(&spec), spec, builtin })
    }

    /// The spec, when the job is of `family` (an environment of that family is asked for).
    pub(crate) fn spec_of(&self, family: &str) -> PyResult<&JobSpec> {
        if self.spec.family != family {
            return Err(PyValueError::new_err(format!("family: `{}` is not {family}", self.spec.family)));
        }
        Ok(&self.spec)
    }
}

#[pymethods]
impl Job {
    #[new]
    #[pyo3(signature = (family, benchmark, algorithm, *, seed=0, horizon=1, sweep_seed=0, benchmark_params=None, algorithm_params=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        family: &str,
        benchmark: &str,
        algorithm: &str,
        seed: u64,
        horizon: u32,
        sweep_seed: u64,
        benchmark_params: Option<&Bound<'_, PyDict>>,
        algorithm_params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut spec = JobSpec::new(family, benchmark, algorithm);
        spec.benchmark_params = params_of("benchmark_params", benchmark_params)?;
        spec.algorithm_params = params_of("algorithm_params", algorithm_params)?;
        (spec.seed, spec.horizon, spec.sweep_seed) = (seed, horizon, sweep_seed);
        Job::of_spec(spec)
    }

    /// The job an object with the fields of one describes (an `armada_sdk` `Job`, say).
    #[staticmethod]
    fn of(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let field = |name: &str| obj.getattr(name);
        let dict = |name: &str| -> PyResult<Bound<'_, PyDict>> {
            // A mapping of another type (the SDK's frozen mappings) is copied into a dict.
            let d = PyDict::new(obj.py());
            d.update(field(name)?.cast::<pyo3::types::PyMapping>()?)?;
            Ok(d)
        };
        Job::new(
            &field("family")?.extract::<String>()?,
            &field("benchmark")?.extract::<String>()?,
            &field("algorithm")?.extract::<String>()?,
            field("seed")?.extract()?,
            field("horizon")?.extract()?,
            field("sweep_seed")?.extract()?,
            Some(&dict("benchmark_params")?),
            Some(&dict("algorithm_params")?),
        )
    }

    #[getter]
    fn family(&self) -> &str {
        &self.spec.family
    }

    #[getter]
    fn benchmark(&self) -> &str {
        &self.spec.benchmark
    }

    #[getter]
    fn algorithm(&self) -> &str {
        &self.spec.algorithm
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.spec.seed
    }

    #[getter]
    fn horizon(&self) -> u32 {
        self.spec.horizon
    }

    #[getter]
    fn sweep_seed(&self) -> u64 {
        self.spec.sweep_seed
    }

    #[getter]
    fn benchmark_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, &self.spec.benchmark_params)
    }

    #[getter]
    fn algorithm_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, &self.spec.algorithm_params)
    }

    /// Whether the algorithm is one of the family's own (then `run_builtin` runs it).
    #[getter]
    fn builtin(&self) -> bool {
        self.builtin.is_some()
    }

    /// A built-in algorithm's job key (32 hex digits), as a coordinator keys it; None otherwise.
    #[getter]
    fn key(&self) -> Option<String> {
        self.builtin.as_ref().map(|v| v.key.to_string())
    }

    /// The environment stream `purpose`: the same for every algorithm of this seed.
    fn environment_stream(&self, purpose: &str) -> Stream {
        Stream { rng: self.streams.env(purpose) }
    }

    /// The algorithm's own stream `purpose` (it also hashes the algorithm and its parameters).
    fn algorithm_stream(&self, purpose: &str) -> Stream {
        Stream { rng: self.streams.algo(purpose) }
    }

    /// The same job (benchmark, seed, environment streams) for another algorithm: a
    /// reimplementation of a built-in algorithm draws from that algorithm's own streams
    /// with `job.with_algorithm("random").algorithm_stream(...)`.
    #[pyo3(signature = (algorithm, algorithm_params=None))]
    fn with_algorithm(&self, algorithm: &str, algorithm_params: Option<&Bound<'_, PyDict>>) -> PyResult<Job> {
        let s = &self.spec;
        let mut spec = JobSpec::new(&s.family, &s.benchmark, algorithm);
        (spec.benchmark_params, spec.seed, spec.horizon, spec.sweep_seed) =
            (s.benchmark_params.clone(), s.seed, s.horizon, s.sweep_seed);
        spec.algorithm_params = params_of("algorithm_params", algorithm_params)?;
        Job::of_spec(spec)
    }

    fn __repr__(&self) -> String {
        let s = &self.spec;
        format!(
            "Job({} {}{} {}{} seed={} horizon={} sweep_seed={})",
            s.family, s.benchmark, s.benchmark_params, s.algorithm, s.algorithm_params, s.seed, s.horizon, s.sweep_seed
        )
    }
}
