//! Tests of parts: the schema and values written, the index, reading in pieces and runs,
//! byte-identical rewrites, older files, and what is refused.

use super::super::test_support::*;
use super::*;
use armada_core::{MetricKind, StepRecord};
use std::collections::BTreeMap;
use std::ops::Range;

fn records(n: u32, offset: f64) -> Vec<StepRecord> {
    (0..n)
        .map(|step| StepRecord {
            step,
            elapsed_ms: 0.125,
            values: vec![offset + 1.0 / f64::from(step + 1), f64::from(step % 7)],
        })
        .collect()
}

fn part_job(job: &ValidJob, records: &[StepRecord]) -> PartJob<'static> {
    let owned = records.to_vec();
    PartJob::of(job, owned.len(), owned.into_iter().map(Ok))
}

fn provenance_record(worker: &str, name: &str, attempt_id: u64, code: &str) -> Provenance {
    Provenance {
        worker: worker.into(),
        name: name.into(),
        host: "h\"ost\\,\"attempt_id\":0".into(),
        software: "armada 0.1 (abc)".into(),
        processor: "x86-64-v3".into(),
        attempt_id,
        family_digest: String::new(),
        code: code.into(),
        token: "lab".into(),
        peer: "127.0.0.1:5".into(),
        registered_ms: 1_700_000_000_000,
    }
}

/// A part's provenance lists each worker's record once (without an attempt id) and, per
/// job in key order, the index of its worker's record and its attempt: the bytes serde_json
/// gives for that structure, for workers with the same session and other fields, names that
/// look like JSON, a record shared and the same record unshared, jobs without provenance
/// left out. Written into a part, it reads back as each job's full record.
#[test]
fn provenance_lists_each_workers_record_once_and_each_jobs_worker_and_attempt() {
    // Workers' records as the coordinator shares them (one per worker and family),
    // and one record many times, unshared.
    let shared = [
        provenance_record("w1", "a", 0, ""),
        provenance_record("w1", "a", 0, "c0de"),
        provenance_record("w2", "b\u{e9}\n", 0, ""),
        provenance_record("w3", "c", 0, ""),
    ]
    .map(Arc::new);
    let jobs = || -> Vec<PartJob<'static>> {
        (0..40u64)
            .map(|seed| {
                let mut part = part_job(&job("lse", "sinusoidal", "straddle", seed), &records(1, 0.0));
                part.provenance = match seed % 5 {
                    0 => None,
                    1 => Some((shared[0].clone(), 1000 + seed)),
                    2 => Some((shared[1].clone(), 2000 + seed)),
                    3 => Some((shared[2].clone(), u64::MAX - seed)),
                    _ if seed % 2 == 0 => Some((Arc::new(provenance_record("w3", "c", 7, "")), 0)),
                    _ => Some((shared[3].clone(), 0)),
                };
                part
            })
            .collect()
    };
    let jobs = jobs();
    // The expected value, built apart: the jobs by key, each worker's record numbered in
    // the order of its first job.
    let by_key: BTreeMap<&str, (&Arc<Provenance>, u64)> =
        jobs.iter().filter_map(|j| j.provenance.as_ref().map(|(p, a)| (j.key.as_str(), (p, *a)))).collect();
    assert_eq!(by_key.len(), 32);
    #[derive(serde::Serialize)]
    struct Expected<'a> {
        workers: Vec<serde_json::Value>,
        jobs: BTreeMap<&'a str, (usize, u64)>,
    }
    let mut expected = Expected { workers: Vec::new(), jobs: BTreeMap::new() };
    let mut seen: Vec<&Arc<Provenance>> = Vec::new();
    for (key, (record, attempt)) in &by_key {
        let worker = match seen.iter().position(|s| Arc::ptr_eq(s, record)) {
            Some(i) => i,
            None => {
                seen.push(record);
                let mut json = serde_json::to_value(&***record).unwrap();
                json.as_object_mut().unwrap().remove("attempt_id");
                expected.workers.push(json);
                seen.len() - 1
            }
        };
        expected.jobs.insert(key, (worker, *attempt));
    }
    assert_eq!(expected.workers.len(), 8, "four shared records and four copies of one");
    let json = provenance_json(&jobs).unwrap();
    assert_eq!(json, serde_json::to_string(&expected).unwrap());
    assert_eq!(json.matches("\"registered_ms\"").count(), 8, "each record once: {json}");
    assert_eq!(provenance_json(&jobs[..1]), None, "seed 0 has none");

    // Read back from a part: every job's full record with its attempt.
    let full: BTreeMap<String, Provenance> = by_key
        .iter()
        .map(|(key, (record, attempt_id))| {
            (key.to_string(), Provenance { attempt_id: *attempt_id, ..(***record).clone() })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let written = write_part(dir.path(), &METRICS, jobs).unwrap();
    assert_eq!(read_provenance(&written.path).unwrap(), full);
}

/// Parts written before 2026-12-04 hold a full record per job, and read back the same; a
/// job that names a worker the part does not list is refused, naming the job.
#[test]
fn provenance_of_the_older_per_job_layout_reads_back_and_a_missing_worker_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let write_footer = |name: &str, provenance: String| {
        let path = dir.path().join(name);
        let mut df = df!("x" => [1i64]).unwrap();
        let metadata = KeyValueMetadata::from_static(vec![(PROVENANCE_KEY.to_owned(), provenance)]);
        let file = File::create(&path).unwrap();
        ParquetWriter::new(file).with_key_value_metadata(Some(metadata)).finish(&mut df).unwrap();
        path
    };
    let older: BTreeMap<String, Provenance> = [
        ("0a".repeat(16), provenance_record("w1", "a", 3, "")),
        ("0b".repeat(16), provenance_record("w2", "b", 4, "c0de")),
        ("0c".repeat(16), provenance_record("w1", "a", 5, "")),
    ]
    .into_iter()
    .collect();
    let path = write_footer("older.parquet", serde_json::to_string(&older).unwrap());
    assert_eq!(read_provenance(&path).unwrap(), older);

    let mut worker = serde_json::to_value(provenance_record("w1", "a", 0, "")).unwrap();
    worker.as_object_mut().unwrap().remove("attempt_id");
    let key = "0d".repeat(16);
    let damaged = format!(r#"{{"workers":[{worker}],"jobs":{{"{key}":[1,9]}}}}"#);
    let path = write_footer("damaged.parquet", damaged);
    let error = format!("{:#}", read_provenance(&path).unwrap_err());
    assert!(error.contains(&format!("job {key}'s provenance names worker 1 of 1")), "{error}");
}

#[test]
fn a_job_round_trips_schema_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let job = job("lse", "sinusoidal", "straddle", 3);
    let records = vec![
        StepRecord { step: 0, elapsed_ms: 1.5, values: vec![0.25, 2.0] },
        StepRecord { step: 1, elapsed_ms: 2.5, values: vec![f64::NAN, -7.0] },
        StepRecord { step: 2, elapsed_ms: 0.0, values: vec![-1e300, f64::NAN] },
    ];
    let path = write_shard(dir.path(), &job, &METRICS, &records).unwrap();
    assert_eq!(path, trajectories_dir(dir.path()).join(format!("part-{}.parquet", job.key)));

    let df = read_parquet(&path).unwrap();
    let schema: Vec<(String, DataType)> =
        df.columns().iter().map(|c| (c.name().to_string(), c.dtype().clone())).collect();
    // The declared columns, then the family's metrics in its order.
    let metrics = [("regret".to_owned(), DataType::Float64), ("chosen".to_owned(), DataType::Int64)];
    let expected: Vec<(String, DataType)> =
        schema::TRAJECTORY.iter().map(|c| (c.name.to_owned(), c.ty.dtype())).chain(metrics).collect();
    assert_eq!(schema, expected);
    assert_eq!(df.height(), 3);

    let s = |name: &str| strs(&df, name);
    assert_eq!(s("job_key"), vec![job.key.0.clone(); 3]);
    assert_eq!(s("family"), vec!["lse"; 3]);
    assert_eq!(s("benchmark"), vec!["sinusoidal"; 3]);
    assert_eq!(s("benchmark_params"), vec![r#"{"noise_sd":0.1}"#; 3]);
    assert_eq!(s("algorithm"), vec!["straddle"; 3]);
    assert_eq!(s("algorithm_params"), vec![r#"{"beta_sqrt":3.0}"#; 3]);
    assert_eq!(ints(&df, "seed"), vec![Some(3); 3]);
    // u64 stored bit-for-bit.
    assert_eq!(ints(&df, "sweep_seed"), vec![Some(u64::MAX as i64); 3]);
    assert_eq!(ints(&df, "horizon"), vec![Some(2); 3]);
    assert_eq!(ints(&df, "step"), vec![Some(0), Some(1), Some(2)]);
    assert_eq!(floats(&df, "elapsed_ms"), vec![Some(1.5), Some(2.5), Some(0.0)]);
    let regret = floats(&df, "regret");
    assert_eq!(regret[0], Some(0.25));
    assert!(regret[1].unwrap().is_nan(), "NaN is stored as NaN in trajectories");
    assert_eq!(regret[2], Some(-1e300));
    assert_eq!(ints(&df, "chosen"), vec![Some(2), Some(-7), None]);

    let names: Vec<_> = fs::read_dir(trajectories_dir(dir.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec![format!("part-{}.parquet", job.key)], "no temp file left behind");
    assert_eq!(stored_keys(dir.path()).unwrap().0, BTreeSet::from([job.key.0.clone()]));
}

/// Many jobs of several cells in one part: sorted by (cell, key), indexed in the footer,
/// each read back alone equal to what was written; a long job spans several row groups.
#[test]
fn a_part_indexes_its_jobs_and_each_reads_back_alone() {
    let dir = tempfile::tempdir().unwrap();
    let long = PART_ROW_GROUP_ROWS as u32 * 2 + 17;
    let mut written = Vec::new();
    for (algorithm, seed, n) in [("ucb", 0, 3), ("straddle", 1, long), ("straddle", 0, 5), ("ucb", 1, 0)] {
        let job = job("lse", "sinusoidal", algorithm, seed);
        written.push((job, records(n, seed as f64)));
    }
    let parts: Vec<_> = written.iter().map(|(job, r)| part_job(job, r)).collect();
    let path = write_part(dir.path(), &METRICS, parts).unwrap().path;
    let first = written.iter().map(|(j, _)| j.key.0.clone()).min().unwrap();
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), part_name(&first));

    let index = read_index(&path).unwrap();
    // Cell order (straddle before ucb), then key order within a cell; offsets contiguous.
    let cells: Vec<&str> = index.iter().map(|j| j.cell.algorithm.as_str()).collect();
    assert_eq!(cells, ["straddle", "straddle", "ucb", "ucb"]);
    assert!(index[0].key < index[1].key && index[2].key < index[3].key);
    let mut offset = 0;
    for j in &index {
        assert_eq!(j.offset, offset);
        offset += j.rows;
    }
    assert_eq!(offset, read_parquet(&path).unwrap().height());

    let stored = stored_jobs(dir.path(), None).unwrap();
    assert_eq!(stored.len(), 4);
    for (job, records) in &written {
        let found = stored.iter().find(|s| s.key == job.key.0).unwrap();
        assert_eq!(*found.cell, Cell::of(job));
        assert_eq!(found.rows, records.len());
        let df = read_jobs(&[found]).unwrap().remove(0);
        assert_eq!(df.height(), records.len());
        let steps: Vec<Option<i64>> = records.iter().map(|r| Some(i64::from(r.step))).collect();
        assert_eq!(ints(&df, "step"), steps);
        let regret: Vec<Option<f64>> = records.iter().map(|r| Some(r.values[0])).collect();
        assert_eq!(floats(&df, "regret"), regret);
        assert!(strs(&df, "job_key").iter().all(|k| *k == job.key.0));
    }
    // Several jobs of one cell are read with one slice, each still its own.
    let straddle: Vec<&StoredRows> = stored.iter().filter(|s| s.cell.algorithm == "straddle").collect();
    let frames = read_jobs(&straddle).unwrap();
    assert_eq!(frames.iter().map(DataFrame::height).collect::<Vec<_>>(), vec![straddle[0].rows, straddle[1].rows]);
    // Only the requested keys.
    let only = BTreeSet::from([written[0].0.key.0.clone()]);
    assert_eq!(stored_jobs(dir.path(), Some(&only)).unwrap().len(), 1);
}

/// A long job comes in pieces (in order, the last ending at its last row), short ones
/// whole; the pieces are the job's rows, and ranges and picked rows read back the same.
#[test]
fn long_jobs_are_read_in_pieces_and_ranges_read_back_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let lengths = [10u32, 3, 25];
    let jobs: Vec<(ValidJob, Vec<StepRecord>)> = lengths
        .iter()
        .enumerate()
        .map(|(seed, &n)| (job("lse", "sinusoidal", "straddle", seed as u64), records(n, seed as f64 * 100.0)))
        .collect();
    write_part(dir.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap();
    let mut stored = stored_jobs(dir.path(), None).unwrap();
    // In the order of `lengths` (a part keeps key order).
    stored.sort_by_key(|j| lengths.iter().position(|&n| n as usize == j.rows));
    let refs: Vec<&StoredRows> = stored.iter().collect();
    let whole = read_jobs(&refs).unwrap();
    let mut calls = Vec::new();
    let mut pieces: Vec<Vec<DataFrame>> = vec![Vec::new(); refs.len()];
    for_each_job_in_batches(&refs, 8, |job, df, first| {
        let i = refs.iter().position(|j| j.key == job.key).unwrap();
        calls.push((i, first, df.height()));
        pieces[i].push(df);
        Ok(())
    })
    .unwrap();
    let n = |i: usize| stored[i].rows;
    assert_eq!([n(0), n(1), n(2)], [10, 3, 25]);
    assert_eq!(calls, [(0, 0, 8), (0, 8, 2), (1, 0, 3), (2, 0, 8), (2, 8, 8), (2, 16, 8), (2, 24, 1)]);
    for (i, frames) in pieces.iter().enumerate() {
        assert_eq!(concat(frames.iter()).unwrap(), whole[i], "job {i}");
    }
    // A window of every job, and rows picked across pieces.
    let window: Vec<(&StoredRows, Range<usize>)> = refs.iter().map(|&j| (j, 2..3.min(j.rows))).collect();
    for ((_, rows), (df, full)) in window.iter().zip(read_ranges(&window).unwrap().iter().zip(&whole)) {
        assert_eq!(df, &full.slice(rows.start as i64, rows.len()));
    }
    let picked = read_rows_at_in(&stored[2], &[0, 7, 8, 20, 24], 8).unwrap();
    let steps: Vec<Option<i64>> = picked.column(STEP).unwrap().i64().unwrap().iter().collect();
    assert_eq!(steps, [0, 7, 8, 20, 24].map(Some));
    let err = read_ranges(&[(&stored[1], 0..4)]).unwrap_err();
    assert!(format!("{err:#}").contains("rows 0..4 of job"), "{err:#}");
}

/// Runs are the longest stretches of ranges that follow one another in one part: two
/// parts of sorted whole jobs are two runs, a gap or a step back starts another, and
/// every run's frame is its ranges' rows, in order.
#[test]
fn ranges_that_follow_one_another_in_a_part_come_as_one_run() {
    let dir = tempfile::tempdir().unwrap();
    for (first, lengths) in [(0u64, [4u32, 2, 5]), (10, [2, 3, 2])] {
        let jobs: Vec<(ValidJob, Vec<StepRecord>)> = (0..3)
            .map(|i| (job("lse", "sinusoidal", "straddle", first + i), records(lengths[i as usize], i as f64)))
            .collect();
        write_part(dir.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap();
    }
    let mut stored = stored_jobs(dir.path(), None).unwrap();
    stored.sort_by(|a, b| (&*a.part, a.offset).cmp(&(&*b.part, b.offset)));
    assert_eq!(stored.len(), 6);
    let runs_of = |ranges: &[(&StoredRows, Range<usize>)]| {
        let mut runs = Vec::new();
        for_each_run(ranges, |run, df| {
            runs.push((run, df));
            Ok(())
        })
        .unwrap();
        let frames = read_ranges(ranges).unwrap();
        let joined: Vec<DataFrame> = runs.iter().map(|(_, df)| df.clone()).collect();
        assert_eq!(concat(joined.iter()).unwrap(), concat(frames.iter()).unwrap());
        runs.into_iter().map(|(run, _)| run).collect::<Vec<_>>()
    };
    let whole: Vec<(&StoredRows, Range<usize>)> = stored.iter().map(|j| (j, 0..j.rows)).collect();
    assert_eq!(runs_of(&whole), [0..3, 3..6]);
    // The second job's tail is left out: the third starts a run of its own.
    let gap = [whole[0].clone(), (&stored[1], 0..1), whole[2].clone()];
    assert_eq!(runs_of(&gap), [0..2, 2..3]);
    // Back to the first job, then to the other part and back.
    let mixed = [whole[0].clone(), whole[1].clone(), whole[0].clone(), whole[3].clone(), whole[2].clone()];
    assert_eq!(runs_of(&mixed), [0..2, 2..3, 3..4, 4..5]);
    // A job's tail, an empty range and the next job's head join; an empty range
    // elsewhere stands alone.
    let inner = [(&stored[0], 1..stored[0].rows), (&stored[1], 0..0), (&stored[1], 0..1), (&stored[4], 1..1)];
    assert_eq!(runs_of(&inner), [0..3, 3..4]);
}

#[test]
fn repeat_writes_are_byte_identical_whatever_the_job_order() {
    let jobs: Vec<_> =
        (0..4).map(|seed| (job("lse", "sinusoidal", "straddle", seed), records(50, seed as f64))).collect();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let pa = write_part(a.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap().path;
    let pb = write_part(b.path(), &METRICS, jobs.iter().rev().map(|(j, r)| part_job(j, r)).collect()).unwrap().path;
    let (ba, bb) = (fs::read(&pa).unwrap(), fs::read(pb).unwrap());
    assert!(!ba.is_empty());
    assert!(ba == bb, "two writes of the same jobs differ");
}

#[test]
fn listing_ignores_temp_files_and_reads_files_without_an_index_as_one_job() {
    let dir = tempfile::tempdir().unwrap();
    assert!(stored_keys(dir.path()).unwrap().0.is_empty(), "missing dir = no jobs");
    let traj = trajectories_dir(dir.path());
    fs::create_dir_all(&traj).unwrap();
    for name in [".abc.parquet.1.0.tmp", "notes.txt"] {
        fs::write(traj.join(name), b"x").unwrap();
    }
    // A file of older armada: one job named by its file stem, no index.
    let job = job("lse", "sinusoidal", "straddle", 0);
    let df = trajectory_frame(&job, &METRICS, &records(4, 0.0)).unwrap();
    write_parquet_atomic(&traj.join(format!("{}.parquet", job.key)), &df).unwrap();
    let stored = stored_jobs(dir.path(), None).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].key.as_str(), stored[0].offset, stored[0].rows), (job.key.0.as_str(), 0, 4));
    assert_eq!(*stored[0].cell, Cell::of(&job));
    // The same job in a part too: stored twice is an error, never a double count.
    write_shard(dir.path(), &job, &METRICS, &records(4, 0.0)).unwrap();
    let err = stored_jobs(dir.path(), None).unwrap_err();
    assert!(format!("{err:#}").contains("is stored twice"), "{err:#}");
}

/// Parameters are stored as JSON; a file written before that (the canonical text
/// `{noise_sd=0.1}` in its rows) reads as the same cell, and its job summarizes with the
/// new parts' jobs of that cell, not apart.
#[test]
fn parts_written_before_json_params_read_as_the_same_cell() {
    let dir = tempfile::tempdir().unwrap();
    let traj = trajectories_dir(dir.path());
    fs::create_dir_all(&traj).unwrap();
    let old = job("lse", "sinusoidal", "straddle", 0);
    let mut df = trajectory_frame(&old, &METRICS, &records(4, 0.0)).unwrap();
    assert_eq!(strs(&df, "benchmark_params")[0], r#"{"noise_sd":0.1}"#);
    for (column, text) in [("benchmark_params", "{noise_sd=0.1}"), ("algorithm_params", "{beta_sqrt=3.0}")] {
        df.with_column(Column::new(column.into(), vec![text; 4])).unwrap();
    }
    write_parquet_atomic(&traj.join(format!("{}.parquet", old.key)), &df).unwrap();
    let new = job("lse", "sinusoidal", "straddle", 1);
    write_shard(dir.path(), &new, &METRICS, &records(4, 1.0)).unwrap();
    let stored = stored_jobs(dir.path(), None).unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|j| *j.cell == Cell::of(&new)), "{stored:?}");
    assert_eq!(stored[0].cell.algorithm_params, r#"{"beta_sqrt":3.0}"#);
    // Its spec reads back from the old text, the same spec (so the same key).
    let specs = read_specs(&traj.join(format!("{}.parquet", old.key))).unwrap();
    assert_eq!((specs[0].0.as_str(), &specs[0].1), (old.key.0.as_str(), &old.spec));
    let report = crate::results::summarize(dir.path(), None).unwrap();
    assert_eq!(report.n_jobs, 2);
    let last = read_parquet(&report.final_path).unwrap();
    let n = last.column("n").unwrap().i64().unwrap();
    assert!(n.iter().all(|n| n == Some(2)), "one cell of two seeds: {last}");
    assert!(strs(&last, "algorithm_params").iter().all(|p| p == r#"{"beta_sqrt":3.0}"#));
}

/// A part's footer, and the summary tables made from it, say what each metric is
/// (`armada.metrics`), as `armada list` would.
#[test]
fn parts_and_summaries_say_what_their_metrics_mean() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read_metric_docs(dir.path()), None);
    write_shard(dir.path(), &job("lse", "sinusoidal", "straddle", 0), &METRICS, &records(4, 0.0)).unwrap();
    let docs: serde_json::Value = serde_json::from_str(&read_metric_docs(dir.path()).unwrap()).unwrap();
    let expected: serde_json::Map<String, serde_json::Value> = METRICS
        .iter()
        .map(|m| {
            let kind = if m.kind == MetricKind::Float { "float" } else { "integer" };
            (m.name.to_string(), serde_json::json!({ "kind": kind, "doc": m.doc }))
        })
        .collect();
    assert_eq!(docs, serde_json::Value::Object(expected));
    let report = crate::results::summarize(dir.path(), None).unwrap();
    for table in [&report.summary_path, &report.final_path] {
        let mut reader = ParquetReader::new(File::open(table).unwrap());
        let metadata = reader.get_metadata().unwrap();
        let kv = metadata.key_value_metadata().as_ref().unwrap();
        let entry = kv.iter().find(|e| e.key == METRICS_KEY).and_then(|e| e.value.clone()).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&entry).unwrap(), docs, "{}", table.display());
    }
}

/// A part rewritten by another tool (polars writes no `armada.jobs` footer) is refused
/// naming the file, never read as one job; so is a one-job file holding other rows.
#[test]
fn a_part_without_its_index_is_refused_not_merged_into_one_job() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<_> = (0..3).map(|seed| (job("lse", "sinusoidal", "straddle", seed), records(4, 0.0))).collect();
    let path = write_part(dir.path(), &METRICS, jobs.iter().map(|(j, r)| part_job(j, r)).collect()).unwrap().path;
    assert_eq!(stored_jobs(dir.path(), None).unwrap().len(), 3);
    let df = read_parquet(&path).unwrap();
    write_parquet_atomic(&path, &df).unwrap();
    let err = stored_jobs(dir.path(), None).unwrap_err();
    assert!(matches!(err.root(), ResultsError::Damaged { path: p, .. } if *p == path), "{err:?}");
    let err = format!("{err:#}");
    assert!(err.contains(&path.display().to_string()) && err.contains("has no job index"), "{err}");
    // Summaries leave it out and say so; alone, it is what they fail on.
    let err = crate::results::summarize(dir.path(), None).unwrap_err();
    assert_eq!(err.damaged_file(), Some(path.as_path()), "{err}");
    let other = job("lse", "sinusoidal", "straddle", 10);
    let other_part = write_shard(dir.path(), &other, &METRICS, &records(4, 0.0)).unwrap();
    let report = crate::results::summarize(dir.path(), None).unwrap();
    assert_eq!((report.n_jobs, report.damaged.clone()), (1, vec![path.clone()]));
    let readable = readable_jobs(dir.path(), None).unwrap();
    assert_eq!(readable.jobs.iter().map(|j| j.key.as_str()).collect::<Vec<_>>(), [other.key.0.as_str()]);
    assert_eq!(readable.damaged.len(), 1);
    fs::remove_file(&other_part).unwrap();
    // Renamed as an older armada's one-job file, the other jobs' rows still show.
    fs::remove_file(&path).unwrap();
    let legacy = trajectories_dir(dir.path()).join(format!("{}.parquet", jobs[0].0.key));
    write_parquet_atomic(&legacy, &df).unwrap();
    let err = format!("{:#}", stored_jobs(dir.path(), None).unwrap_err());
    assert!(err.contains("holds rows of job") && err.contains(&legacy.display().to_string()), "{err}");
}

#[test]
fn bad_records_are_rejected_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let job = job("lse", "sinusoidal", "straddle", 0);
    let short = [StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0] }];
    assert!(write_shard(dir.path(), &job, &METRICS, &short).is_err());
    let fractional = [StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0, 0.5] }];
    let err = write_shard(dir.path(), &job, &METRICS, &fractional).unwrap_err();
    assert!(matches!(err.root(), ResultsError::Invalid(_)), "{err:?}");
    assert!(format!("{err:#}").contains("non-integer"), "{err:#}");
    // A source that yields fewer records than announced.
    let lying = PartJob::of(&job, 3, records(2, 0.0).into_iter().map(Ok));
    let err = write_part(dir.path(), &METRICS, vec![lying]).unwrap_err();
    assert!(format!("{err:#}").contains("2 records where 3 were announced"), "{err:#}");
    assert!(stored_keys(dir.path()).unwrap().0.is_empty());
    assert_eq!(fs::read_dir(trajectories_dir(dir.path())).unwrap().count(), 0, "no temp file left behind");
}
