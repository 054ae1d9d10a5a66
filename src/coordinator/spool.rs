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

use armada_core::StepRecord;
use dashmap::DashMap;
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tonic::Status;

/// Encoded records a spool keeps in memory before it appends them to its file.
pub const SPOOL_BUFFER_BYTES: usize = 64 * 1024;

/// The spools of every running attempt, by attempt id.
#[derive(Clone)]
pub struct Spools {
    map: Arc<DashMap<u64, Arc<Mutex<Spool>>>>,
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

    /// Start an empty spool for `attempt`, whose records have `n_metrics` values each.
    pub fn create(&self, attempt: u64, n_metrics: usize) {
        let spool = Spool::new(self.dir.join(format!("{attempt}.rec")), n_metrics);
        self.map.insert(attempt, Arc::new(Mutex::new(spool)));
    }

    /// Append records that arrived for `attempt`; returns how many the spool now holds.
    /// NOT_FOUND when the attempt is not running here (void, finished, never leased).
    pub fn append(&self, attempt: u64, records: &[StepRecord]) -> Result<u32, Status> {
        // Clone the handle out so that the map's shard lock is not held during the write.
        let spool = self.map.get(&attempt).map(|s| s.value().clone()).ok_or_else(|| void(attempt))?;
        let mut spool = spool.lock().unwrap_or_else(|e| e.into_inner());
        spool.append(records).map_err(|e| Status::invalid_argument(format!("attempt {attempt}: {e}")))?;
        Ok(spool.n_records)
    }

    /// Take `attempt`'s spool out of the map (to commit it); later uploads are NOT_FOUND.
    pub fn take(&self, attempt: u64) -> Option<Spool> {
        let (_, spool) = self.map.remove(&attempt)?;
        // Every upload holds the mutex only while appending; once out of the map nobody
        // else can reach it, so waiting on the lock is brief.
        let spool = match Arc::try_unwrap(spool) {
            Ok(mutex) => mutex.into_inner().unwrap_or_else(|e| e.into_inner()),
            Err(shared) => {
                let mut guard = shared.lock().unwrap_or_else(|e| e.into_inner());
                let taken = Spool { broken: Some("the spool was taken".into()), ..Spool::new(PathBuf::new(), 0) };
                std::mem::replace(&mut *guard, taken)
            }
        };
        Some(spool)
    }

    /// Forget `attempt`'s records (dropped, failed, superseded).
    pub fn discard(&self, attempt: u64) {
        if let Some(spool) = self.take(attempt) {
            spool.remove_file();
        }
    }
}

fn void(attempt: u64) -> Status {
    Status::not_found(format!("attempt {attempt} is not known (void or finished)"))
}

/// One attempt's records so far: a file of spilled rows plus an in-memory tail.
pub struct Spool {
    path: PathBuf,
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
    fn new(path: PathBuf, n_metrics: usize) -> Spool {
        Spool {
            path,
            n_metrics,
            buffer: Vec::new(),
            n_records: 0,
            n_spilled: 0,
            last_step: None,
            last: Vec::new(),
            broken: None,
        }
    }

    fn row_bytes(&self) -> usize {
        4 + 8 + 8 * self.n_metrics
    }

    /// Append records; the first refusal breaks the spool for good (the attempt cannot
    /// commit), and later calls repeat it.
    fn append(&mut self, records: &[StepRecord]) -> Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        self.encode(records).inspect_err(|why| self.broken = Some(why.clone()))
    }

    fn encode(&mut self, records: &[StepRecord]) -> Result<(), String> {
        for r in records {
            if r.values.len() != self.n_metrics {
                return Err(format!(
                    "records: step {} has {} values; the family has {} metrics",
                    r.step,
                    r.values.len(),
                    self.n_metrics
                ));
            }
            if self.last_step.is_some_and(|last| r.step <= last) {
                return Err(format!(
                    "records: step {} follows step {}; steps must increase",
                    r.step,
                    self.last_step.unwrap_or_default()
                ));
            }
            self.last_step = Some(r.step);
            self.buffer.extend_from_slice(&r.step.to_le_bytes());
            self.buffer.extend_from_slice(&r.elapsed_ms.to_le_bytes());
            for v in &r.values {
                self.buffer.extend_from_slice(&v.to_le_bytes());
            }
            self.n_records += 1;
        }
        if let Some(r) = records.last() {
            self.last.clone_from(&r.values);
        }
        if self.buffer.len() >= SPOOL_BUFFER_BYTES {
            self.spill().map_err(|e| format!("spilling records to {}: {e}", self.path.display()))?;
        }
        Ok(())
    }

    /// Append the buffer to the file. The file is opened per spill, so that thousands of
    /// running attempts do not hold thousands of descriptors.
    fn spill(&mut self) -> io::Result<()> {
        let mut file = File::options().create(true).append(true).open(&self.path)?;
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

    /// Why the attempt's uploads were refused, if they were.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// The records in order: the file's, then the buffer's. The file is removed when the
    /// reader is dropped.
    pub fn into_records(self) -> SpoolReader {
        let file = if self.n_spilled > 0 { Some(File::open(&self.path).map(BufReader::new)) } else { None };
        SpoolReader { row: vec![0; self.row_bytes()], spool: self, file, from_file: 0, from_buffer: 0 }
    }

    fn remove_file(&self) {
        if self.n_spilled > 0 {
            let _ = fs::remove_file(&self.path);
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
    type Item = anyhow::Result<StepRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let n_metrics = self.spool.n_metrics;
        if self.from_file < self.spool.n_spilled {
            let file = match self.file.as_mut()? {
                Ok(file) => file,
                Err(e) => return Some(Err(anyhow::anyhow!("opening {}: {e}", self.spool.path.display()))),
            };
            if let Err(e) = file.read_exact(&mut self.row) {
                return Some(Err(anyhow::anyhow!("reading {}: {e}", self.spool.path.display())));
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

impl Drop for SpoolReader {
    fn drop(&mut self) {
        self.spool.remove_file();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(step: u32) -> StepRecord {
        StepRecord { step, elapsed_ms: step as f64 * 0.5, values: vec![step as f64, -(step as f64), f64::NAN] }
    }

    /// A long trajectory round-trips through file and buffer bit for bit, while memory
    /// stays under the buffer bound.
    #[test]
    fn records_spill_to_disk_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let spools = Spools::open(&dir.path().join(".spool")).unwrap();
        spools.create(7, 3);
        let n = 10_000u32;
        let mut max_buffer = 0;
        for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
            let records: Vec<_> = chunk.iter().map(|&s| record(s)).collect();
            assert_eq!(spools.append(7, &records).unwrap(), chunk[chunk.len() - 1] + 1);
            let spool = spools.map.get(&7).unwrap().value().clone();
            max_buffer = max_buffer.max(spool.lock().unwrap().buffer.capacity());
        }
        // 36 bytes a row: 360,000 bytes uploaded, at most one buffer (plus a batch) held.
        assert!(max_buffer <= 2 * SPOOL_BUFFER_BYTES, "buffer grew to {max_buffer} bytes");
        let spool = spools.take(7).unwrap();
        assert!(spool.n_spilled > 0 && !spool.buffer.is_empty(), "both file and buffer in use");
        let path = spool.path.clone();
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
        assert_eq!(spools.append(7, &[record(0)]).unwrap_err().code(), tonic::Code::NotFound);
    }

    #[test]
    fn a_wrong_record_breaks_the_spool_with_the_step_named() {
        let dir = tempfile::tempdir().unwrap();
        let spools = Spools::open(dir.path()).unwrap();
        spools.create(1, 3);
        let short = StepRecord { step: 0, elapsed_ms: 0.0, values: vec![1.0] };
        let err = spools.append(1, &[short]).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("step 0 has 1 values; the family has 3 metrics"), "{}", err.message());
        // Broken for good: a later, valid batch is refused too, and the commit will see why.
        assert!(spools.append(1, &[record(0)]).is_err());
        assert!(spools.take(1).unwrap().broken().unwrap().contains("3 metrics"));

        spools.create(2, 3);
        spools.append(2, &[record(0), record(1)]).unwrap();
        let err = spools.append(2, &[record(1)]).unwrap_err();
        assert!(err.message().contains("step 1 follows step 1"), "{}", err.message());
    }

    #[test]
    fn discard_removes_the_spill_file_and_open_empties_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let spool_dir = dir.path().join(".spool");
        let spools = Spools::open(&spool_dir).unwrap();
        spools.create(3, 3);
        let records: Vec<_> = (0..5000).map(record).collect();
        spools.append(3, &records).unwrap();
        assert!(spool_dir.join("3.rec").exists());
        spools.discard(3);
        assert!(!spool_dir.join("3.rec").exists());
        fs::write(spool_dir.join("99.rec"), b"left by a killed coordinator").unwrap();
        let _again = Spools::open(&spool_dir).unwrap();
        assert_eq!(fs::read_dir(&spool_dir).unwrap().count(), 0);
    }
}
