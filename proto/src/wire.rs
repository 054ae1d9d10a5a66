//! Conversions between the wire types of `armada-proto` and `armada-core`'s, in one place
//! so that prost types stop at the service edges.

use crate::v1 as pb;
use armada_core::{JobSpec, ParamValue, Params, RecordColumns, StepRecord};

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

fn record_to_wire(r: &StepRecord) -> pb::StepRecord {
    pb::StepRecord { step: r.step, elapsed_ms: r.elapsed_ms, metrics: r.values.clone() }
}

/// Records as a commit or an upload batch carries them (`records`, `columns`): as
/// columns, or as rows when they differ in width (the coordinator names the one at fault).
pub fn records_to_wire(records: &[StepRecord]) -> (Vec<pb::StepRecord>, Option<pb::RecordColumns>) {
    match RecordColumns::from_rows(records) {
        _ if records.is_empty() => (Vec::new(), None),
        Some(columns) => (Vec::new(), Some(columns_to_wire(columns))),
        None => (records.iter().map(record_to_wire).collect(), None),
    }
}

fn columns_to_wire(c: RecordColumns) -> pb::RecordColumns {
    pb::RecordColumns {
        steps: c.steps,
        elapsed_ms: c.elapsed_ms,
        metrics: c.metrics.into_iter().map(|values| pb::MetricColumn { values }).collect(),
    }
}

/// Records that arrived as rows or as columns (`records`, `columns`; at most one of them).
pub enum Arrived {
    Rows(Vec<StepRecord>),
    Columns(RecordColumns),
}

impl Arrived {
    /// The records of a commit or an upload batch; an error when it carries both forms.
    pub fn from_wire(records: Vec<pb::StepRecord>, columns: Option<pb::RecordColumns>) -> Result<Arrived, String> {
        match columns {
            None => Ok(Arrived::Rows(
                records
                    .into_iter()
                    .map(|r| StepRecord { step: r.step, elapsed_ms: r.elapsed_ms, values: r.metrics })
                    .collect(),
            )),
            Some(_) if !records.is_empty() => {
                Err("records, columns: records come in one form or the other, not both".to_string())
            }
            Some(c) => Ok(Arrived::Columns(RecordColumns {
                steps: c.steps,
                elapsed_ms: c.elapsed_ms,
                metrics: c.metrics.into_iter().map(|column| column.values).collect(),
            })),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Arrived::Rows(rows) => rows.len(),
            Arrived::Columns(columns) => columns.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
    fn records_travel_as_columns_and_arrive_as_sent() {
        let rows = vec![
            StepRecord { step: 0, elapsed_ms: 0.25, values: vec![1.0, f64::NAN, 3.0] },
            StepRecord { step: 1, elapsed_ms: 4.0, values: vec![-1.0, 2.0, 1e300] },
        ];
        let (records, columns) = records_to_wire(&rows);
        assert!(records.is_empty());
        let columns = columns.expect("rows of one width go as columns");
        assert_eq!(columns.metrics.len(), 3);
        assert_eq!(columns.metrics[2].values, [3.0, 1e300]);
        let Ok(Arrived::Columns(back)) = Arrived::from_wire(records, Some(columns)) else { panic!("columns") };
        assert_eq!(back.steps, [0, 1]);
        assert_eq!(back.elapsed_ms, [0.25, 4.0]);
        for (i, row) in rows.iter().enumerate() {
            let values: Vec<f64> = back.values(i).collect();
            assert_eq!(values.len(), row.values.len());
            assert!(values.iter().zip(&row.values).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    #[test]
    fn ragged_records_go_as_rows_and_both_forms_are_refused() {
        assert_eq!(records_to_wire(&[]), (Vec::new(), None));
        let ragged = [
            StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0, 2.0] },
            StepRecord { step: 1, elapsed_ms: 0.0, values: vec![1.0] },
        ];
        let (records, columns) = records_to_wire(&ragged);
        assert_eq!((records.len(), columns), (2, None));
        let Ok(Arrived::Rows(back)) = Arrived::from_wire(records.clone(), None) else { panic!("rows") };
        assert_eq!(back, ragged);
        let err = Arrived::from_wire(records, Some(pb::RecordColumns::default())).err().unwrap();
        assert!(err.starts_with("records, columns:"), "{err}");
    }

    #[test]
    fn a_value_without_kind_names_its_field() {
        let mut wire = spec_to_wire(&JobSpec::new("lse", "sinusoidal", "straddle"));
        wire.algorithm_params.insert("beta_sqrt".into(), pb::ParamValue { kind: None });
        let err = spec_from_wire(wire, "structured.jobs[3]").unwrap_err();
        assert!(err.starts_with("structured.jobs[3].algorithm_params.beta_sqrt:"), "{err}");
    }
}
