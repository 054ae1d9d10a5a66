//! Files written by older armada: one job per file with no index, and parameters in
//! canonical text rather than JSON.

use super::*;

impl Cell {
    /// This cell with its parameters as JSON, whichever form its part wrote them in (parts
    /// written before armada stored JSON hold the canonical text `{a=1,b="x"}`): a cell
    /// reads the same from old parts and new, so their jobs summarize together.
    pub(super) fn with_json_params(mut self) -> Cell {
        self.benchmark_params = params_json(&self.benchmark_params);
        self.algorithm_params = params_json(&self.algorithm_params);
        self
    }
}

/// Stored parameter text as JSON (text that does not read as parameters is kept as it is).
fn params_json(text: &str) -> String {
    if text.starts_with("{\"") {
        return text.to_string();
    }
    text.parse::<armada_core::Params>().map_or_else(|_| text.to_string(), |p| p.to_json())
}

/// A file of one job without an index (older armada): its key is the file stem and its
/// cell is in its first row. Every row must be that job's: a part that lost its index
/// (rewritten by another tool) is refused, never read as one job.
pub(super) fn legacy_index(path: &Path, part: Arc<PathBuf>, n_rows: usize) -> Result<Vec<StoredRows>> {
    let key = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
    if !(key.len() == 32 && key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))) {
        let why = format!(
            "{}: its footer has no job index ({INDEX_KEY:?}), so armada cannot tell whose rows are whose \
             (a part rewritten by another tool loses it); put back the part armada wrote, or move this \
             file out of trajectories/ to summarize the other jobs",
            path.display()
        );
        return Err(not_armadas(path, why));
    }
    if n_rows == 0 {
        return Ok(Vec::new());
    }
    let file = File::open(path).map_err(io("opening", path))?;
    let columns = [JOB_KEY].into_iter().chain(CELL);
    let df = ParquetReader::new(file)
        .with_columns(Some(columns.map(str::to_owned).collect()))
        .finish()
        .map_err(damaged("reading", path))?;
    let keys = df.column(JOB_KEY).and_then(|c| c.str().cloned()).map_err(damaged("reading", path))?;
    if let Some(other) = keys.iter().find(|k| *k != Some(key.as_str())) {
        let why = format!(
            "{}: a file of one job without a job index, but it holds rows of job {} besides its own; \
             armada does not read it (move it out of trajectories/ to summarize the other jobs)",
            path.display(),
            other.unwrap_or("null")
        );
        return Err(not_armadas(path, why));
    }
    let cell = frame_cell(&df).map_err(damaged("reading", path))?;
    Ok(vec![StoredRows { key, cell: Arc::new(cell), part, offset: 0, rows: n_rows }])
}
