//! Shared fixtures of the results tests.

use super::write_shard;
use armada_core::{JobSpec, MetricDef, MetricKind, ParamValue, StepRecord, ValidJob};
use polars::prelude::*;
use std::path::Path;

/// A float metric and an int metric, as a family would declare them.
pub const METRICS: [MetricDef; 2] = [
    MetricDef { name: "regret", kind: MetricKind::Float, doc: "simple regret" },
    MetricDef { name: "chosen", kind: MetricKind::Int, doc: "index of the chosen point" },
];

/// A job with `{noise_sd=0.1}` / `{beta_sqrt=3.0}`, horizon 2, sweep seed `u64::MAX`.
pub fn job(family: &str, benchmark: &str, algorithm: &str, seed: u64) -> ValidJob {
    let mut spec = JobSpec::new(family, benchmark, algorithm);
    spec.benchmark_params.insert("noise_sd".into(), ParamValue::Float(0.1));
    spec.algorithm_params.insert("beta_sqrt".into(), ParamValue::Float(3.0));
    spec.seed = seed;
    spec.horizon = 2;
    spec.sweep_seed = u64::MAX;
    let version = crate::registry().family(family).map_or(2, |f| f.version());
    let key = spec.key(version);
    ValidJob { spec, key }
}

pub fn strs(df: &DataFrame, name: &str) -> Vec<String> {
    let column = df.column(name).unwrap().str().unwrap();
    column.iter().map(|v| v.unwrap().to_owned()).collect()
}

pub fn ints(df: &DataFrame, name: &str) -> Vec<Option<i64>> {
    df.column(name).unwrap().i64().unwrap().iter().collect()
}

pub fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    df.column(name).unwrap().f64().unwrap().iter().collect()
}

pub const NAN: f64 = f64::NAN;

/// regret[seed][step] of the two lse algorithms (3 seeds x steps 0..=2).
pub const STRADDLE: [[f64; 3]; 3] = [[10.0, 5.0, 1.0], [20.0, 6.0, 2.0], [30.0, 7.0, 4.0]];
pub const UCB: [[f64; 3]; 3] = [[5.0, 1.0, 0.5], [NAN, 3.0, 0.5], [NAN, NAN, 0.5]];

/// The metrics of the fixture's other family.
pub const BANDIT_METRICS: [MetricDef; 2] = [
    MetricDef { name: "arm", kind: MetricKind::Int, doc: "pulled arm" },
    MetricDef { name: "reward", kind: MetricKind::Float, doc: "reward" },
];

/// Two lse algorithms x 3 seeds, plus one job of another family with other metrics
/// that stopped after step 1: (job, its family's metrics, records).
pub fn fixture_jobs() -> Vec<(ValidJob, &'static [MetricDef], Vec<StepRecord>)> {
    let mut jobs = Vec::new();
    for (algorithm, table) in [("straddle", STRADDLE), ("ucb", UCB)] {
        for (seed, row) in table.iter().enumerate() {
            let records: Vec<_> = row
                .iter()
                .enumerate()
                .map(|(step, &regret)| StepRecord {
                    step: step as u32,
                    elapsed_ms: 1.0 + seed as f64,
                    values: vec![regret, (step * 10 + seed) as f64],
                })
                .collect();
            jobs.push((job("lse", "sinusoidal", algorithm, seed as u64), &METRICS[..], records));
        }
    }
    let records = vec![
        StepRecord { step: 0, elapsed_ms: 0.0, values: vec![3.0, 0.0] },
        StepRecord { step: 1, elapsed_ms: 0.0, values: vec![1.0, 1.0] },
    ];
    jobs.push((job("bandit", "arms", "thompson", 0), &BANDIT_METRICS[..], records));
    jobs
}

/// The fixture, one job per part.
pub fn write_fixture(dir: &Path) {
    for (job, metrics, records) in fixture_jobs() {
        write_shard(dir, &job, metrics, &records).unwrap();
    }
}

/// A frame's columns, names and types in order.
pub fn columns_of(df: &DataFrame) -> Vec<(String, DataType)> {
    df.columns().iter().map(|c| (c.name().to_string(), c.dtype().clone())).collect()
}

/// A declared table's columns, names and types in order.
pub fn columns_of_table(table: &[super::schema::TableColumn]) -> Vec<(String, DataType)> {
    table.iter().map(|c| (c.name.to_owned(), c.ty.dtype())).collect()
}
