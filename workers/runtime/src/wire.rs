//! Conversions between the wire types of `armada-proto` and `armada-core`'s, in one place
//! so that prost types stop at the service edges.

use armada_core::{JobSpec, ParamValue, Params, StepRecord};
use armada_proto::v1 as pb;

/// A core job spec on the wire.
pub fn spec_to_wire(spec: &JobSpec) -> pb::JobSpec {
    pb::JobSpec {
        family: spec.family.clone(),
        benchmark: spec.benchmark.clone(),
        benchmark_params: params_to_wire(&spec.benchmark_params),
        algorithm: spec.algorithm.clone(),
        algorithm_params: params_to_wire(&spec.algorithm_params),
        seed: spec.seed,
        horizon: spec.horizon,
        sweep_seed: spec.sweep_seed,
    }
}

/// A wire job spec as a core one; `field` prefixes the path of the error (a parameter
/// value without a kind).
pub fn spec_from_wire(spec: pb::JobSpec, field: &str) -> Result<JobSpec, String> {
    Ok(JobSpec {
        family: spec.family,
        benchmark: spec.benchmark,
        benchmark_params: params_from_wire(spec.benchmark_params, &format!("{field}.benchmark_params"))?,
        algorithm: spec.algorithm,
        algorithm_params: params_from_wire(spec.algorithm_params, &format!("{field}.algorithm_params"))?,
        seed: spec.seed,
        horizon: spec.horizon,
        sweep_seed: spec.sweep_seed,
    })
}

fn params_to_wire(params: &Params) -> std::collections::HashMap<String, pb::ParamValue> {
    params.iter().map(|(name, value)| (name.clone(), param_to_wire(value))).collect()
}

/// One parameter value on the wire.
pub fn param_to_wire(value: &ParamValue) -> pb::ParamValue {
    let kind = match value {
        ParamValue::Bool(b) => pb::param_value::Kind::Flag(*b),
        ParamValue::Int(i) => pb::param_value::Kind::Int(*i),
        ParamValue::Float(f) => pb::param_value::Kind::Float(*f),
        ParamValue::Str(s) => pb::param_value::Kind::Text(s.clone()),
    };
    pb::ParamValue { kind: Some(kind) }
}

fn params_from_wire(params: std::collections::HashMap<String, pb::ParamValue>, field: &str) -> Result<Params, String> {
    let mut out = Params::new();
    for (name, value) in params {
        let value = match value.kind {
            Some(pb::param_value::Kind::Flag(b)) => ParamValue::Bool(b),
            Some(pb::param_value::Kind::Int(i)) => ParamValue::Int(i),
            Some(pb::param_value::Kind::Float(f)) => ParamValue::Float(f),
            Some(pb::param_value::Kind::Text(s)) => ParamValue::Str(s),
            None => return Err(format!("{field}.{name}: a parameter value needs one of float, int, flag, text")),
        };
        out.insert(name, value);
    }
    Ok(out)
}

pub fn record_to_wire(r: &StepRecord) -> pb::StepRecord {
    pb::StepRecord { step: r.step, elapsed_ms: r.elapsed_ms, metrics: r.values.clone() }
}

pub fn record_from_wire(r: pb::StepRecord) -> StepRecord {
    StepRecord { step: r.step, elapsed_ms: r.elapsed_ms, values: r.metrics }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip_with_the_same_key() {
        let mut spec = JobSpec::new("lse", "sinusoidal", "straddle");
        spec.seed = 7;
        spec.horizon = 30;
        spec.sweep_seed = u64::MAX;
        spec.algorithm_params.insert("beta_sqrt".into(), ParamValue::Float(2.5));
        spec.algorithm_params.insert("tie_break".into(), ParamValue::Str("random".into()));
        spec.benchmark_params.insert("pool_size".into(), ParamValue::Int(-3));
        spec.benchmark_params.insert("flag".into(), ParamValue::Bool(true));
        let back = spec_from_wire(spec_to_wire(&spec), "jobs[0]").unwrap();
        assert_eq!(back, spec);
        assert_eq!(back.key(2), spec.key(2));
    }

    #[test]
    fn a_value_without_kind_names_its_field() {
        let mut wire = spec_to_wire(&JobSpec::new("lse", "sinusoidal", "straddle"));
        wire.algorithm_params.insert("beta_sqrt".into(), pb::ParamValue { kind: None });
        let err = spec_from_wire(wire, "structured.jobs[3]").unwrap_err();
        assert!(err.starts_with("structured.jobs[3].algorithm_params.beta_sqrt:"), "{err}");
    }
}
