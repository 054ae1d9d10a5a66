//! Spools: the records of running attempts, held off the scheduler actor.
//!
//! Upload streams append to their attempt's spool directly, through a concurrent map, so
//! record batches never queue behind state changes in the scheduler's mailbox. A spool
//! keeps at most [`SPOOL_BUFFER_BYTES`] in memory and spills the rest to
//! `<data>/.spool/<attempt>.rec`, so the coordinator's memory is bounded by a constant
//! per running attempt, whatever the trajectory's length. The scheduler opens a spool when
//! it leases an attempt, takes it out of the map when the attempt commits (the part writer
//! then reads it back), and discards it when the attempt is dropped.
//!
//! The spill format is fixed-width little-endian rows: `step: u32`, `elapsed_ms: f64`,
//! then one `f64` per metric. Spools do not outlive the coordinator: attempts that were
//! running at a restart are void, and the directory is emptied at start-up.

use super::super::state::replies::CommandError;
use crate::results::ResultsError;
use armada_core::{MetricDef, MetricKind, RecordColumns, StepRecord};
use armada_proto::ids::{AttemptId, SessionId};
use dashmap::DashMap;
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Encoded records a spool keeps in memory before it appends them to its file.
pub const SPOOL_BUFFER_BYTES: usize = 64 * 1024;

/// The spools of every running attempt, by attempt id.
#[derive(Clone)]
pub struct Spools {
    map: Arc<DashMap<AttemptId, Arc<Mutex<Spool>>>>,
    dir: Arc<PathBuf>,
}

impl Spools {
    /// Spools under `dir`, which is emptied first (its files belonged to a previous life).
    pub fn open(dir: &Path) -> io::Result<Self> {
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs::create_dir_all(dir)?;
        Ok(Spools { map: Arc::new(DashMap::new()), dir: Arc::new(dir.to_path_buf()) })
    }

    /// Start an empty spool for `attempt`, leased to the worker session `owner`, whose
    /// records follow `schema`.
    pub fn create(&self, attempt: AttemptId, owner: SessionId, schema: RecordSchema) {
        let spool = Spool::new(self.dir.clone(), attempt, owner, schema);
        self.map.insert(attempt, Arc::new(Mutex::new(spool)));
    }

    /// Append records that arrived for `attempt` from the worker session `session`;
    /// returns how many the spool now holds. NOT_FOUND when the attempt is not running here
    /// (void, finished, never leased), PERMISSION_DENIED when another session holds it,
    /// INVALID_ARGUMENT (naming the step and column) when a record breaks the schema: the
    /// spool is then broken, and the caller voids the attempt.
    pub fn append(&self, attempt: AttemptId, session: &SessionId, records: &[StepRecord]) -> Result<u32, CommandError> {
        self.append_with(attempt, session, |spool| spool.append(records))
    }

    /// [`Spools::append`] for records that arrived as columns.
    pub fn append_columns(
        &self,
        attempt: AttemptId,
        session: &SessionId,
        columns: &RecordColumns,
    ) -> Result<u32, CommandError> {
        self.append_with(attempt, session, |spool| spool.append_columns(columns))
    }

    fn append_with(
        &self,
        attempt: AttemptId,
        session: &SessionId,
        append: impl FnOnce(&mut Spool) -> Result<(), String>,
    ) -> Result<u32, CommandError> {
        // Clone the handle out so that the map's shard lock is not held during the write.
        let spool = self.map.get(&attempt).map(|s| s.value().clone()).ok_or_else(|| void(attempt))?;
        let mut spool = spool.lock().unwrap_or_else(|e| e.into_inner());
        if spool.owner != *session {
            return Err(CommandError::permission_denied(format!(
                "attempt {attempt} is not held by this worker session"
            )));
        }
        append(&mut spool).map_err(|e| CommandError::invalid_argument(format!("attempt {attempt}: {e}")))?;
        Ok(spool.n_records)
    }

    /// Take `attempt`'s spool out of the map (to commit it); later uploads are NOT_FOUND.
    pub fn take(&self, attempt: AttemptId) -> Option<Spool> {
        let (_, spool) = self.map.remove(&attempt)?;
        // Every upload holds the mutex only while appending; once out of the map nobody
        // else can reach it, so waiting on the lock is brief.
        let spool = match Arc::try_unwrap(spool) {
            Ok(mutex) => mutex.into_inner().unwrap_or_else(|e| e.into_inner()),
            Err(shared) => {
                let mut guard = shared.lock().unwrap_or_else(|e| e.into_inner());
                let mut taken = Spool::new(Arc::default(), AttemptId(0), "".into(), RecordSchema::default());
                taken.broken = Some("the spool was taken".into());
                std::mem::replace(&mut *guard, taken)
            }
        };
        Some(spool)
    }

    /// Forget `attempt`'s records (dropped, failed, superseded).
    pub fn discard(&self, attempt: AttemptId) {
        if let Some(spool) = self.take(attempt) {
            spool.remove_file();
        }
    }
}

fn void(attempt: AttemptId) -> CommandError {
    CommandError::not_found(format!("attempt {attempt} is not known (void or finished)"))
}

/// What an attempt's records must be: one value per metric, Int metrics whole, and steps
/// 0..=horizon in order (or 0..=last for some last <= horizon, when the family's episodes
/// may end early).
#[derive(Clone, Debug, Default)]
pub struct RecordSchema {
    pub metrics: &'static [MetricDef],
    pub horizon: u32,
    /// The family declares `ends_early`: a trajectory may stop before the horizon.
    pub ends_early: bool,
}

impl RecordSchema {
    /// Why the record of `step` and `values`, arriving as record number `index`, breaks
    /// the schema.
    fn check(&self, index: u32, step: u32, values: impl ExactSizeIterator<Item = f64>) -> Result<(), String> {
        if step > self.horizon {
            return Err(format!("records: step {step} is past the horizon {}", self.horizon));
        }
        if step != index {
            return Err(format!(
                "records: step {step} arrived where step {index} was due (steps 0..={} in order, each once)",
                self.horizon
            ));
        }
        if values.len() != self.metrics.len() {
            return Err(format!(
                "records: step {step} has {} values; the family has {} metrics",
                values.len(),
                self.metrics.len()
            ));
        }
        for (m, v) in self.metrics.iter().zip(values) {
            // Whole numbers an i64 holds exactly; NaN is a missing value (null).
            let whole = v.is_nan() || (v.fract() == 0.0 && v.abs() <= (1u64 << 53) as f64);
            if m.kind == MetricKind::Int && !whole {
                return Err(format!(
                    "records: step {step}, column `{}`: {v:?} is not a whole number (an Int metric)",
                    m.name
                ));
            }
        }
        Ok(())
    }
}

/// One attempt's records so far: a file of spilled rows plus an in-memory tail.
pub struct Spool {
    /// Its file is `<dir>/<id>.rec`, named only when rows spill (most attempts never do).
    dir: Arc<PathBuf>,
    id: AttemptId,
    /// The worker session that leased the attempt.
    owner: SessionId,
    schema: RecordSchema,
    n_metrics: usize,
    /// Encoded rows not yet spilled.
    buffer: Vec<u8>,
    n_records: u32,
    /// Rows in the file.
    n_spilled: u32,
    last_step: Option<u32>,
    /// The metrics of the last record (for the `job_finished` event).
    last: Vec<f64>,
    /// Why an upload was refused; the attempt cannot commit.
    broken: Option<String>,
}

impl Spool {
    /// An empty spool spilling to `<dir>/<id>.rec` (also the in-process runner's, one per
    /// running job).
    pub(crate) fn new(dir: Arc<PathBuf>, id: AttemptId, owner: SessionId, schema: RecordSchema) -> Spool {
        Spool {
            dir,
            id,
            owner,
            n_metrics: schema.metrics.len(),
            schema,
            buffer: Vec::new(),
            n_records: 0,
            n_spilled: 0,
            last_step: None,
            last: Vec::new(),
            broken: None,
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.rec", self.id))
    }

    fn row_bytes(&self) -> usize {
        4 + 8 + 8 * self.n_metrics
    }

    /// Append records; the first refusal breaks the spool for good (the attempt cannot
    /// commit), and later calls repeat it.
    pub(crate) fn append(&mut self, records: &[StepRecord]) -> Result<(), String> {
        self.guarded(|spool| {
            for r in records {
                spool.encode(r.step, r.elapsed_ms, r.values.iter().copied())?;
            }
            if let Some(r) = records.last() {
                spool.keep_last(r.values.iter().copied());
            }
            Ok(())
        })
    }

    /// [`Spool::append`] for records as columns.
    pub(crate) fn append_columns(&mut self, columns: &RecordColumns) -> Result<(), String> {
        self.guarded(|spool| {
            if let Some(why) = columns.shape_error() {
                return Err(format!("records: {why}"));
            }
            for i in 0..columns.len() {
                spool.encode(columns.steps[i], columns.elapsed_ms[i], columns.values(i))?;
            }
            if let Some(i) = columns.len().checked_sub(1) {
                spool.keep_last(columns.values(i));
            }
            Ok(())
        })
    }

    /// Run `append` on a spool not broken, then spill a full buffer.
    fn guarded(&mut self, append: impl FnOnce(&mut Self) -> Result<(), String>) -> Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        append(self)
            .and_then(|()| {
                if self.buffer.len() < SPOOL_BUFFER_BYTES {
                    return Ok(());
                }
                self.spill().map_err(|e| format!("spilling records to {}: {e}", self.path().display()))
            })
            .inspect_err(|why| self.broken = Some(why.clone()))
    }

    /// One record, checked, onto the buffer.
    fn encode(
        &mut self,
        step: u32,
        elapsed_ms: f64,
        values: impl ExactSizeIterator<Item = f64> + Clone,
    ) -> Result<(), String> {
        self.schema.check(self.n_records, step, values.clone())?;
        self.last_step = Some(step);
        self.buffer.extend_from_slice(&step.to_le_bytes());
        self.buffer.extend_from_slice(&elapsed_ms.to_le_bytes());
        for v in values {
            self.buffer.extend_from_slice(&v.to_le_bytes());
        }
        self.n_records += 1;
        Ok(())
    }

    /// Remember the last record's metrics, once per batch (not per record).
    fn keep_last(&mut self, values: impl Iterator<Item = f64>) {
        self.last.clear();
        self.last.extend(values);
    }

    /// Append the buffer to the file. The file is opened per spill, so that thousands of
    /// running attempts do not hold thousands of descriptors.
    fn spill(&mut self) -> io::Result<()> {
        let mut file = File::options().create(true).append(true).open(self.path())?;
        file.write_all(&self.buffer)?;
        self.n_spilled += (self.buffer.len() / self.row_bytes()) as u32;
        self.buffer.clear();
        Ok(())
    }

    pub fn n_records(&self) -> u32 {
        self.n_records
    }

    /// The metrics of the last record received (empty if none).
    pub fn last(&self) -> &[f64] {
        &self.last
    }

    /// The step of the last record received.
    pub fn last_step(&self) -> Option<u32> {
        self.last_step
    }

    /// Why the records cannot be committed as the whole trajectory: steps missing at
    /// the end (for a family whose episodes end early, only a trajectory without step 0).
    pub fn incomplete(&self) -> Option<String> {
        if self.schema.ends_early {
            return (self.n_records == 0).then(|| {
                "records: the attempt holds 0 records; a trajectory has at least step 0 (its family's episodes \
                 may end early, not before step 0)"
                    .to_string()
            });
        }
        let wanted = u64::from(self.schema.horizon) + 1;
        (u64::from(self.n_records) != wanted).then(|| {
            format!(
                "records: the attempt holds {} records; a trajectory has steps 0..={} ({wanted} records)",
                self.n_records, self.schema.horizon
            )
        })
    }

    /// Why the records held cannot be committed as the whole trajectory of a worker that
    /// says it sent `n_records`: uploads refused, another count held, or steps missing.
    pub fn refusal(&self, n_records: u32) -> Option<String> {
        match self.broken() {
            Some(why) => Some(why.to_owned()),
            None if self.n_records != n_records => {
                Some(format!("n_records: the worker sent {n_records}, the coordinator holds {}", self.n_records))
            }
            None => self.incomplete(),
        }
    }

    /// Why the attempt's uploads were refused, if they were.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// The records in order: the file's, then the buffer's. The file is removed when the
    /// reader is dropped (with its spool).
    pub fn into_records(self) -> SpoolReader {
        let file = if self.n_spilled > 0 { Some(File::open(self.path()).map(BufReader::new)) } else { None };
        SpoolReader { row: vec![0; self.row_bytes()], spool: self, file, from_file: 0, from_buffer: 0 }
    }

    fn remove_file(&self) {
        if self.n_spilled > 0 {
            let _ = fs::remove_file(self.path());
        }
    }
}

/// Reads a taken spool back, record by record.
pub struct SpoolReader {
    spool: Spool,
    file: Option<io::Result<BufReader<File>>>,
    row: Vec<u8>,
    from_file: u32,
    /// Bytes of the buffer consumed.
    from_buffer: usize,
}

impl SpoolReader {
    fn decode(row: &[u8], n_metrics: usize) -> StepRecord {
        let f64_at = |i: usize| f64::from_le_bytes(row[i..i + 8].try_into().expect("8 bytes"));
        StepRecord {
            step: u32::from_le_bytes(row[..4].try_into().expect("4 bytes")),
            elapsed_ms: f64_at(4),
            values: (0..n_metrics).map(|m| f64_at(12 + 8 * m)).collect(),
        }
    }
}

impl Iterator for SpoolReader {
    type Item = Result<StepRecord, ResultsError>;

    fn next(&mut self) -> Option<Self::Item> {
        let n_metrics = self.spool.n_metrics;
        if self.from_file < self.spool.n_spilled {
            let file = match self.file.as_mut()? {
                Ok(file) => file,
                Err(e) => {
                    let cause = io::Error::new(e.kind(), e.to_string());
                    return Some(Err(ResultsError::Io { action: "opening", path: self.spool.path(), cause }));
                }
            };
            if let Err(cause) = file.read_exact(&mut self.row) {
                return Some(Err(ResultsError::Io { action: "reading", path: self.spool.path(), cause }));
            }
            self.from_file += 1;
            return Some(Ok(Self::decode(&self.row, n_metrics)));
        }
        let width = self.row.len();
        let rest = &self.spool.buffer[self.from_buffer..];
        if rest.len() < width {
            return None;
        }
        self.from_buffer += width;
        Some(Ok(Self::decode(&rest[..width], n_metrics)))
    }
}

impl Drop for Spool {
    /// A spool's file goes with it: read back, discarded, or its job failed.
    fn drop(&mut self) {
        self.remove_file();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::state::replies::ErrorKind;

    const METRICS: [MetricDef; 3] = [
        MetricDef { name: "a", kind: MetricKind::Float, doc: "" },
        MetricDef { name: "b", kind: MetricKind::Float, doc: "" },
        MetricDef { name: "c", kind: MetricKind::Int, doc: "" },
    ];

    fn schema(horizon: u32) -> RecordSchema {
        RecordSchema { metrics: &METRICS, horizon, ends_early: false }
    }

    fn record(step: u32) -> StepRecord {
        StepRecord { step, elapsed_ms: step as f64 * 0.5, values: vec![step as f64, -(step as f64), f64::NAN] }
    }

    fn open(dir: &Path) -> Spools {
        Spools::open(dir).unwrap()
    }

    /// A long trajectory round-trips through file and buffer bit for bit, while memory
    /// stays under the buffer bound.
    #[test]
    fn records_spill_to_disk_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(&dir.path().join(".spool"));
        let n = 10_000u32;
        spools.create(AttemptId(7), "s".into(), schema(n - 1));
        let mut max_buffer = 0;
        for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
            let records: Vec<_> = chunk.iter().map(|&s| record(s)).collect();
            assert_eq!(spools.append(AttemptId(7), &"s".into(), &records).unwrap(), chunk[chunk.len() - 1] + 1);
            let spool = spools.map.get(&AttemptId(7)).unwrap().value().clone();
            max_buffer = max_buffer.max(spool.lock().unwrap().buffer.capacity());
        }
        // 36 bytes a row: 360,000 bytes uploaded, at most one buffer (plus a batch) held.
        assert!(max_buffer <= 2 * SPOOL_BUFFER_BYTES, "buffer grew to {max_buffer} bytes");
        let spool = spools.take(AttemptId(7)).unwrap();
        assert_eq!(spool.incomplete(), None);
        assert!(spool.n_spilled > 0 && !spool.buffer.is_empty(), "both file and buffer in use");
        let path = spool.path();
        assert_eq!(fs::metadata(&path).unwrap().len(), u64::from(spool.n_spilled) * 36);
        let back: Vec<StepRecord> = spool.into_records().map(Result::unwrap).collect();
        assert_eq!(back.len(), n as usize);
        for (i, r) in back.iter().enumerate() {
            let want = record(i as u32);
            assert_eq!(
                (r.step, r.elapsed_ms, r.values[0], r.values[1]),
                (want.step, want.elapsed_ms, want.values[0], want.values[1])
            );
            assert!(r.values[2].is_nan());
        }
        assert!(!path.exists(), "the spill file is removed once read");
        assert!(spools.map.is_empty());
        assert_eq!(spools.append(AttemptId(7), &"s".into(), &[record(0)]).unwrap_err().kind(), ErrorKind::NotFound);
    }

    /// Every way a trajectory can be wrong that was once committed: each is refused as it
    /// arrives, naming the step (and the column), and breaks the spool for good.
    #[test]
    fn records_are_checked_against_the_schema_and_the_horizon() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(dir.path());
        let steps = |s: &[u32]| s.iter().map(|&s| record(s)).collect::<Vec<_>>();
        let mut fractional = record(0);
        fractional.values[2] = 2.5;
        let mut huge = record(0);
        huge.values[2] = 1e300;
        let short = StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0] };
        let cases: Vec<(Vec<StepRecord>, &str)> = vec![
            (steps(&[0, 0]), "step 0 arrived where step 1 was due (steps 0..=5 in order, each once)"),
            (steps(&[0, 4294967295]), "step 4294967295 is past the horizon 5"),
            (steps(&[2, 1, 0]), "step 2 arrived where step 0 was due"),
            (steps(&[1, 2, 3]), "step 1 arrived where step 0 was due"),
            (steps(&[0, 1, 2, 3, 4, 5, 6]), "step 6 is past the horizon 5"),
            (vec![short], "step 0 has 1 values; the family has 3 metrics"),
            (vec![fractional], "step 0, column `c`: 2.5 is not a whole number (an Int metric)"),
            (vec![huge], "step 0, column `c`: 1e300 is not a whole number"),
        ];
        for (attempt, (records, wanted)) in cases.into_iter().enumerate() {
            let attempt = AttemptId(attempt as u64);
            spools.create(attempt, "s".into(), schema(5));
            let err = spools.append(attempt, &"s".into(), &records).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            assert!(err.message().contains(wanted), "{wanted}: {}", err.message());
            // Broken for good: a later, valid batch is refused too, and the commit sees why.
            assert!(spools.append(attempt, &"s".into(), &steps(&[0])).is_err());
            assert!(spools.take(attempt).unwrap().broken().unwrap().contains(wanted));
        }
        // Whole numbers and NaN are fine in an Int metric.
        spools.create(AttemptId(50), "s".into(), schema(5));
        let mut whole = record(0);
        whole.values[2] = -3.0;
        spools.append(AttemptId(50), &"s".into(), &[whole]).unwrap();
    }

    /// Records that arrive as columns are checked as rows are, with the same messages, and
    /// columns that are not one table break the spool naming the column.
    #[test]
    fn columns_are_checked_like_rows() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(dir.path());
        let columns =
            |steps: &[u32]| RecordColumns::from_rows(&steps.iter().map(|&s| record(s)).collect::<Vec<_>>()).unwrap();
        let mut fractional = columns(&[0, 1]);
        fractional.metrics[2][1] = 0.5;
        let mut narrow = columns(&[0]);
        narrow.metrics.pop();
        let mut ragged = columns(&[0, 1]);
        ragged.metrics[1].pop();
        let mut late = columns(&[0, 1]);
        late.elapsed_ms.push(9.0);
        let cases = [
            (columns(&[0, 0]), "records: step 0 arrived where step 1 was due"),
            (columns(&[0, 1, 2, 3, 4, 5, 6]), "records: step 6 is past the horizon 5"),
            (fractional, "records: step 1, column `c`: 0.5 is not a whole number (an Int metric)"),
            (narrow, "records: step 0 has 2 values; the family has 3 metrics"),
            (ragged, "records: columns.metrics[1]: 1 values for 2 steps"),
            (late, "records: columns.elapsed_ms: 3 values for 2 steps"),
        ];
        for (attempt, (columns, wanted)) in cases.into_iter().enumerate() {
            let attempt = AttemptId(attempt as u64);
            spools.create(attempt, "s".into(), schema(5));
            let err = spools.append_columns(attempt, &"s".into(), &columns).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            assert!(err.message().contains(wanted), "{wanted}: {}", err.message());
            assert!(spools.take(attempt).unwrap().broken().unwrap().contains(wanted));
        }
    }

    /// A trajectory sent partly as rows and partly as columns reads back as one, bit for bit.
    #[test]
    fn rows_and_columns_make_one_trajectory() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(dir.path());
        let n = 3_000u32;
        spools.create(AttemptId(1), "s".into(), schema(n - 1));
        let all: Vec<StepRecord> = (0..n).map(record).collect();
        for (i, chunk) in all.chunks(100).enumerate() {
            let held = if i % 2 == 0 {
                spools.append_columns(AttemptId(1), &"s".into(), &RecordColumns::from_rows(chunk).unwrap())
            } else {
                spools.append(AttemptId(1), &"s".into(), chunk)
            };
            assert_eq!(held.unwrap(), chunk[chunk.len() - 1].step + 1);
        }
        let spool = spools.take(AttemptId(1)).unwrap();
        assert_eq!(spool.last_step(), Some(n - 1));
        assert_eq!(spool.last()[..2], [(n - 1) as f64, -((n - 1) as f64)]);
        assert!(spool.n_spilled > 0, "the file is in use");
        let back: Vec<StepRecord> = spool.into_records().map(Result::unwrap).collect();
        let bits =
            |r: &StepRecord| (r.step, r.elapsed_ms.to_bits(), r.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        assert_eq!(back.iter().map(bits).collect::<Vec<_>>(), all.iter().map(bits).collect::<Vec<_>>());
    }

    /// A commit needs the whole trajectory, steps 0..=horizon: none, or all but the last,
    /// is incomplete.
    #[test]
    fn a_trajectory_without_its_last_steps_is_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(dir.path());
        spools.create(AttemptId(1), "s".into(), schema(3));
        assert!(spools
            .take(AttemptId(1))
            .unwrap()
            .incomplete()
            .unwrap()
            .contains("holds 0 records; a trajectory has steps 0..=3 (4 records)"));
        spools.create(AttemptId(2), "s".into(), schema(3));
        spools.append(AttemptId(2), &"s".into(), &(0..3).map(record).collect::<Vec<_>>()).unwrap();
        assert!(spools.take(AttemptId(2)).unwrap().incomplete().unwrap().contains("holds 3 records"));
        spools.create(AttemptId(3), "s".into(), schema(3));
        spools.append(AttemptId(3), &"s".into(), &(0..4).map(record).collect::<Vec<_>>()).unwrap();
        assert_eq!(spools.take(AttemptId(3)).unwrap().incomplete(), None);
    }

    /// A family whose episodes end early commits any prefix 0..=last of its steps, but
    /// not an empty one, and never a step past the horizon.
    #[test]
    fn an_episode_that_ends_early_commits_from_step_0_on() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(dir.path());
        let early = RecordSchema { ends_early: true, ..schema(3) };
        spools.create(AttemptId(1), "s".into(), early.clone());
        assert!(spools
            .take(AttemptId(1))
            .unwrap()
            .incomplete()
            .unwrap()
            .contains("holds 0 records; a trajectory has at least step 0"));
        for last in 0..=3 {
            spools.create(AttemptId(2 + last), "s".into(), early.clone());
            spools
                .append(AttemptId(2 + last), &"s".into(), &(0..=last as u32).map(record).collect::<Vec<_>>())
                .unwrap();
            assert_eq!(spools.take(AttemptId(2 + last)).unwrap().incomplete(), None, "steps 0..={last}");
        }
        spools.create(AttemptId(9), "s".into(), early);
        let err = spools.append(AttemptId(9), &"s".into(), &(0..5).map(record).collect::<Vec<_>>()).unwrap_err();
        assert!(err.message().contains("step 4 is past the horizon 3"), "{}", err.message());
    }

    /// Only the session that leased an attempt may upload into it.
    #[test]
    fn another_sessions_upload_is_permission_denied() {
        let dir = tempfile::tempdir().unwrap();
        let spools = open(dir.path());
        spools.create(AttemptId(1), "mine".into(), schema(3));
        let err = spools.append(AttemptId(1), &"theirs".into(), &[record(0)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        // The refusal did not break the owner's spool.
        assert_eq!(spools.append(AttemptId(1), &"mine".into(), &[record(0)]).unwrap(), 1);
    }

    #[test]
    fn discard_removes_the_spill_file_and_open_empties_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let spool_dir = dir.path().join(".spool");
        let spools = open(&spool_dir);
        spools.create(AttemptId(3), "s".into(), schema(4999));
        let records: Vec<_> = (0..5000).map(record).collect();
        spools.append(AttemptId(3), &"s".into(), &records).unwrap();
        assert!(spool_dir.join("3.rec").exists());
        spools.discard(AttemptId(3));
        assert!(!spool_dir.join("3.rec").exists());
        fs::write(spool_dir.join("99.rec"), b"left by a killed coordinator").unwrap();
        let _again = open(&spool_dir);
        assert_eq!(fs::read_dir(&spool_dir).unwrap().count(), 0);
    }
}
