//! Trajectory shards: one Parquet file per committed job.

use super::*;
use anyhow::{bail, ensure};
use armada_core::{JobKey, MetricDef, MetricKind, StepRecord, ValidJob};
use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;

/// `<sweep_dir>/trajectories`: where the shards live.
pub fn trajectories_dir(sweep_dir: &Path) -> PathBuf {
    sweep_dir.join("trajectories")
}

/// `<sweep_dir>/trajectories/<job-key>.parquet`.
pub fn shard_path(sweep_dir: &Path, key: &JobKey) -> PathBuf {
    trajectories_dir(sweep_dir).join(format!("{key}.parquet"))
}

/// Keys of the shards that exist: the file stems of `*.parquet` in `trajectories/`.
/// Temp files are ignored; a missing `trajectories/` directory means no shards.
pub fn read_shard_keys(sweep_dir: &Path) -> io::Result<BTreeSet<String>> {
    Ok(shard_files(sweep_dir)?.into_iter().map(|(key, _)| key).collect())
}

/// `(key, path)` of every shard, sorted by key.
pub(super) fn shard_files(sweep_dir: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let dir = trajectories_dir(sweep_dir);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_temp_name(name) || !entry.file_type()?.is_file() {
            continue;
        }
        if let Some(key) = name.strip_suffix(".parquet") {
            out.push((key.to_owned(), entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Write one job's trajectory atomically (see the module docs for the schema).
/// Returns the shard's path. A crash leaves either no shard or a complete one.
pub fn write_shard(
    sweep_dir: &Path,
    job: &ValidJob,
    metrics: &[MetricDef],
    records: &[StepRecord],
) -> anyhow::Result<PathBuf> {
    let mut df = shard_frame(job, metrics, records).with_context(|| format!("building shard of job {}", job.key))?;
    let dir = trajectories_dir(sweep_dir);
    if !dir.is_dir() {
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // Make the new directory's own entry durable, not just the files in it.
        File::open(sweep_dir).and_then(|d| d.sync_all()).with_context(|| format!("syncing {}", sweep_dir.display()))?;
    }
    let path = shard_path(sweep_dir, &job.key);
    write_parquet_atomic(&path, &mut df)?;
    Ok(path)
}

fn shard_frame(job: &ValidJob, metrics: &[MetricDef], records: &[StepRecord]) -> anyhow::Result<DataFrame> {
    for (i, m) in metrics.iter().enumerate() {
        ensure!(!SHARD_FIXED_COLUMNS.contains(&m.name), "metric name {:?} clashes with a shard column", m.name);
        ensure!(!metrics[..i].iter().any(|other| other.name == m.name), "metric name {:?} appears twice", m.name);
    }
    for r in records {
        ensure!(
            r.values.len() == metrics.len(),
            "step {} has {} values for {} metrics",
            r.step,
            r.values.len(),
            metrics.len()
        );
    }
    let spec = &job.spec;
    let n = records.len();
    let seed = i64::try_from(spec.seed).context("seed index does not fit in Int64")?;
    let text = |name: &str, value: String| Column::new(name.into(), vec![value; n]);
    let int = |name: &str, value: i64| Column::new(name.into(), vec![value; n]);
    let mut columns = vec![
        text(JOB_KEY, job.key.0.clone()),
        text(FAMILY, spec.family.clone()),
        text(BENCHMARK, spec.benchmark.clone()),
        text(BENCHMARK_PARAMS, spec.benchmark_params.to_string()),
        text(ALGORITHM, spec.algorithm.clone()),
        text(ALGORITHM_PARAMS, spec.algorithm_params.to_string()),
        int(SEED, seed),
        // Bit-for-bit: Parquet readers have no trouble with Int64, many with UInt64.
        int(SWEEP_SEED, spec.sweep_seed as i64),
        int(HORIZON, i64::from(spec.horizon)),
        Column::new(STEP.into(), records.iter().map(|r| i64::from(r.step)).collect::<Vec<_>>()),
        Column::new(ELAPSED_MS.into(), records.iter().map(|r| r.elapsed_ms).collect::<Vec<_>>()),
    ];
    for (i, m) in metrics.iter().enumerate() {
        let column = match m.kind {
            MetricKind::Float => Column::new(m.name.into(), records.iter().map(|r| r.values[i]).collect::<Vec<_>>()),
            MetricKind::Int => {
                let values = records
                    .iter()
                    .map(|r| int_value(r.values[i]).with_context(|| format!("metric {} at step {}", m.name, r.step)))
                    .collect::<anyhow::Result<Vec<Option<i64>>>>()?;
                Column::new(m.name.into(), values)
            }
        };
        columns.push(column);
    }
    Ok(DataFrame::new(n, columns)?)
}

/// An Int metric value: NaN is missing, anything else must be an exact integer.
fn int_value(v: f64) -> anyhow::Result<Option<i64>> {
    if v.is_nan() {
        return Ok(None);
    }
    // 2^63 is exactly representable; every f64 below it in magnitude that has no
    // fractional part converts exactly.
    if v.fract() != 0.0 || v.abs() >= 9_223_372_036_854_775_808.0 {
        bail!("integer metric has non-integer value {v}");
    }
    Ok(Some(v as i64))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn shard_round_trips_schema_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let job = job("lse", "sinusoidal", "straddle", 3);
        let records = vec![
            StepRecord { step: 0, elapsed_ms: 1.5, values: vec![0.25, 2.0] },
            StepRecord { step: 1, elapsed_ms: 2.5, values: vec![f64::NAN, -7.0] },
            StepRecord { step: 2, elapsed_ms: 0.0, values: vec![-1e300, f64::NAN] },
        ];
        let path = write_shard(dir.path(), &job, &METRICS, &records).unwrap();
        assert_eq!(path, dir.path().join("trajectories").join(format!("{}.parquet", job.key)));

        let df = read_parquet(&path).unwrap();
        let schema: Vec<(String, DataType)> =
            df.columns().iter().map(|c| (c.name().to_string(), c.dtype().clone())).collect();
        let expected: Vec<(String, DataType)> = [
            ("job_key", DataType::String),
            ("family", DataType::String),
            ("benchmark", DataType::String),
            ("benchmark_params", DataType::String),
            ("algorithm", DataType::String),
            ("algorithm_params", DataType::String),
            ("seed", DataType::Int64),
            ("sweep_seed", DataType::Int64),
            ("horizon", DataType::Int64),
            ("step", DataType::Int64),
            ("elapsed_ms", DataType::Float64),
            ("regret", DataType::Float64),
            ("chosen", DataType::Int64),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_owned(), t))
        .collect();
        assert_eq!(schema, expected);
        assert_eq!(df.height(), 3);

        let s = |name: &str| strs(&df, name);
        assert_eq!(s("job_key"), vec![job.key.0.clone(); 3]);
        assert_eq!(s("family"), vec!["lse"; 3]);
        assert_eq!(s("benchmark"), vec!["sinusoidal"; 3]);
        assert_eq!(s("benchmark_params"), vec!["{noise_sd=0.1}"; 3]);
        assert_eq!(s("algorithm"), vec!["straddle"; 3]);
        assert_eq!(s("algorithm_params"), vec!["{beta_sqrt=3.0}"; 3]);
        assert_eq!(ints(&df, "seed"), vec![Some(3); 3]);
        // u64 stored bit-for-bit.
        assert_eq!(ints(&df, "sweep_seed"), vec![Some(u64::MAX as i64); 3]);
        assert_eq!(ints(&df, "horizon"), vec![Some(2); 3]);
        assert_eq!(ints(&df, "step"), vec![Some(0), Some(1), Some(2)]);
        assert_eq!(floats(&df, "elapsed_ms"), vec![Some(1.5), Some(2.5), Some(0.0)]);
        let regret = floats(&df, "regret");
        assert_eq!(regret[0], Some(0.25));
        assert!(regret[1].unwrap().is_nan(), "NaN is stored as NaN in shards");
        assert_eq!(regret[2], Some(-1e300));
        assert_eq!(ints(&df, "chosen"), vec![Some(2), Some(-7), None]);

        let names: Vec<_> = fs::read_dir(trajectories_dir(dir.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![format!("{}.parquet", job.key)], "no temp file left behind");
        assert_eq!(read_shard_keys(dir.path()).unwrap(), BTreeSet::from([job.key.0.clone()]));
    }

    #[test]
    fn repeat_writes_are_byte_identical() {
        let job = job("lse", "sinusoidal", "straddle", 0);
        let records: Vec<_> = (0..50)
            .map(|step| StepRecord {
                step,
                elapsed_ms: 0.125,
                values: vec![1.0 / f64::from(step + 1), f64::from(step % 7)],
            })
            .collect();
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let pa = write_shard(a.path(), &job, &METRICS, &records).unwrap();
        let pb = write_shard(b.path(), &job, &METRICS, &records).unwrap();
        let (ba, bb) = (fs::read(&pa).unwrap(), fs::read(pb).unwrap());
        assert!(!ba.is_empty());
        assert!(ba == bb, "two writes of the same job differ");
        // Overwriting in place (a retried job) also gives the same bytes.
        write_shard(a.path(), &job, &METRICS, &records).unwrap();
        assert!(fs::read(&pa).unwrap() == bb);
    }

    #[test]
    fn read_shard_keys_ignores_temp_and_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_shard_keys(dir.path()).unwrap().is_empty(), "missing dir = no shards");
        let traj = trajectories_dir(dir.path());
        fs::create_dir_all(&traj).unwrap();
        for name in ["abc.parquet", ".abc.parquet.1.0.tmp", "notes.txt", "def.parquet"] {
            fs::write(traj.join(name), b"x").unwrap();
        }
        assert_eq!(read_shard_keys(dir.path()).unwrap(), BTreeSet::from(["abc".to_owned(), "def".to_owned()]));
    }

    #[test]
    fn bad_records_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let job = job("lse", "sinusoidal", "straddle", 0);
        let short = [StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0] }];
        assert!(write_shard(dir.path(), &job, &METRICS, &short).is_err());
        let fractional = [StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0, 0.5] }];
        let err = write_shard(dir.path(), &job, &METRICS, &fractional).unwrap_err();
        assert!(format!("{err:#}").contains("non-integer"), "{err:#}");
        assert!(read_shard_keys(dir.path()).unwrap().is_empty());
    }
}
