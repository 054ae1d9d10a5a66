//! The coordinator's durable state in SQLite: sweeps, jobs, attempts and their leases,
//! and the families declared to it.
//! The store is locked exclusively while a coordinator has it open.
//!
//! Every state change the scheduler makes is written here before it is acted on or
//! answered, in one transaction per request, so a coordinator killed at any moment
//! restarts from exactly what it had promised. Trajectory parts on disk stay the commit
//! record of a job's result: a job found `done` is in the part its row names, and a job found
//! in a part the store does not know (a crash between the rename and the update) is marked
//! done at startup.

use super::job_chunks;
use crate::coordinator::state::stored::{JobState, StoredJob};
use crate::coordinator::state::trouble::{Place, WriteTroubles};
use armada_core::JobKey;
use armada_proto::ids::{AttemptId, SweepId};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the store could not do. Each message names the store's file where it matters and
/// says what to do where there is something to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("creating {}: {cause}", .path.display())]
    Create { path: PathBuf, cause: std::io::Error },
    #[error("opening {}: {cause}", .path.display())]
    Open { path: PathBuf, cause: rusqlite::Error },
    /// Not a database, or a malformed one: the trajectories beside it are intact.
    #[error(
        "{} is damaged ({cause}): it is not a store armada can read. The sweeps' trajectories beside \
         it (<sweep>/trajectories/) are intact: `armada check --repair {}` moves the store aside, \
         restores its newest intact backup and rebuilds what that lacks from the trajectories \
         (or resubmit the sweeps to a new store: jobs whose trajectories are on disk are found \
         done, not run again)",
        .path.display(),
        .path.parent().map_or(std::path::Path::new("."), |p| p).display()
    )]
    Damaged { path: PathBuf, cause: rusqlite::Error },
    #[error(
        "{} is in use by another coordinator ({cause}); run one coordinator per directory: \
         use another --data (or --out), or submit to the running one",
        .path.display()
    )]
    InUse { path: PathBuf, cause: rusqlite::Error },
    #[error("preparing the store {}: {cause}", .path.display())]
    Prepare { path: PathBuf, cause: rusqlite::Error },
    #[error("keeping the declaration of family {name} v{version}: {cause}")]
    Declare { name: String, version: u32, cause: rusqlite::Error },
    #[error("unknown job state {0:?} in the store")]
    UnknownState(String),
    #[error("{0}")]
    DamagedChunk(String),
    /// Tests only: a write after the test's crash point.
    #[error("the coordinator died before this write (a test's crash point)")]
    Crashed,
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// A damaged page met while reading or writing the store at `path` (its header was
    /// sound, so it opened) as [`StoreError::Damaged`], which names the file and the way out.
    pub fn naming_damage(self, path: &Path) -> StoreError {
        match self {
            StoreError::Sqlite(cause) if is_damage(&cause) => StoreError::Damaged { path: path.to_path_buf(), cause },
            e => e,
        }
    }
}

/// Column `i` of a row as text, without copying it.
fn text<'r>(r: &'r rusqlite::Row, i: usize) -> rusqlite::Result<&'r str> {
    let value = r.get_ref(i)?;
    value.as_str().map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, value.data_type(), Box::new(e)))
}

/// One stored sweep.
#[derive(Clone, Debug)]
pub struct StoredSweep {
    pub id: String,
    pub family: String,
    pub cancelled: bool,
    /// Its summary files hold every job it has settled (see `set_summarized`).
    pub summarized: bool,
    /// A resolving sweep's file, whose rounds add seeds.
    pub source: Option<String>,
}

/// How a submission is committed ([`Store::commit_submission`]).
pub struct Commit<'a> {
    /// The sweep's families.
    pub family: &'a str,
    /// Keys of the sweep's jobs that leave it.
    pub removed: &'a [String],
    /// A resolving sweep's file (none: the sweep does not resolve).
    pub source: Option<&'a str>,
    /// A round of a resolving sweep: it only adds seeds, and its failed jobs stay failed.
    pub round: bool,
}

impl Commit<'_> {
    /// A plain submission of a sweep of `family` that drops nothing.
    pub fn of(family: &str) -> Commit<'_> {
        Commit { family, removed: &[], source: None, round: false }
    }
}

/// Bytes a job takes in a `parts` row: its key, then its count of attempts.
const PART_ENTRY: usize = 20;

/// The jobs of one sweep that its `parts` rows record done.
#[derive(Debug, Default)]
pub struct DoneInParts {
    pub parts: Vec<String>,
    /// Key -> (index into `parts`, count of attempts).
    pub jobs: HashMap<[u8; 16], (u32, u32)>,
}

impl DoneInParts {
    /// The part that holds the job of hex key `key`, if any, and its count of attempts.
    pub fn of(&self, key: &str) -> Option<(&str, u32)> {
        let key = JobKey::parse_bytes(key)?;
        self.jobs.get(&key).map(|&(part, attempts)| (self.parts[part as usize].as_str(), attempts))
    }
}

pub struct Store {
    conn: Connection,
    /// Where the coordinator keeps the troubles its writes meet (none: `armada check`).
    troubles: Option<Arc<WriteTroubles>>,
    /// Tests: the coordinator "dies" after this many more writes (every later one fails, as
    /// if the process had stopped there).
    #[cfg(test)]
    writes_left: Option<usize>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sweeps (
    id          TEXT PRIMARY KEY,
    family      TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    cancelled   INTEGER NOT NULL DEFAULT 0,
    summarized  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS jobs (
    sweep_id  TEXT NOT NULL REFERENCES sweeps(id),
    key       TEXT NOT NULL,
    ord       INTEGER NOT NULL,
    spec      BLOB NOT NULL,
    state     TEXT NOT NULL,
    attempts  INTEGER NOT NULL DEFAULT 0,
    error     TEXT,
    part      TEXT,
    PRIMARY KEY (sweep_id, key)
);
CREATE TABLE IF NOT EXISTS declarations (
    name         TEXT NOT NULL,
    version      INTEGER NOT NULL,
    digest       TEXT NOT NULL,
    declaration  BLOB NOT NULL,
    PRIMARY KEY (name, version, digest)
);
-- A submission's jobs a chunk at a time (`n` of them, see `job_chunks`): a chunk becomes
-- rows of `jobs` when one of its jobs is changed alone (see `materialize`); a cancel or a
-- resubmission changes the chunks in place (see `rewrite_chunks`).
CREATE TABLE IF NOT EXISTS job_chunks (
    sweep_id    TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    jobs        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS job_chunks_sweep ON job_chunks (sweep_id);
-- The attempts open when the coordinator last noted them (see `note_open_attempts`), a row
-- per sweep, 24 bytes an attempt: its id (u64, little-endian) and its job's key (16 bytes).
CREATE TABLE IF NOT EXISTS open_attempts (
    sweep_id  TEXT NOT NULL,
    attempts  BLOB NOT NULL
);
-- The parts written, a row each, with the jobs whose trajectories each holds, 20 bytes a job:
-- its key (16 bytes) and its count of attempts (u32, little-endian). Such a job is done
-- whatever its row in `jobs` says (see `jobs_and_abandoned`): a commit writes one row per
-- part, not one per job. Older armada set each job's `state` and `part` instead.
CREATE TABLE IF NOT EXISTS parts (
    sweep_id  TEXT NOT NULL,
    part      TEXT NOT NULL,
    jobs      BLOB NOT NULL,
    PRIMARY KEY (sweep_id, part)
);
-- `attempt_ids`: the attempt ids reserved so far (see `reserve_attempt_ids`).
CREATE TABLE IF NOT EXISTS counters (
    name   TEXT PRIMARY KEY,
    value  INTEGER NOT NULL
);
-- A row per attempt, written by older armada only (attempts are now noted a batch at a time
-- in `open_attempts`, their ids reserved in blocks); read for their largest id.
CREATE TABLE IF NOT EXISTS attempts (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    sweep_id          TEXT NOT NULL,
    key               TEXT NOT NULL,
    worker            TEXT NOT NULL,
    started_ms        INTEGER NOT NULL,
    lease_expires_ms  INTEGER NOT NULL,
    state             TEXT NOT NULL
);
";

/// Add `column` to `table` of a store made by an older armada, unless it has it.
fn add_column(conn: &Connection, table: &str, column: &str, declaration: &str) -> rusqlite::Result<()> {
    let has: bool =
        conn.query_row("SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2", params![table, column], |r| {
            r.get(0)
        })?;
    if !has {
        conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {declaration}"))?;
    }
    Ok(())
}

/// A parts row's jobs: each one's key and count of attempts.
fn part_entries(blob: &[u8]) -> impl Iterator<Item = ([u8; 16], u32)> + '_ {
    blob.chunks_exact(PART_ENTRY).map(|entry| {
        let key: [u8; 16] = entry[..16].try_into().expect("16 bytes");
        (key, u32::from_le_bytes(entry[16..].try_into().expect("4 bytes")))
    })
}

/// The jobs the `parts` rows record done, by sweep (of `sweep` only, if given).
fn read_done_in_parts(conn: &Connection, sweep: Option<&str>) -> rusqlite::Result<HashMap<String, DoneInParts>> {
    let mut stmt = conn.prepare_cached("SELECT sweep_id, part, jobs FROM parts WHERE ?1 IS NULL OR sweep_id = ?1")?;
    let mut rows = stmt.query(params![sweep])?;
    let mut done: HashMap<String, DoneInParts> = HashMap::new();
    while let Some(r) = rows.next()? {
        let of_sweep = done.entry(r.get(0)?).or_default();
        let index = of_sweep.parts.len() as u32;
        of_sweep.parts.push(r.get(1)?);
        for (key, attempts) in part_entries(r.get_ref(2)?.as_blob()?) {
            of_sweep.jobs.insert(key, (index, attempts));
        }
    }
    Ok(done)
}

/// Turn the chunks of `sweep` that hold one of `keys` into rows of `jobs`, each job as it
/// was submitted, in the caller's transaction: done before a statement that changes those
/// jobs one by one, so that it finds their rows. Only those chunks (4,096 jobs each, where
/// the sweep may have millions), and no search at all for keys that have rows already.
fn materialize<'k>(tx: &rusqlite::Transaction<'_>, sweep: &str, keys: impl IntoIterator<Item = &'k str>) -> Result<()> {
    let mut has_row = tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM jobs WHERE sweep_id = ?1 AND key = ?2)")?;
    let mut wanted = std::collections::HashSet::new();
    for key in keys {
        if !has_row.query_row(params![sweep, key], |r| r.get::<_, bool>(0))? {
            wanted.insert(key);
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let mut chunks = tx.prepare_cached("SELECT rowid, generation, jobs FROM job_chunks WHERE sweep_id = ?1")?;
    let mut rows = chunks.query(params![sweep])?;
    let id = SweepId::from(sweep.to_string());
    let mut made = Vec::new();
    while let Some(r) = rows.next()? {
        let blob = r.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
        if job_chunks::holds_any(blob, &wanted) {
            let jobs = job_chunks::decode(&id, blob).map_err(StoreError::DamagedChunk)?;
            made.push((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, jobs));
        }
    }
    drop(rows);
    for (rowid, generation, jobs) in made {
        insert_rows(tx, sweep, generation, &jobs)?;
        tx.execute("DELETE FROM job_chunks WHERE rowid = ?1", params![rowid])?;
    }
    Ok(())
}

/// Change the jobs in `sweep`'s chunks where they are: `change` answers whether it changed
/// a chunk's jobs (a chunk left with none goes). What a statement over all of a sweep's
/// rows does to its chunks, without making them rows.
fn rewrite_chunks(
    tx: &rusqlite::Transaction<'_>,
    sweep: &str,
    mut change: impl FnMut(&mut Vec<StoredJob>) -> bool,
) -> Result<()> {
    let chunks: Vec<(i64, Vec<u8>)> = tx
        .prepare_cached("SELECT rowid, jobs FROM job_chunks WHERE sweep_id = ?1")?
        .query_map(params![sweep], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let id = SweepId::from(sweep.to_string());
    for (rowid, blob) in chunks {
        let mut jobs = job_chunks::decode(&id, &blob).map_err(StoreError::DamagedChunk)?;
        if !change(&mut jobs) {
            continue;
        }
        if jobs.is_empty() {
            tx.execute("DELETE FROM job_chunks WHERE rowid = ?1", params![rowid])?;
        } else {
            tx.execute(
                "UPDATE job_chunks SET n = ?2, jobs = ?3 WHERE rowid = ?1",
                params![rowid, jobs.len() as i64, job_chunks::encode(&jobs)],
            )?;
        }
    }
    Ok(())
}

/// Jobs as rows of `jobs`, each as submitted (no attempt yet).
fn insert_rows(conn: &Connection, id: &str, generation: i64, jobs: &[StoredJob]) -> Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO jobs (sweep_id, key, ord, spec, state, attempts, generation)
         VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)",
    )?;
    for j in jobs {
        insert.execute(params![id, j.key, j.ord, j.spec, j.state.as_str(), generation])?;
    }
    Ok(())
}

/// The jobs in the committed chunks of `sweep` (its generation or older).
fn chunk_jobs(conn: &Connection, sweep: &str) -> Result<Vec<StoredJob>> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.jobs FROM job_chunks c JOIN sweeps s ON s.id = c.sweep_id
         WHERE c.sweep_id = ?1 AND c.generation <= s.generation ORDER BY c.rowid",
    )?;
    let mut rows = stmt.query(params![sweep])?;
    let (id, mut jobs) = (SweepId::from(sweep.to_string()), Vec::new());
    while let Some(r) = rows.next()? {
        let blob = r.get_ref(0)?.as_blob().map_err(rusqlite::Error::from)?;
        jobs.extend(job_chunks::decode(&id, blob).map_err(StoreError::DamagedChunk)?);
    }
    Ok(jobs)
}

/// SQLite found the file damaged (not a database, or a malformed one), as opposed to busy.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase))
}

impl Store {
    /// Open (or create) `DIR/armada.sqlite`.
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|cause| StoreError::Create { path: dir.to_path_buf(), cause })?;
        let path = crate::data_dir::DataDir(dir).store();
        let conn = Connection::open(&path).map_err(|cause| StoreError::Open { path: path.clone(), cause })?;
        let prepare = || -> rusqlite::Result<()> {
            // One coordinator per directory: take an exclusive lock first and hold it for the
            // life of the connection, so a second coordinator on the same DIR fails here, clearly.
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
            conn.execute_batch("BEGIN EXCLUSIVE; COMMIT;")
        };
        match prepare() {
            Err(cause) if is_damage(&cause) => return Err(StoreError::Damaged { path, cause }),
            Err(cause) => return Err(StoreError::InUse { path, cause }),
            Ok(()) => {}
        }
        let migrate = || -> rusqlite::Result<()> {
            // WAL with full sync: a committed transaction survives a crash of the process or
            // the machine.
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            // One transaction: a new store is made with one sync, not one per statement.
            let migration = conn.unchecked_transaction()?;
            conn.execute_batch(SCHEMA)?;
            // Stores made before trajectory parts have no `part` column, and none made before
            // live summaries a `summarized` flag (their summaries are rebuilt once).
            add_column(&conn, "jobs", "part", "TEXT")?;
            conn.execute_batch("CREATE INDEX IF NOT EXISTS jobs_part ON jobs (sweep_id, part)")?;
            add_column(&conn, "sweeps", "summarized", "INTEGER NOT NULL DEFAULT 0")?;
            // The last attempt a job's `attempts` count accounts for (see `charge_open_attempts`).
            add_column(&conn, "jobs", "last_attempt", "INTEGER NOT NULL DEFAULT 0")?;
            // Submissions are stored in chunks under a generation (see `begin_submission`);
            // in older stores every row is of the first, committed one.
            add_column(&conn, "sweeps", "generation", "INTEGER NOT NULL DEFAULT 0")?;
            add_column(&conn, "jobs", "generation", "INTEGER NOT NULL DEFAULT 0")?;
            // The label of the token that declared it (per-token quotas); older ones: none.
            add_column(&conn, "declarations", "token", "TEXT NOT NULL DEFAULT ''")?;
            // A resolving sweep's file (its `[resolve]` table and the cells its rounds add
            // seeds to); older stores have none.
            add_column(&conn, "sweeps", "source", "TEXT")?;
            // Stores made before a version could have several revisions kept one declaration
            // per name and version in `families`: moved, in their order (once: a store
            // without that table is not written to here).
            let older: bool = conn.query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'families'",
                [],
                |r| r.get(0),
            )?;
            if older {
                conn.execute_batch(
                    "INSERT INTO declarations (name, version, digest, declaration)
                         SELECT name, version, digest, declaration FROM families ORDER BY rowid;
                     DROP TABLE families;",
                )?;
            }
            migration.commit()
        };
        match migrate() {
            Err(cause) if is_damage(&cause) => Err(StoreError::Damaged { path, cause }),
            Err(cause) => Err(StoreError::Prepare { path, cause }),
            Ok(()) => Ok(Store {
                conn,
                troubles: None,
                #[cfg(test)]
                writes_left: None,
            }),
        }
    }

    pub fn sweeps(&self) -> Result<Vec<StoredSweep>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, family, cancelled, summarized, source FROM sweeps WHERE generation >= 0 ORDER BY created_ms, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(StoredSweep {
                id: r.get(0)?,
                family: r.get(1)?,
                cancelled: r.get::<_, i64>(2)? != 0,
                summarized: r.get::<_, i64>(3)? != 0,
                source: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn jobs(&self) -> Result<Vec<StoredJob>> {
        Ok(self.jobs_and_abandoned()?.0)
    }

    /// The stored jobs in run order (sweep by sweep, in the order they were created), and
    /// how many rows were left out as a submission's not finished (or of no sweep), which
    /// [`Self::abandon_submissions`] removes.
    pub fn jobs_and_abandoned(&self) -> Result<(Vec<StoredJob>, usize)> {
        // Read in table order and sorted here: an ORDER BY over every job spills SQLite's
        // sorter to temporary files for a million of them, and reading by an index of the
        // run order jumps about the table.
        let mut sweeps = self.conn.prepare_cached("SELECT id, generation FROM sweeps ORDER BY created_ms, id")?;
        let sweeps: HashMap<String, (usize, i64, SweepId)> = sweeps
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
            .enumerate()
            .map(|(rank, row)| row.map(|(id, generation)| (id.clone(), (rank, generation, SweepId::from(id)))))
            .collect::<Result<_, _>>()?;
        let in_parts = self.done_in_parts(None)?;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT sweep_id, key, ord, spec, state, attempts, error, generation FROM jobs")?;
        let mut rows = stmt.query([])?;
        let (mut jobs, mut abandoned) = (Vec::new(), 0);
        while let Some(r) = rows.next()? {
            let generation: i64 = r.get(7)?;
            let sweep = sweeps.get(text(r, 0)?).filter(|(_, of_sweep, _)| generation <= *of_sweep);
            let Some((rank, _, sweep_id)) = sweep else {
                abandoned += 1;
                continue;
            };
            let (key, ord, spec, mut attempts, error): (String, _, _, _, _) =
                (r.get(1)?, r.get(2)?, r.get(3)?, r.get(5)?, r.get(6)?);
            let state_text = text(r, 4)?;
            let mut state =
                JobState::parse(state_text).ok_or_else(|| StoreError::UnknownState(state_text.to_string()))?;
            if let Some((_, n)) = in_parts.get(&**sweep_id).and_then(|done| done.of(&key)) {
                (state, attempts) = (JobState::Done, n);
            }
            jobs.push((*rank, StoredJob { sweep_id: sweep_id.clone(), key, ord, spec, state, attempts, error }));
        }
        drop(rows);
        let mut stmt =
            self.conn.prepare_cached("SELECT sweep_id, generation, n, jobs FROM job_chunks ORDER BY rowid")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let generation: i64 = r.get(1)?;
            let sweep = sweeps.get(text(r, 0)?).filter(|(_, of_sweep, _)| generation <= *of_sweep);
            let Some((rank, _, sweep_id)) = sweep else {
                abandoned += r.get::<_, i64>(2)? as usize;
                continue;
            };
            let blob = r.get_ref(3)?.as_blob().map_err(rusqlite::Error::from)?;
            let done = in_parts.get(&**sweep_id);
            for mut job in job_chunks::decode(sweep_id, blob).map_err(StoreError::DamagedChunk)? {
                if let Some((_, n)) = done.and_then(|done| done.of(&job.key)) {
                    (job.state, job.attempts) = (JobState::Done, n);
                }
                jobs.push((*rank, job));
            }
        }
        // A sweep submitted once is stored in order already.
        if !jobs.is_sorted_by_key(|(rank, job)| (*rank, job.ord)) {
            jobs.sort_unstable_by_key(|(rank, job)| (*rank, job.ord));
        }
        Ok((jobs.into_iter().map(|(_, job)| job).collect(), abandoned))
    }

    /// Whether a new sweep's submission was left unfinished (its row is hidden until then).
    pub fn has_hidden_sweeps(&self) -> Result<bool> {
        Ok(self.conn.query_row("SELECT EXISTS (SELECT 1 FROM sweeps WHERE generation < 0)", [], |r| r.get(0))?)
    }

    /// The declared families, in the order they were declared: each one's digest, the
    /// label of the token that declared it, and its `armada.v1.FamilyInfo` encoding.
    pub fn families(&self) -> Result<Vec<(String, String, Vec<u8>)>> {
        let mut stmt =
            self.conn.prepare_cached("SELECT digest, token, declaration FROM declarations ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Forget the declarations of `name` with these digests.
    pub fn remove_families(&mut self, name: &str, digests: &[String]) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            for digest in digests {
                tx.execute("DELETE FROM declarations WHERE name = ?1 AND digest = ?2", params![name, digest])?;
            }
            Ok(tx.commit()?)
        })
    }

    /// Every write: refused once a test's crash point is reached (see `crash_after`), and
    /// its failure or success reported to the coordinator's [`WriteTroubles`], if it listens.
    fn write<T>(&mut self, body: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let written = self.past_crash_point().and_then(|()| body(&mut self.conn));
        if let Some(troubles) = &self.troubles {
            match &written {
                Ok(_) => troubles.succeeded(&Place::Store),
                Err(e) => troubles.failed(Place::Store, &e.to_string(), std::time::SystemTime::now()),
            }
        }
        written
    }

    /// Tests: one more write allowed, unless the crash point is reached.
    fn past_crash_point(&mut self) -> Result<()> {
        #[cfg(test)]
        if let Some(left) = self.writes_left.as_mut() {
            if *left == 0 {
                return Err(StoreError::Crashed);
            }
            *left -= 1;
        }
        Ok(())
    }

    /// Report every write's failure or success to `troubles` from now on.
    pub fn report_writes_to(&mut self, troubles: Arc<WriteTroubles>) {
        self.troubles = Some(troubles);
    }

    /// Tests: allow `n` more writes, then refuse every one, as a coordinator killed there
    /// (`None`: allow every write again).
    #[cfg(test)]
    pub fn crash_after(&mut self, n: impl Into<Option<usize>>) {
        self.writes_left = n.into();
    }

    /// Keep a declared family under its name, version and digest, as `token`'s, in place of
    /// the one kept there (whose docs it replaces, and whose token it keeps).
    pub fn keep_family(
        &mut self,
        name: &str,
        version: u32,
        digest: &str,
        token: &str,
        declaration: &[u8],
    ) -> Result<()> {
        self.write(|conn| {
            conn.execute(
                "INSERT INTO declarations (name, version, digest, token, declaration) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (name, version, digest) DO UPDATE SET declaration = excluded.declaration",
                params![name, version, digest, token, declaration],
            )
            .map_err(|cause| StoreError::Declare { name: name.to_string(), version, cause })?;
            Ok(())
        })
    }

    /// The largest attempt id ever reserved (ids are never reused, across restarts too;
    /// stores of older armada numbered them in their `attempts` rows).
    pub fn max_attempt_id(&self) -> Result<u64> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT MAX(COALESCE((SELECT MAX(id) FROM attempts), 0),
                            COALESCE((SELECT value FROM counters WHERE name = 'attempt_ids'), 0))",
                [],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(id.unwrap_or(0) as u64)
    }

    /// Start storing a submission to sweep `id`: its jobs are added in chunks
    /// ([`Store::add_jobs`]), each its own transaction so that no request waits long on the
    /// store, and none of them counts until [`Store::commit_submission`]. Returns the
    /// submission's generation: a new sweep's row stays hidden (generation -1) until then.
    pub fn begin_submission(&mut self, id: &str, family: &str, now_ms: i64) -> Result<i64> {
        self.write(|conn| {
            let current: Option<i64> =
                conn.query_row("SELECT generation FROM sweeps WHERE id = ?1", params![id], |r| r.get(0)).optional()?;
            if let Some(generation) = current {
                return Ok(generation.max(0) + 1);
            }
            conn.execute(
                "INSERT INTO sweeps (id, family, created_ms, generation) VALUES (?1, ?2, ?3, -1)",
                params![id, family, now_ms],
            )?;
            Ok(0)
        })
    }

    /// Add jobs of the submission `generation` of sweep `id`, as submitted, in one row of
    /// `job_chunks` (a row per job cost a few microseconds each, on the way of every
    /// submission).
    pub fn add_jobs(&mut self, id: &str, generation: i64, jobs: &[StoredJob]) -> Result<()> {
        let blob = job_chunks::encode(jobs);
        self.write(|conn| {
            // Not synced: these rows count only once `commit_submission` commits, and syncing
            // the write-ahead log for that commit makes every frame before it durable too.
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            let added = conn
                .prepare_cached("INSERT INTO job_chunks (sweep_id, generation, n, jobs) VALUES (?1, ?2, ?3, ?4)")
                .and_then(|mut insert| insert.execute(params![id, generation, jobs.len() as i64, blob]));
            conn.pragma_update(None, "synchronous", "FULL")?;
            added?;
            Ok(())
        })
    }

    /// Make submission `generation` the sweep, in one transaction: its added jobs count,
    /// the jobs of `removed` are dropped, and (but in a round) the sweep's failed and
    /// cancelled jobs are queued again (with a fresh attempt count).
    pub fn commit_submission(&mut self, id: &str, generation: i64, commit: &Commit<'_>) -> Result<()> {
        let Commit { family, removed, source, round } = *commit;
        self.write(|conn| {
            let tx = conn.transaction()?;
            // A resubmission may run other extensions of the family (its families change).
            tx.execute(
                "UPDATE sweeps SET generation = ?2, family = ?3, cancelled = 0, summarized = 0, source = ?4
                 WHERE id = ?1",
                params![id, generation, family, source],
            )?;
            if generation == 0 || round {
                // A new sweep: nothing to drop or queue again (and a million rows not to scan).
                tx.commit()?;
                return Ok(());
            }
            // The same to the jobs still in chunks: the removed go, the cancelled and failed
            // are queued.
            let gone: std::collections::HashSet<&str> = removed.iter().map(String::as_str).collect();
            rewrite_chunks(&tx, id, |jobs| {
                let n = jobs.len();
                jobs.retain(|j| !gone.contains(j.key.as_str()));
                let mut changed = jobs.len() < n;
                for job in jobs.iter_mut().filter(|j| matches!(j.state, JobState::Cancelled | JobState::Failed)) {
                    (job.state, changed) = (JobState::Queued, true);
                }
                changed
            })?;
            {
                let mut delete = tx.prepare_cached("DELETE FROM jobs WHERE sweep_id = ?1 AND key = ?2")?;
                for key in removed {
                    delete.execute(params![id, key])?;
                }
            }
            tx.execute(
                "UPDATE jobs SET state = 'queued', attempts = 0, error = NULL
                 WHERE sweep_id = ?1 AND state IN ('cancelled', 'failed')",
                params![id],
            )?;
            tx.execute(
                "UPDATE attempts SET state = 'void' WHERE sweep_id = ?1 AND state = 'running' AND key IN
                 (SELECT key FROM jobs WHERE sweep_id = ?1 AND state = 'queued')",
                params![id],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Forget what a submission that will not be committed added: its jobs, and the sweep
    /// if the submission made it. Also run at start-up for every submission a previous
    /// coordinator left unfinished; returns how many jobs were dropped.
    pub fn abandon_submissions(&mut self) -> Result<usize> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            let mut n = tx.execute(
                "DELETE FROM jobs WHERE generation >
                 COALESCE((SELECT s.generation FROM sweeps s WHERE s.id = jobs.sweep_id), -1)",
                [],
            )?;
            const UNCOMMITTED: &str =
                "generation > COALESCE((SELECT s.generation FROM sweeps s WHERE s.id = job_chunks.sweep_id), -1)";
            let in_chunks: i64 =
                tx.query_row(&format!("SELECT COALESCE(SUM(n), 0) FROM job_chunks WHERE {UNCOMMITTED}"), [], |r| {
                    r.get(0)
                })?;
            tx.execute(&format!("DELETE FROM job_chunks WHERE {UNCOMMITTED}"), [])?;
            n += in_chunks as usize;
            tx.execute("DELETE FROM sweeps WHERE generation < 0", [])?;
            tx.commit()?;
            Ok(n)
        })
    }

    /// Reserve attempt ids up to `last` (inclusive): the scheduler hands them out from
    /// memory and writes here once per block, not once per lease. Nothing else about a
    /// lease needs to outlive the process: a restart voids every running attempt anyway.
    pub fn reserve_attempt_ids(&mut self, last: u64) -> Result<()> {
        self.write(|conn| {
            conn.execute(
                "INSERT INTO counters (name, value) VALUES ('attempt_ids', ?1)
                 ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value)",
                params![last as i64],
            )?;
            Ok(())
        })
    }

    /// An attempt ended without a result (`failed`, `expired`, `void`, `dropped`,
    /// `released`): its job's state, error (if given) and count of charged attempts, as the
    /// job table has them after it.
    pub fn end_attempt(
        &mut self,
        attempt: AttemptId,
        job: (&str, &str),
        state: JobState,
        attempts: u32,
        error: Option<&str>,
    ) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            materialize(&tx, job.0, [job.1])?;
            tx.execute(
                "UPDATE jobs SET state = ?1, error = COALESCE(?2, error), attempts = ?3, last_attempt = MAX(last_attempt, ?4)
                 WHERE sweep_id = ?5 AND key = ?6",
                params![state.as_str(), error, attempts, attempt.0 as i64, job.0, job.1],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Note the attempts open now (replacing those noted before), `(sweep, entries)` with
    /// 24 bytes an attempt (see the `open_attempts` table): a restart charges to its job
    /// each one that did not end (`charge_open_attempts`). Noted once a second, not per
    /// lease: an attempt leased after the last note and cut short by a crash is not charged.
    pub fn note_open_attempts(&mut self, open: &[(&str, Vec<u8>)]) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            tx.execute("DELETE FROM open_attempts", [])?;
            {
                let mut insert = tx.prepare_cached("INSERT INTO open_attempts (sweep_id, attempts) VALUES (?1, ?2)")?;
                for (sweep, entries) in open {
                    insert.execute(params![sweep, entries])?;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// At startup: the attempts the previous life noted open and that never ended (the
    /// job's count does not account for them) count as attempts of their jobs, still
    /// queued or running, as a crash cut them short; the notes are cleared. Answers how
    /// many were charged.
    pub fn charge_open_attempts(&mut self) -> Result<usize> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            let mut charged = 0;
            {
                let mut rows = tx.prepare("SELECT sweep_id, attempts FROM open_attempts")?;
                let noted: Vec<(String, Vec<u8>)> =
                    rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
                let mut charge = tx.prepare_cached(
                    "UPDATE jobs SET attempts = attempts + 1, last_attempt = ?1
                     WHERE sweep_id = ?2 AND key = ?3 AND last_attempt < ?1 AND state IN ('queued', 'running')",
                )?;
                let mut in_parts: HashMap<String, DoneInParts> = HashMap::new();
                for (sweep, entries) in &noted {
                    if !in_parts.contains_key(sweep) {
                        let done = read_done_in_parts(&tx, Some(sweep))?.remove(sweep).unwrap_or_default();
                        in_parts.insert(sweep.clone(), done);
                    }
                    let done = &in_parts[sweep];
                    // The attempts of jobs not done, with their keys' text: those jobs' rows
                    // are made first, then charged.
                    let open: Vec<(u64, String)> = entries
                        .chunks_exact(24)
                        .filter(|entry| !done.jobs.contains_key(&entry[8..]))
                        .map(|entry| {
                            let id = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
                            (id, JobKey::of_bytes(entry[8..].try_into().expect("16 bytes")).0)
                        })
                        .collect();
                    materialize(&tx, sweep, open.iter().map(|(_, key)| key.as_str()))?;
                    for (id, key) in &open {
                        charged += charge.execute(params![*id as i64, sweep, key])?;
                    }
                }
            }
            tx.execute("DELETE FROM open_attempts", [])?;
            tx.commit()?;
            Ok(charged)
        })
    }

    /// Set one job's state and, if given, its error (no attempt involved: what startup finds).
    pub fn set_job_state(&mut self, sweep: &str, key: &str, state: JobState, error: Option<&str>) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            materialize(&tx, sweep, [key])?;
            tx.execute(
                "UPDATE jobs SET state = ?1, error = COALESCE(?2, error) WHERE sweep_id = ?3 AND key = ?4",
                params![state.as_str(), error, sweep, key],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    /// Jobs of `sweep` whose trajectories are in the part file `part`, each with its count
    /// of attempts and the attempt that committed it (None: as stored): each `done`, in one
    /// transaction.
    pub fn commit_jobs(&mut self, sweep: &str, part: &str, jobs: &[(Option<(u32, u64)>, &str)]) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            materialize(&tx, sweep, jobs.iter().map(|(_, key)| *key))?;
            {
                let mut job = tx.prepare_cached(
                    "UPDATE jobs SET state = 'done', part = ?1, attempts = COALESCE(?2, attempts),
                            last_attempt = MAX(last_attempt, COALESCE(?3, 0))
                     WHERE sweep_id = ?4 AND key = ?5",
                )?;
                for (attempt, key) in jobs {
                    let (attempts, id) = attempt.map_or((None, None), |(n, id)| (Some(n), Some(id as i64)));
                    job.execute(params![part, attempts, id, sweep, key])?;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// The part file `part` of `sweep` was written with `jobs` (each key with its count of
    /// attempts): they are done, in one row (replacing a row of the same name).
    pub fn commit_part(&mut self, sweep: &str, part: &str, jobs: &[([u8; 16], u32)]) -> Result<()> {
        let mut entries = Vec::with_capacity(PART_ENTRY * jobs.len());
        for (key, attempts) in jobs {
            entries.extend_from_slice(key);
            entries.extend_from_slice(&attempts.to_le_bytes());
        }
        self.write(|conn| {
            conn.prepare_cached("INSERT OR REPLACE INTO parts (sweep_id, part, jobs) VALUES (?1, ?2, ?3)")?
                .execute(params![sweep, part, entries])?;
            Ok(())
        })
    }

    /// The jobs the `parts` rows record done, by sweep (of `sweep` only, if given).
    pub fn done_in_parts(&self, sweep: Option<&str>) -> Result<HashMap<String, DoneInParts>> {
        Ok(read_done_in_parts(&self.conn, sweep)?)
    }

    /// Remove a sweep with its jobs and attempts.
    pub fn delete_sweep(&mut self, sweep: &str) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            tx.execute("DELETE FROM attempts WHERE sweep_id = ?1", params![sweep])?;
            tx.execute("DELETE FROM parts WHERE sweep_id = ?1", params![sweep])?;
            tx.execute("DELETE FROM jobs WHERE sweep_id = ?1", params![sweep])?;
            tx.execute("DELETE FROM job_chunks WHERE sweep_id = ?1", params![sweep])?;
            tx.execute("DELETE FROM sweeps WHERE id = ?1", params![sweep])?;
            tx.commit()?;
            Ok(())
        })
    }

    /// The summary files of `sweep` were written from every job it settled; cleared by a
    /// resubmission. A sweep finished but not summarized has its summaries rebuilt at start.
    pub fn set_summarized(&mut self, sweep: &str) -> Result<()> {
        self.write(|conn| {
            conn.execute("UPDATE sweeps SET summarized = 1 WHERE id = ?1", params![sweep])?;
            Ok(())
        })
    }

    /// Copy the store, as it is now, to a new database at `path` (SQLite's online backup,
    /// in one step: the scheduler waits for it, about a second per 100 MB of store).
    pub fn backup_to(&self, path: &Path) -> Result<()> {
        let mut copy = Connection::open(path).map_err(|cause| StoreError::Open { path: path.to_path_buf(), cause })?;
        let backup = rusqlite::backup::Backup::new(&self.conn, &mut copy)?;
        // The source is this connection's own (locked exclusively): never busy for long.
        while backup.step(-1)? != rusqlite::backup::StepResult::Done {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(backup);
        // The copy stands alone, as one file: no write-ahead log beside it.
        copy.pragma_update(None, "journal_mode", "DELETE")?;
        Ok(())
    }

    /// The part file that holds job `key` of `sweep`, once it is done.
    pub fn part_of(&self, sweep: &str, key: &str) -> Result<Option<String>> {
        // The sweep's parts rows are scanned for this one key, not read into a map of all
        // their jobs: a dashboard's job view of a sweep of millions stays cheap. A later row
        // wins, as in every other reading.
        if let Some(wanted) = JobKey::parse_bytes(key) {
            let mut stmt = self.conn.prepare_cached("SELECT part, jobs FROM parts WHERE sweep_id = ?1")?;
            let mut rows = stmt.query(params![sweep])?;
            let mut found = None;
            while let Some(r) = rows.next()? {
                let blob = r.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
                if part_entries(blob).any(|(key, _)| key == wanted) {
                    found = Some(r.get(0)?);
                }
            }
            if found.is_some() {
                return Ok(found);
            }
        }
        let mut stmt = self.conn.prepare_cached("SELECT part FROM jobs WHERE sweep_id = ?1 AND key = ?2")?;
        let mut rows = stmt.query(params![sweep, key])?;
        Ok(match rows.next()? {
            Some(row) => row.get(0)?,
            None => None,
        })
    }

    /// The part files the store knows for `sweep`.
    pub fn parts(&self, sweep: &str) -> Result<std::collections::BTreeSet<String>> {
        let mut stmt =
            self.conn.prepare_cached("SELECT DISTINCT part FROM jobs WHERE sweep_id = ?1 AND part IS NOT NULL")?;
        let rows = stmt.query_map(params![sweep], |r| r.get(0))?;
        let mut parts: std::collections::BTreeSet<String> = rows.collect::<Result<_, _>>()?;
        let mut stmt = self.conn.prepare_cached("SELECT part FROM parts WHERE sweep_id = ?1")?;
        for part in stmt.query_map(params![sweep], |r| r.get(0))? {
            parts.insert(part?);
        }
        Ok(parts)
    }

    /// SQLite's own check of the file: `["ok"]`, or what it found wrong. `full` runs
    /// `integrity_check` (every index against its table too), else the quicker `quick_check`.
    pub fn integrity(&self, full: bool) -> Result<Vec<String>> {
        let pragma = if full { "PRAGMA integrity_check" } else { "PRAGMA quick_check" };
        let mut stmt = self.conn.prepare(pragma)?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The done jobs of `sweep`: each key with the part the store says holds it.
    pub fn done_jobs(&self, sweep: &str) -> Result<Vec<(String, Option<String>)>> {
        let in_parts = self.done_in_parts(Some(sweep))?.remove(sweep).unwrap_or_default();
        let mut stmt =
            self.conn.prepare_cached("SELECT key, part, state FROM jobs WHERE sweep_id = ?1 ORDER BY key")?;
        let mut rows = stmt.query(params![sweep])?;
        let mut done = Vec::new();
        while let Some(r) = rows.next()? {
            let key: String = r.get(0)?;
            if let Some((part, _)) = in_parts.of(&key) {
                done.push((key, Some(part.to_string())));
            } else if text(r, 2)? == "done" {
                done.push((key, r.get(1)?));
            }
        }
        let chunked = chunk_jobs(&self.conn, sweep)?;
        if !chunked.is_empty() {
            for job in chunked {
                if let Some((part, _)) = in_parts.of(&job.key) {
                    done.push((job.key, Some(part.to_string())));
                } else if job.state == JobState::Done {
                    done.push((job.key, None));
                }
            }
            done.sort_unstable();
        }
        Ok(done)
    }

    /// How many jobs of `sweep` are queued or running.
    pub fn unsettled(&self, sweep: &str) -> Result<usize> {
        let in_parts = self.done_in_parts(Some(sweep))?.remove(sweep).unwrap_or_default();
        let mut stmt =
            self.conn.prepare_cached("SELECT key FROM jobs WHERE sweep_id = ?1 AND state IN ('queued', 'running')")?;
        let mut rows = stmt.query(params![sweep])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            n += usize::from(in_parts.of(text(r, 0)?).is_none());
        }
        for job in chunk_jobs(&self.conn, sweep)? {
            n += usize::from(job.state == JobState::Queued && in_parts.of(&job.key).is_none());
        }
        Ok(n)
    }

    /// Done jobs of `sweep` whose rows are lost (`armada check --repair`): queued again,
    /// in no part, and the sweep's summaries no longer complete. Answers how many.
    pub fn requeue_lost(&mut self, sweep: &str, keys: &[String]) -> Result<usize> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            materialize(&tx, sweep, keys.iter().map(String::as_str))?;
            let mut n = 0;
            {
                let mut job = tx.prepare_cached(
                    "UPDATE jobs SET state = 'queued', part = NULL WHERE sweep_id = ?1 AND key = ?2 AND state = 'done'",
                )?;
                for key in keys {
                    n += job.execute(params![sweep, key])?;
                }
                // Jobs recorded by their part's row: the row keeps the others.
                let lost: std::collections::HashSet<[u8; 16]> =
                    keys.iter().filter_map(|k| JobKey::parse_bytes(k)).collect();
                let rows: Vec<(String, Vec<u8>)> = tx
                    .prepare_cached("SELECT part, jobs FROM parts WHERE sweep_id = ?1")?
                    .query_map(params![sweep], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()?;
                for (part, entries) in rows {
                    let kept: Vec<u8> = entries
                        .chunks_exact(PART_ENTRY)
                        .filter(|e| !lost.contains(&e[..16]))
                        .flatten()
                        .copied()
                        .collect();
                    if kept.len() < entries.len() {
                        n += (entries.len() - kept.len()) / PART_ENTRY;
                        tx.execute(
                            "UPDATE parts SET jobs = ?3 WHERE sweep_id = ?1 AND part = ?2",
                            params![sweep, part, kept],
                        )?;
                    }
                }
                tx.execute("UPDATE sweeps SET summarized = 0 WHERE id = ?1", params![sweep])?;
            }
            tx.commit()?;
            Ok(n)
        })
    }

    /// Cancel a sweep: its queued and running jobs become cancelled, its running attempts void.
    pub fn cancel(&mut self, sweep: &str) -> Result<()> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            tx.execute("UPDATE sweeps SET cancelled = 1 WHERE id = ?1", params![sweep])?;
            rewrite_chunks(&tx, sweep, |jobs| {
                let mut changed = false;
                for job in jobs.iter_mut().filter(|j| j.state == JobState::Queued) {
                    (job.state, changed) = (JobState::Cancelled, true);
                }
                changed
            })?;
            tx.execute(
                "UPDATE jobs SET state = 'cancelled' WHERE sweep_id = ?1 AND state IN ('queued', 'running')",
                params![sweep],
            )?;
            tx.execute("UPDATE attempts SET state = 'void' WHERE sweep_id = ?1 AND state = 'running'", params![sweep])?;
            tx.commit()?;
            Ok(())
        })
    }

    /// At startup: attempts that were running died with the previous coordinator (their
    /// records were in its memory); their jobs go back to the queue.
    pub fn void_running(&mut self) -> Result<usize> {
        self.write(|conn| {
            let tx = conn.transaction()?;
            tx.execute("UPDATE attempts SET state = 'void' WHERE state = 'running'", [])?;
            // A job in a chunk was never running: only rows can be.
            let n = tx.execute("UPDATE jobs SET state = 'queued' WHERE state = 'running'", [])?;
            tx.commit()?;
            Ok(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store made when one declaration was kept per name and version gets its
    /// declarations moved, in order; then revisions of a version are kept side by side,
    /// and one kept again under its digest is replaced.
    #[test]
    fn declarations_of_an_older_store_are_moved_and_revisions_kept_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(dir.path().join("armada.sqlite")).unwrap();
            conn.execute_batch(
                "CREATE TABLE families (name TEXT NOT NULL, version INTEGER NOT NULL, digest TEXT NOT NULL,
                     declaration BLOB NOT NULL, PRIMARY KEY (name, version));
                 INSERT INTO families VALUES ('b', 1, 'b1', x'01'), ('a', 1, 'a1', x'02');",
            )
            .unwrap();
        }
        let mut store = Store::open(dir.path()).unwrap();
        let kept = |store: &Store| store.families().unwrap();
        let row = |digest: &str, token: &str, bytes: u8| (digest.to_string(), token.to_string(), vec![bytes]);
        assert_eq!(kept(&store), vec![row("b1", "", 1), row("a1", "", 2)]);
        store.keep_family("b", 1, "b2", "pool", &[3]).unwrap();
        store.keep_family("b", 1, "b1", "pool", &[4]).unwrap();
        drop(store);
        let mut store = Store::open(dir.path()).unwrap();
        assert_eq!(kept(&store), vec![row("b1", "", 4), row("a1", "", 2), row("b2", "pool", 3)]);
        store.remove_families("b", &["b1".to_string(), "b2".to_string()]).unwrap();
        assert_eq!(kept(&store), vec![row("a1", "", 2)]);
    }

    #[test]
    fn a_damaged_store_is_not_mistaken_for_a_busy_one() {
        use std::io::{Seek, SeekFrom, Write};
        let made = |dir: &Path| {
            let mut store = Store::open(dir).unwrap();
            store.begin_submission("s", "lse", 0).unwrap();
            let jobs: Vec<StoredJob> = (0..400).map(|i| job(&format!("{i:032x}"), i)).collect();
            store.add_jobs("s", 0, &jobs).unwrap();
            drop(store);
            let path = dir.join("armada.sqlite");
            // Checkpointed into the main file, so that damaging it is what a reader meets.
            let _ = std::fs::remove_file(dir.join("armada.sqlite-wal"));
            path
        };
        let truncated = tempfile::tempdir().unwrap();
        let path = made(truncated.path());
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 2).unwrap();
        let garbage = tempfile::tempdir().unwrap();
        let path = made(garbage.path());
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.write_all(&[0xa5; 8192]).unwrap();
        for dir in [truncated.path(), garbage.path()] {
            let err = Store::open(dir).err().expect("a damaged store does not open");
            assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
            let err = err.to_string();
            assert!(err.contains(&format!("{} is damaged", dir.join("armada.sqlite").display())), "{err}");
            assert!(err.contains("armada check --repair") && !err.contains("another coordinator"), "{err}");
        }
        let busy = tempfile::tempdir().unwrap();
        let _held = Store::open(busy.path()).unwrap();
        let err = Store::open(busy.path()).err().unwrap();
        assert!(matches!(err, StoreError::InUse { .. }), "{err:?}");
        assert!(err.to_string().contains("in use by another coordinator"), "{err}");
    }

    fn job(key: &str, ord: i64) -> StoredJob {
        StoredJob {
            sweep_id: "s".into(),
            key: key.into(),
            ord,
            spec: vec![],
            state: JobState::Queued,
            attempts: 0,
            error: None,
        }
    }

    /// Rows in `table`.
    fn count(store: &Store, table: &str) -> i64 {
        store.conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap()
    }

    fn keys(store: &Store) -> Vec<String> {
        store.jobs().unwrap().into_iter().map(|j| j.key).collect()
    }

    /// Attempts are noted open a batch at a time; a restart charges to its job each noted
    /// attempt that never ended (the job still queued), and not one that ended after the
    /// note (failed, released or committed), nor one a later note left out; then the notes
    /// are gone.
    #[test]
    fn a_restart_charges_the_noted_attempts_that_never_ended() {
        let dir = tempfile::tempdir().unwrap();
        let hex = |i: u8| JobKey::of_bytes(&[i; 16]).0;
        let mut store = Store::open(dir.path()).unwrap();
        let generation = store.begin_submission("s", "testkit", 1).unwrap();
        let jobs: Vec<StoredJob> = (1..=5).map(|i| job(&hex(i), i64::from(i))).collect();
        store.add_jobs("s", generation, &jobs).unwrap();
        store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
        let note = |store: &mut Store, open: &[(u64, u8)]| {
            let entries: Vec<u8> =
                open.iter().flat_map(|&(id, i)| [&id.to_le_bytes()[..], &[i; 16][..]].concat()).collect();
            store.note_open_attempts(&[("s", entries)]).unwrap();
        };
        // Job 5's attempt was noted, then a later note (it had ended uncharged) left it out.
        note(&mut store, &[(10, 1), (11, 2), (12, 3), (13, 4), (14, 5)]);
        note(&mut store, &[(10, 1), (11, 2), (12, 3), (13, 4)]);
        store.end_attempt(AttemptId(11), ("s", &hex(2)), JobState::Queued, 1, Some("boom")).unwrap();
        store.end_attempt(AttemptId(12), ("s", &hex(3)), JobState::Queued, 0, None).unwrap();
        store.commit_jobs("s", "part-x.parquet", &[(Some((1, 13)), &hex(4))]).unwrap();
        drop(store);
        let mut store = Store::open(dir.path()).unwrap();
        assert_eq!(store.charge_open_attempts().unwrap(), 1, "job 1's attempt only");
        let attempts: Vec<(u32, JobState)> = store.jobs().unwrap().iter().map(|j| (j.attempts, j.state)).collect();
        use JobState::{Done, Queued};
        assert_eq!(attempts, [(1, Queued), (1, Queued), (0, Queued), (1, Done), (0, Queued)]);
        assert_eq!(store.charge_open_attempts().unwrap(), 0, "the notes are cleared");
        // The charge is an attempt accounted for: noted again (a restart before the job ran
        // again), it is not charged twice.
        note(&mut store, &[(10, 1)]);
        assert_eq!(store.charge_open_attempts().unwrap(), 0);
    }

    /// A submission's jobs are a row per chunk, no row per job: every reading sees them as
    /// submitted (queued, or done when in a part), across a restart too; an uncommitted
    /// chunk is abandoned and counted; a write about one job turns its chunk, and only its
    /// chunk, into rows, and every reading stays the same but for that job; a cancel
    /// changes the chunks in place.
    #[test]
    fn a_submission_is_stored_a_chunk_a_row_and_rows_made_only_when_a_job_changes() {
        let dir = tempfile::tempdir().unwrap();
        let key = |i: u8| [i; 16];
        let hex = |i: u8| JobKey::of_bytes(&key(i)).0;
        let mut store = Store::open(dir.path()).unwrap();
        let generation = store.begin_submission("s", "testkit", 1).unwrap();
        let mut jobs: Vec<StoredJob> = (1..=6).map(|i| job(&hex(i), i64::from(i))).collect();
        jobs[5].state = JobState::Done;
        store.add_jobs("s", generation, &jobs[..4]).unwrap();
        store.add_jobs("s", generation, &jobs[4..]).unwrap();
        assert!(store.jobs().unwrap().is_empty(), "not committed: not the sweep's");
        store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (2, 0));
        store.commit_part("s", "part-a.parquet", &[(key(2), 1)]).unwrap();
        // A second sweep's submission never committed (the coordinator died storing it).
        let other = store.begin_submission("t", "testkit", 2).unwrap();
        store.add_jobs("t", other, &[StoredJob { sweep_id: "t".into(), ..job(&hex(9), 0) }]).unwrap();
        drop(store);

        let mut store = Store::open(dir.path()).unwrap();
        let (read, abandoned) = store.jobs_and_abandoned().unwrap();
        let mut want = jobs.clone();
        (want[1].state, want[1].attempts) = (JobState::Done, 1);
        assert_eq!((read, abandoned), (want.clone(), 1));
        assert_eq!(store.unsettled("s").unwrap(), 4, "jobs 1, 3, 4 and 5");
        let done = store.done_jobs("s").unwrap();
        assert_eq!(done, vec![(hex(2), Some("part-a.parquet".to_string())), (hex(6), None)]);
        assert_eq!(store.abandon_submissions().unwrap(), 1);
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (2, 0));

        store.end_attempt(AttemptId(7), ("s", &hex(3)), JobState::Failed, 3, Some("boom")).unwrap();
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (1, 4), "jobs 1-4 are rows");
        (want[2].state, want[2].attempts, want[2].error) = (JobState::Failed, 3, Some("boom".into()));
        assert_eq!(store.jobs().unwrap(), want);
        assert_eq!(store.unsettled("s").unwrap(), 3);
        assert_eq!(store.done_jobs("s").unwrap(), done);
        // Job 1 again: a row already, no chunk searched or made rows.
        store.end_attempt(AttemptId(8), ("s", &hex(1)), JobState::Queued, 1, None).unwrap();
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (1, 4));
        store.cancel("s").unwrap();
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (1, 4));
        let states: Vec<(JobState, u32)> = store.jobs().unwrap().iter().map(|j| (j.state, j.attempts)).collect();
        use JobState::{Cancelled, Done, Failed};
        assert_eq!(states, [(Cancelled, 1), (Done, 1), (Failed, 3), (Cancelled, 0), (Cancelled, 0), (Done, 0)]);
    }

    /// A sweep still in chunks is cancelled, resubmitted (a job dropped, the cancelled
    /// queued again) and deleted as one stored a row per job is, its chunks changed in
    /// place (no row per job made).
    #[test]
    fn a_sweep_in_chunks_is_cancelled_resubmitted_and_deleted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let hex = |i: u8| JobKey::of_bytes(&[i; 16]).0;
        let mut store = Store::open(dir.path()).unwrap();
        let generation = store.begin_submission("s", "testkit", 1).unwrap();
        let jobs: Vec<StoredJob> = (1..=3).map(|i| job(&hex(i), i64::from(i))).collect();
        store.add_jobs("s", generation, &jobs).unwrap();
        store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
        store.cancel("s").unwrap();
        let states = |store: &Store| -> Vec<(String, JobState)> {
            store.jobs().unwrap().into_iter().map(|j| (j.key, j.state)).collect()
        };
        use JobState::{Cancelled, Queued};
        assert_eq!(states(&store), [(hex(1), Cancelled), (hex(2), Cancelled), (hex(3), Cancelled)]);
        let again = store.begin_submission("s", "testkit", 2).unwrap();
        store.add_jobs("s", again, &[job(&hex(4), 4)]).unwrap();
        let removed = [hex(2)];
        let commit = Commit { removed: &removed, ..Commit::of("testkit") };
        store.commit_submission("s", again, &commit).unwrap();
        assert_eq!(states(&store), [(hex(1), Queued), (hex(3), Queued), (hex(4), Queued)]);
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (2, 0));
        // A chunk all of whose jobs leave goes.
        let last = store.begin_submission("s", "testkit", 3).unwrap();
        let removed = [hex(4)];
        store.commit_submission("s", last, &Commit { removed: &removed, ..Commit::of("testkit") }).unwrap();
        assert_eq!(states(&store), [(hex(1), Queued), (hex(3), Queued)]);
        assert_eq!((count(&store, "job_chunks"), count(&store, "jobs")), (1, 0));
        store.delete_sweep("s").unwrap();
        assert!(store.jobs().unwrap().is_empty());
        assert_eq!(count(&store, "job_chunks"), 0);
    }

    /// A part's jobs are recorded in one row: each is done with its count of attempts in
    /// every reading of the store (whatever its own row says, cancelled included), found in
    /// its part, and a lost one is queued again while the row keeps the others.
    #[test]
    fn a_parts_row_makes_its_jobs_done_in_every_reading() {
        let dir = tempfile::tempdir().unwrap();
        let key = |i: u8| [i; 16];
        let hex = |i: u8| JobKey::of_bytes(&key(i)).0;
        let mut store = Store::open(dir.path()).unwrap();
        let generation = store.begin_submission("s", "testkit", 1).unwrap();
        let jobs: Vec<StoredJob> = (1..=4).map(|i| job(&hex(i), i64::from(i))).collect();
        store.add_jobs("s", generation, &jobs).unwrap();
        store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
        store.commit_part("s", "part-a.parquet", &[(key(1), 1), (key(3), 2)]).unwrap();
        store.commit_jobs("s", "part-old.parquet", &[(Some((1, 9)), &hex(4))]).unwrap();
        store.cancel("s").unwrap();
        let states = |store: &Store| -> Vec<(JobState, u32)> {
            store.jobs().unwrap().iter().map(|j| (j.state, j.attempts)).collect()
        };
        use JobState::{Cancelled, Done, Queued};
        assert_eq!(states(&store), [(Done, 1), (Cancelled, 0), (Done, 2), (Done, 1)]);
        let done = store.done_jobs("s").unwrap();
        let mut want = vec![
            (hex(1), Some("part-a.parquet".to_string())),
            (hex(3), Some("part-a.parquet".to_string())),
            (hex(4), Some("part-old.parquet".to_string())),
        ];
        want.sort();
        assert_eq!(done, want);
        assert_eq!(store.unsettled("s").unwrap(), 0, "job 2 is cancelled");
        assert_eq!(store.part_of("s", &hex(3)).unwrap().as_deref(), Some("part-a.parquet"));
        assert_eq!(store.part_of("s", &hex(2)).unwrap(), None);
        assert_eq!(store.part_of("s", &hex(4)).unwrap().as_deref(), Some("part-old.parquet"), "an older store's row");
        assert_eq!(store.part_of("t", &hex(3)).unwrap(), None, "another sweep's part");
        assert_eq!(store.part_of("s", "not a key").unwrap(), None);
        let parts: Vec<String> = store.parts("s").unwrap().into_iter().collect();
        assert_eq!(parts, ["part-a.parquet", "part-old.parquet"]);
        // Job 3's rows are lost: queued again; job 1 stays done in the same part.
        let generation = store.begin_submission("s", "testkit", 2).unwrap();
        store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
        assert_eq!(store.requeue_lost("s", &[hex(3)]).unwrap(), 1);
        assert_eq!(states(&store), [(Done, 1), (Queued, 0), (Queued, 0), (Done, 1)]);
        assert_eq!(store.unsettled("s").unwrap(), 2);
        store.delete_sweep("s").unwrap();
        assert!(store.done_in_parts(None).unwrap().is_empty() && store.parts("s").unwrap().is_empty());
    }

    /// A submission counts only once committed: one cut short (the coordinator died
    /// between chunks) leaves no trace at the next start, neither a new sweep nor the new
    /// jobs of a resubmission.
    #[test]
    fn a_submission_counts_once_committed_and_an_unfinished_one_is_dropped_at_start() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(dir.path()).unwrap();
            let generation = store.begin_submission("s", "testkit", 1).unwrap();
            assert_eq!(generation, 0);
            store.add_jobs("s", generation, &[job("a", 0)]).unwrap();
            assert!(store.sweeps().unwrap().is_empty() && keys(&store).is_empty(), "not committed yet");
        }
        {
            let mut store = Store::open(dir.path()).unwrap();
            // What tells the loader to remove them: rows left out, a hidden sweep.
            assert_eq!(store.jobs_and_abandoned().unwrap().1, 1);
            assert!(store.has_hidden_sweeps().unwrap());
            assert_eq!(store.abandon_submissions().unwrap(), 1);
            assert!(store.sweeps().unwrap().is_empty());
            assert!(!store.has_hidden_sweeps().unwrap());
            let generation = store.begin_submission("s", "testkit", 2).unwrap();
            store.add_jobs("s", generation, &[job("a", 0), job("b", 1)]).unwrap();
            store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
            assert_eq!(keys(&store), ["a", "b"]);
            // A resubmission adding `c` and dropping `a`, cut short before its commit.
            let generation = store.begin_submission("s", "testkit", 3).unwrap();
            assert_eq!(generation, 1);
            store.add_jobs("s", generation, &[job("c", 2)]).unwrap();
            assert_eq!(keys(&store), ["a", "b"]);
        }
        let mut store = Store::open(dir.path()).unwrap();
        let (jobs, abandoned) = store.jobs_and_abandoned().unwrap();
        assert_eq!((jobs.len(), abandoned), (2, 1));
        assert!(!store.has_hidden_sweeps().unwrap(), "a resubmission's sweep stays visible");
        assert_eq!(store.abandon_submissions().unwrap(), 1);
        assert_eq!(store.jobs_and_abandoned().unwrap().1, 0);
        assert_eq!(keys(&store), ["a", "b"]);
        let generation = store.begin_submission("s", "testkit", 4).unwrap();
        store.add_jobs("s", generation, &[job("c", 2)]).unwrap();
        let removed = ["a".to_string()];
        store.commit_submission("s", generation, &Commit { removed: &removed, ..Commit::of("testkit") }).unwrap();
        assert_eq!(keys(&store), ["b", "c"]);
        assert_eq!(store.sweeps().unwrap().len(), 1);
    }

    /// A resolving sweep keeps its file; its rounds add jobs and leave its failed ones
    /// failed, where a resubmission queues them again.
    #[test]
    fn a_round_keeps_the_sweeps_file_and_its_failed_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let job = |key: &str, state: JobState| StoredJob {
            sweep_id: "s".into(),
            key: key.into(),
            ord: 0,
            spec: b"{}".to_vec(),
            state,
            attempts: 1,
            error: None,
        };
        let states = |store: &Store| -> Vec<(String, JobState)> {
            let mut jobs: Vec<_> = store.jobs().unwrap().into_iter().map(|j| (j.key.to_string(), j.state)).collect();
            jobs.sort_by(|a, b| a.0.cmp(&b.0));
            jobs
        };
        let source = Commit { source: Some("[resolve]"), ..Commit::of("testkit") };
        let generation = store.begin_submission("s", "testkit", 1).unwrap();
        store.add_jobs("s", generation, &[job("a", JobState::Failed)]).unwrap();
        store.commit_submission("s", generation, &source).unwrap();
        assert_eq!(store.sweeps().unwrap()[0].source.as_deref(), Some("[resolve]"));
        let generation = store.begin_submission("s", "testkit", 2).unwrap();
        store.add_jobs("s", generation, &[job("b", JobState::Queued)]).unwrap();
        store.commit_submission("s", generation, &Commit { round: true, ..source }).unwrap();
        assert_eq!(states(&store), [("a".into(), JobState::Failed), ("b".into(), JobState::Queued)]);
        assert_eq!(store.sweeps().unwrap()[0].source.as_deref(), Some("[resolve]"));
        let generation = store.begin_submission("s", "testkit", 3).unwrap();
        store.commit_submission("s", generation, &Commit::of("testkit")).unwrap();
        assert_eq!(states(&store), [("a".into(), JobState::Queued), ("b".into(), JobState::Queued)]);
        assert_eq!(store.sweeps().unwrap()[0].source, None, "a plain resubmission does not resolve");
    }

    /// Every write's outcome reaches the coordinator's troubles: a failure begins the
    /// store's trouble, the next successful write ends it; reads change nothing.
    #[test]
    fn failed_writes_are_the_stores_trouble_until_one_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let troubles = Arc::new(WriteTroubles::default());
        store.report_writes_to(troubles.clone());
        store.begin_submission("s", "testkit", 0).unwrap();
        assert!(troubles.current().is_empty());
        store.crash_after(0);
        assert!(store.set_summarized("s").is_err());
        assert!(store.cancel("s").is_err());
        let now = troubles.current();
        assert_eq!(now.len(), 1, "{now:?}");
        assert_eq!((&now[0].place, now[0].failures, troubles.failures()[0]), (&Place::Store, 2, ("store", 2)));
        assert!(now[0].error.contains("died before this write"), "{}", now[0].error);
        store.sweeps().unwrap();
        assert_eq!(troubles.current().len(), 1, "a read is not a write");
        store.crash_after(None);
        store.set_summarized("s").unwrap();
        assert!(troubles.current().is_empty());
        assert_eq!(troubles.take_changes(), vec![Place::Store]);
    }
}
