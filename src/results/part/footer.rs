//! A part's footer: its job index, who produced each job, and what the metrics mean.

use super::*;
use armada_core::{MetricDef, MetricKind};
use std::collections::{BTreeMap, HashMap};

/// The footer metadata key of a part's index.
pub const INDEX_KEY: &str = "armada.jobs";

/// The footer metadata key of who produced each job of a part: a JSON object of the part's
/// workers' records and, per job key, its worker and attempt ([`provenance_json`]; DuckDB:
/// `parquet_kv_metadata`; polars: `read_parquet_metadata`).
pub const PROVENANCE_KEY: &str = "armada.provenance";

/// The footer metadata key of what the family's metrics mean: a JSON object from metric
/// name to `{"kind": "float" | "integer", "doc": ...}`, in parts and in the summary tables,
/// so that a file says what its columns are without `armada list`.
pub const METRICS_KEY: &str = "armada.metrics";

/// [`METRICS_KEY`]'s value for `metrics`.
pub(super) fn metrics_json(metrics: &[MetricDef]) -> String {
    let entries: serde_json::Map<String, serde_json::Value> = metrics
        .iter()
        .map(|m| {
            let kind = match m.kind {
                MetricKind::Float => "float",
                MetricKind::Int => "integer",
            };
            (m.name.to_string(), serde_json::json!({ "kind": kind, "doc": m.doc }))
        })
        .collect();
    serde_json::Value::Object(entries).to_string()
}

/// The metrics' meanings as a sweep's parts record them ([`METRICS_KEY`]), from the first
/// part that has them (None for parts written before they did, or no parts).
pub fn read_metric_docs(sweep_dir: &Path) -> Option<String> {
    part_files(sweep_dir).ok()?.iter().find_map(|path| {
        let metadata = ParquetReader::new(File::open(path).ok()?).get_metadata().ok()?.clone();
        let kv = metadata.key_value_metadata().as_ref()?;
        kv.iter().find(|e| e.key == METRICS_KEY).and_then(|e| e.value.clone())
    })
}

/// Who produced a committed trajectory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The worker session as the coordinator names it (`w3`), and as it named itself.
    pub worker: String,
    pub name: String,
    pub host: String,
    /// What the worker runs, as it said: armada's version and build, or an SDK's version.
    pub software: String,
    /// Its processor's model and x86-64 feature level, as it said (empty in parts written
    /// before workers said it).
    #[serde(default)]
    pub processor: String,
    /// The attempt that committed it (a part's footer holds it beside the job's key, not in
    /// the worker's record).
    #[serde(default)]
    pub attempt_id: u64,
    /// The digest of the family's declaration, for a declared family (empty for a built-in
    /// one: the coordinator's build decides it).
    pub family_digest: String,
    /// The digest of the code that computed it, as the worker's SDK computed it at
    /// registration (empty for a built-in family, and for parts written before it was
    /// recorded).
    #[serde(default)]
    pub code: String,
    /// What the coordinator observed, not what the worker said (empty or 0 in parts written
    /// before it was recorded): the label of the token the worker registered with (its
    /// `name` in `--tokens`, `--token` for the single admin token, `none` on a coordinator
    /// without tokens), the address the registration came from, and when (UNIX ms).
    #[serde(default)]
    pub token: String,
    #[serde(default)]
    pub peer: String,
    #[serde(default)]
    pub registered_ms: i64,
}

/// A part's index as stored in its footer: cells once, then (key, cell, offset, rows) per job.
#[derive(Serialize, Deserialize)]
pub(super) struct PartIndex {
    cells: Vec<Cell>,
    jobs: Vec<(String, usize, usize, usize)>,
}

/// The jobs in one part file, from its footer.
pub fn read_index(path: &Path) -> Result<Vec<StoredRows>> {
    let file = File::open(path).map_err(io("opening", path))?;
    let mut reader = ParquetReader::new(file);
    let metadata = reader.get_metadata().map_err(damaged("reading the footer of", path))?;
    let index = metadata
        .key_value_metadata()
        .as_ref()
        .and_then(|kv| kv.iter().find(|e| e.key == INDEX_KEY))
        .and_then(|e| e.value.clone());
    let n_rows = metadata.num_rows;
    let part = Arc::new(path.to_path_buf());
    let Some(index) = index else { return legacy_index(path, part, n_rows) };
    let index: PartIndex = serde_json::from_str(&index).map_err(damaged("reading the job index of", path))?;
    if let Some((key, _, offset, rows)) = index.jobs.iter().find(|(_, _, offset, rows)| offset + rows > n_rows) {
        let why =
            format!("{}: job {key} (rows {offset}..{}) lies past the end of the file", path.display(), offset + rows);
        return Err(not_armadas(path, why));
    }
    index.locations(path)
}

/// Who produced each job of one part, from its footer (empty for a part written in
/// process, or by an armada older than provenance). Reads both layouts: each worker's
/// record once with (worker, attempt) per job, and the per-job records of parts written
/// before 2026-12-04.
pub fn read_provenance(path: &Path) -> Result<BTreeMap<String, Provenance>> {
    let file = File::open(path).map_err(io("opening", path))?;
    let metadata = ParquetReader::new(file).get_metadata().map_err(damaged("reading the footer of", path))?.clone();
    let entry = metadata
        .key_value_metadata()
        .as_ref()
        .and_then(|kv| kv.iter().find(|e| e.key == PROVENANCE_KEY))
        .and_then(|e| e.value.clone());
    let Some(json) = entry else { return Ok(BTreeMap::new()) };
    let value: serde_json::Value = serde_json::from_str(&json).map_err(damaged("reading the provenance of", path))?;
    if !value.get("workers").is_some_and(|w| w.is_array()) {
        return serde_json::from_value(value).map_err(damaged("reading the provenance of", path));
    }
    let part: PartProvenance = serde_json::from_value(value).map_err(damaged("reading the provenance of", path))?;
    part.jobs
        .into_iter()
        .map(|(key, (worker, attempt_id))| match part.workers.get(worker) {
            Some(record) => Ok((key, Provenance { attempt_id, ..record.clone() })),
            None => {
                let why = format!(
                    "{}: job {key}'s provenance names worker {worker} of {}",
                    path.display(),
                    part.workers.len()
                );
                Err(not_armadas(path, why))
            }
        })
        .collect()
}

/// [`PROVENANCE_KEY`]'s value as read: each worker's record once (its `attempt_id` left
/// out), and per job key the index of its worker's record and the attempt that committed it.
#[derive(Deserialize)]
struct PartProvenance {
    workers: Vec<Provenance>,
    jobs: BTreeMap<String, (usize, u64)>,
}

/// [`PROVENANCE_KEY`]'s value for `jobs` (None when none has provenance):
/// `{"workers":[record, ...],"jobs":{key:[worker,attempt_id], ...}}`, each worker's record
/// once per part (without `attempt_id`), the jobs in key order, the workers in the order of
/// their first job. A part of short jobs holds thousands of jobs from a few workers: a
/// record per job made the footer several times the size of the data.
pub(super) fn provenance_json(jobs: &[PartJob<'_>]) -> Option<String> {
    use std::fmt::Write;
    let mut records: Vec<(&str, &Arc<Provenance>, u64)> =
        jobs.iter().filter_map(|j| j.provenance.as_ref().map(|(p, attempt)| (j.key.as_str(), p, *attempt))).collect();
    if records.is_empty() {
        return None;
    }
    records.sort_unstable_by_key(|(key, ..)| *key);
    let mut workers: Vec<serde_json::Value> = Vec::new();
    let mut worker_of: HashMap<*const Provenance, usize> = HashMap::new();
    let mut entries = String::with_capacity(48 * records.len());
    for (i, (key, record, attempt)) in records.iter().enumerate() {
        let worker = *worker_of.entry(Arc::as_ptr(record)).or_insert_with(|| {
            let mut json = serde_json::to_value(&**record).expect("provenance serializes");
            json.as_object_mut().expect("a record is an object").remove("attempt_id");
            workers.push(json);
            workers.len() - 1
        });
        if i > 0 {
            entries.push(',');
        }
        if key.bytes().all(|b| b.is_ascii_alphanumeric()) {
            entries.extend(['"'].into_iter().chain(key.chars()).chain(['"']));
        } else {
            entries.push_str(&serde_json::to_string(key).expect("a key serializes"));
        }
        write!(entries, ":[{worker},{attempt}]").expect("writing to a string");
    }
    let workers = serde_json::to_string(&workers).expect("records serialize");
    Some(format!("{{\"workers\":{workers},\"jobs\":{{{entries}}}}}"))
}

impl PartIndex {
    /// The index of (key, cell, rows) laid out in this order, sorted by cell.
    pub(super) fn of<'c>(jobs: impl Iterator<Item = (String, &'c Cell, usize)>) -> PartIndex {
        let mut index = PartIndex { cells: Vec::new(), jobs: Vec::new() };
        let mut offset = 0;
        for (key, cell, rows) in jobs {
            // Sorted by cell: a job's cell is the last one seen or a new one.
            if index.cells.last() != Some(cell) {
                index.cells.push(cell.clone());
            }
            index.jobs.push((key, index.cells.len() - 1, offset, rows));
            offset += rows;
        }
        index
    }

    /// Where each job of the part at `path` is.
    pub(super) fn locations(&self, path: &Path) -> Result<Vec<StoredRows>> {
        let part = Arc::new(path.to_path_buf());
        let cells: Vec<Arc<Cell>> = self.cells.iter().cloned().map(|c| Arc::new(c.with_json_params())).collect();
        let mut jobs = Vec::with_capacity(self.jobs.len());
        for (key, cell, offset, rows) in &self.jobs {
            let Some(cell) = cells.get(*cell).cloned() else {
                return Err(not_armadas(path, format!("{}: bad cell index", path.display())));
            };
            jobs.push(StoredRows { key: key.clone(), cell, part: part.clone(), offset: *offset, rows: *rows });
        }
        Ok(jobs)
    }

    pub(super) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an index serializes")
    }
}
