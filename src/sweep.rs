//! Sweep files: a TOML description of algorithms x benchmarks x seeds, expanded into
//! validated jobs before anything runs.
//!
//! ```toml
//! name = "lse-finite-quick"   # optional; the file stem by default; names the results directory
//! family = "lse"
//! seeds = 5                   # seed indices 0..5, or an explicit list [0, 3, 7]
//! sweep_seed = 0              # optional (default 0): root of every RNG stream
//! horizon = 50                # steps after the initial design
//!
//! [[benchmarks]]
//! name = "sinusoidal"
//! # horizon = 100             # optional per-benchmark override
//!
//! [[algorithms]]
//! name = "straddle"
//! params = { beta_sqrt = [1.0, 3.0] }   # a list is a grid: one variant per value
//! ```
//!
//! Every error names its field (`algorithms[1].params.beta_sqrt`) and what is allowed.

use armada_core::{
    check_param, check_params, find_component, validate_as, ComponentDef, Family, JobKey, JobSpec, ParamValue, Params,
    Registry, SeedKeys, SpecError, ValidJob, MAX_HORIZON,
};
use std::collections::HashMap;
use std::path::Path;
use toml::{Table, Value};

pub mod resolve;
pub use resolve::Resolve;

/// A validated sweep: its name and every job, in a deterministic order.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub name: String,
    pub family: String,
    /// Every job (of a resolving sweep, its first round's).
    pub jobs: Vec<ValidJob>,
    pub resolve: Option<Resolve>,
}

/// A validated sweep as its cells (each a job of seed 0, with its keys by seed) and its
/// seeds: its jobs without a spec of each held at once (a million jobs of a few cells are
/// a few cells and a million seeds).
pub struct SweepCells {
    pub name: String,
    pub family: String,
    pub cells: Vec<(ValidJob, SeedKeys)>,
    /// The seeds of every cell (of a resolving sweep, its first round's).
    pub seeds: Vec<u64>,
    /// Its `[resolve]` table: seeds are added in rounds where comparisons are open.
    pub resolve: Option<Resolve>,
}

impl SweepCells {
    pub fn n_jobs(&self) -> usize {
        self.cells.len() * self.seeds.len()
    }

    /// The sweep with every job made.
    pub fn into_sweep(self) -> Sweep {
        let (name, family, resolve) = (self.name.clone(), self.family.clone(), self.resolve.clone());
        Sweep { name, family, jobs: self.into_jobs().collect(), resolve }
    }

    /// Every job's key, in [`SweepCells::into_jobs`]'s order, without making the jobs.
    pub fn keys(&self) -> impl Iterator<Item = JobKey> + '_ {
        self.cells.iter().flat_map(|(_, keys)| self.seeds.iter().map(|&seed| keys.key(seed)))
    }

    /// Every job, cell by cell and seed by seed, each made as it is taken.
    pub fn into_jobs(self) -> impl Iterator<Item = ValidJob> {
        let seeds = std::sync::Arc::new(self.seeds);
        self.cells.into_iter().flat_map(move |(cell, keys)| {
            let seeds = seeds.clone();
            (0..seeds.len()).map(move |i| {
                let seed = seeds[i];
                ValidJob { spec: JobSpec { seed, ..cell.spec.clone() }, key: keys.key(seed) }
            })
        })
    }
}

const TOP_KEYS: &[&str] = &["name", "family", "seeds", "sweep_seed", "horizon", "benchmarks", "algorithms", "resolve"];
const BENCHMARK_KEYS: &[&str] = &["name", "params", "horizon"];
const ALGORITHM_KEYS: &[&str] = &["name", "params"];

/// The most jobs one sweep may expand to, unless the coordinator is told otherwise
/// (`armada serve --max-jobs-per-sweep`). Checked from the grid's sizes, before expanding it.
pub const DEFAULT_MAX_JOBS: usize = 5_000_000;

/// The longest sweep name.
pub const MAX_NAME_LEN: usize = 100;

/// A sweep name names a directory beside the coordinator's own files: 1 to
/// [`MAX_NAME_LEN`] letters, digits, '.', '_' and '-', starting with a letter or digit, and
/// not starting with `armada.` (the store's files, `armada.sqlite*`, are the coordinator's).
pub fn check_name(name: &str) -> Result<(), SpecError> {
    let usable = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !name.to_ascii_lowercase().starts_with("armada.");
    if !usable {
        let shown: String = name.chars().take(40).collect();
        let shown = if name.chars().count() > 40 { format!("{shown}...") } else { shown };
        return Err(SpecError::new(
            "name",
            format!(
                "`{shown}` is not a usable sweep name; use 1 to {MAX_NAME_LEN} letters, digits, '.', '_' and '-', \
                 starting with a letter or digit, and not starting with `armada.`"
            ),
        ));
    }
    Ok(())
}

/// Read and validate a sweep file; the sweep's default name is the file stem.
pub fn load_sweep(path: &Path, registry: &Registry) -> Result<Sweep, SpecError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SpecError::new("", format!("cannot read sweep file {}: {e}", path.display())))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
    parse_sweep(&text, stem, registry)
}

/// Parse and validate sweep text, with at most [`DEFAULT_MAX_JOBS`] jobs. Nothing is
/// written anywhere.
pub fn parse_sweep(text: &str, default_name: &str, registry: &Registry) -> Result<Sweep, SpecError> {
    parse_sweep_limited(text, default_name, registry, DEFAULT_MAX_JOBS)
}

/// [`parse_sweep`] with at most `max_jobs` jobs. Every field is checked, and the number of
/// jobs computed from the grid's sizes, before any grid is expanded. Every error found is
/// reported (up to [`MAX_REPORTED`]), not only the first: a field that cannot be read does
/// not stop the others from being checked, though what depends on it (the components of an
/// unknown family, the cells of a broken component) is checked only once it reads.
pub fn parse_sweep_limited(
    text: &str,
    default_name: &str,
    registry: &Registry,
    max_jobs: usize,
) -> Result<Sweep, SpecError> {
    Ok(parse_sweep_cells(text, default_name, registry, max_jobs)?.into_sweep())
}

/// [`parse_sweep_limited`], the sweep as its cells and seeds.
pub fn parse_sweep_cells(
    text: &str,
    default_name: &str,
    registry: &Registry,
    max_jobs: usize,
) -> Result<SweepCells, SpecError> {
    let top: Table = text
        .parse()
        .map_err(|e: toml::de::Error| SpecError::new("", format!("malformed TOML: {}", e.to_string().trim_end())))?;
    let mut errors = Errors::default();
    check_keys(&top, TOP_KEYS, "", &mut errors);
    let name = match top.get("name") {
        None => Some(default_name.to_string()),
        Some(v) => errors.take(string(v, "name").map(str::to_string)),
    };
    if let Some(name) = &name {
        errors.take(check_name(name));
    }
    let family_name = errors.take(required(&top, "family").and_then(|v| string(v, "family")));
    let family = family_name.and_then(|f| errors.take(registry.family(f)));
    let resolve = top.get("resolve").map(|v| resolve::read(v, &mut errors));
    // A resolving sweep's first round is its `min_seeds`; it has no `seeds` of its own.
    let seeds = match (&resolve, top.get("seeds")) {
        (Some(_), Some(_)) => {
            let message = "not with [resolve], whose rounds choose the seeds (the first: resolve.min_seeds)";
            errors.push(SpecError::new("seeds", message));
            None
        }
        (Some(written), None) => written.as_ref().map(|w| w.first_seeds()),
        (None, _) => errors.take(required(&top, "seeds").and_then(seeds)),
    };
    let sweep_seed = match top.get("sweep_seed") {
        None => Some(0),
        Some(v) => errors.take(integer(v, "sweep_seed", 0, i64::MAX)).map(|s| s as u64),
    };
    let horizon = errors
        .take(required(&top, "horizon").and_then(|v| integer(v, "horizon", 1, MAX_HORIZON as i64)))
        .map(|h| h as u32);
    if let Some(seeds) = &seeds {
        let mut seen_seeds = std::collections::HashSet::with_capacity(seeds.len());
        if let Some(seed) = seeds.iter().find(|&&seed| !seen_seeds.insert(seed)) {
            errors.push(SpecError::new("seeds", format!("seed {seed} is listed twice")));
        }
    }
    // The components need their family; without it, only the other fields are reported.
    let Some((family_name, family)) = family_name.zip(family) else {
        return Err(errors.into_error());
    };

    let benchmark = |name: &str| Ok((find_component(family.benchmarks(), name, "benchmark", family_name)?, family));
    let benchmarks = components(&top, "benchmarks", BENCHMARK_KEYS, &benchmark, max_jobs, &mut errors);
    // An algorithm is the family's own, or one of an extension of it.
    let algorithm = |name: &str| {
        let declaring = registry.declaring(family_name, name)?;
        Ok((find_component(declaring.algorithms(), name, "algorithm", declaring.name())?, declaring))
    };
    let algorithms = components(&top, "algorithms", ALGORITHM_KEYS, &algorithm, max_jobs, &mut errors);
    let bench_horizons: Vec<Option<u32>> = benchmarks
        .iter()
        .map(|bench| match bench.table.get("horizon") {
            None => horizon,
            Some(v) => {
                errors.take(integer(v, &format!("{}.horizon", bench.path), 1, MAX_HORIZON as i64)).map(|h| h as u32)
            }
        })
        .collect();
    // Cells are checked only when every field reads: a broken component would hide its cells.
    let (Some(name), Some(seeds), Some(sweep_seed)) = (name, seeds, sweep_seed) else {
        return Err(errors.into_error());
    };
    errors.check()?;
    let resolve = resolve.flatten();
    let variants = |cs: &[Component]| cs.iter().map(|c| c.variants.len()).sum::<usize>();
    let (n_bench, n_algo) = (variants(&benchmarks), variants(&algorithms));
    // A resolving sweep is counted at its most seeds per cell.
    let n_seeds = resolve.as_ref().map_or(seeds.len(), |r| r.max_seeds() as usize);
    let n_jobs = n_bench.saturating_mul(n_algo).saturating_mul(n_seeds);
    if n_jobs > max_jobs {
        return Err(SpecError::new(
            "",
            format!(
                "the sweep has {n_bench} benchmark variants x {n_algo} algorithm variants x {n_seeds} seeds{} = \
                 {n_jobs} jobs, over the limit of {max_jobs} jobs per sweep",
                if resolve.is_some() { " (resolve.max_seeds)" } else { "" }
            ),
        ));
    }

    let mut cells = Vec::new();
    // Each cell is validated once (with seed 0: validation does not depend on it); its
    // jobs differ only in the seed, and so in the key.
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut duplicates_said = std::collections::HashSet::new();
    for (bench, horizon) in benchmarks.iter().zip(bench_horizons) {
        let Some(horizon) = horizon else { continue }; // (an error was kept for it)
        for (bp_idx, bparams) in bench.variants.iter().enumerate() {
            for algo in &algorithms {
                let salt = algo.family.key_salt();
                for (ap_idx, aparams) in algo.variants.iter().enumerate() {
                    let origin = format!("{}#{bp_idx} x {}#{ap_idx}", bench.path, algo.path);
                    let spec = JobSpec {
                        family: family_name.to_string(),
                        benchmark: bench.name.clone(),
                        benchmark_params: bparams.clone(),
                        algorithm: algo.name.clone(),
                        algorithm_params: aparams.clone(),
                        seed: 0,
                        horizon,
                        sweep_seed,
                    };
                    let cell = match validate_as(algo.family, &spec) {
                        Ok(cell) => cell,
                        Err(e) => {
                            let message = format!("with benchmark `{}` ({}): {e}", bench.name, bench.path);
                            errors.push(SpecError::new(algo.path.clone(), message));
                            continue;
                        }
                    };
                    if let Some(first) = seen.insert(cell.key.0.clone(), origin) {
                        // Said once for the entry, not again with each benchmark.
                        if !duplicates_said.insert((algo.path.clone(), ap_idx)) {
                            continue;
                        }
                        errors.push(SpecError::new(
                            algo.path.clone(),
                            format!("duplicates the job of {first}: the same benchmark, algorithm and parameters (after defaults) appear twice"),
                        ));
                        continue;
                    }
                    let keys = cell.spec.seed_keys(&salt);
                    cells.push((cell, keys));
                }
            }
        }
    }
    errors.check()?;
    let resolve = resolve.and_then(|written| {
        let jobs: Vec<&ValidJob> = cells.iter().map(|(cell, _)| cell).collect();
        resolve::check(written, family.metrics(), &jobs, &mut errors)
    });
    errors.check()?;
    Ok(SweepCells { name, family: family_name.to_string(), cells, seeds, resolve })
}

/// The most errors of one sweep file reported; a count stands for the rest.
pub const MAX_REPORTED: usize = 20;

/// The errors of a sweep file found so far: the first [`MAX_REPORTED`] kept, the rest
/// counted (a grid of millions of bad cells must not hold millions of messages).
#[derive(Default)]
struct Errors {
    kept: Vec<SpecError>,
    total: usize,
}

impl Errors {
    fn push(&mut self, e: SpecError) {
        if self.kept.len() < MAX_REPORTED {
            self.kept.push(e);
        }
        self.total += 1;
    }

    /// The value, or None with its error kept.
    fn take<T>(&mut self, result: Result<T, SpecError>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// Err (all of them, as one error) when any was found.
    fn check(&mut self) -> Result<(), SpecError> {
        if self.total == 0 {
            Ok(())
        } else {
            Err(std::mem::take(self).into_error())
        }
    }

    /// One error standing for all: itself when alone, else a count and a line each.
    fn into_error(mut self) -> SpecError {
        match self.total {
            0 => SpecError::new("", "the sweep file is not valid"),
            1 => self.kept.remove(0),
            n => {
                let mut lines: Vec<String> = self.kept.iter().map(|e| format!("  {e}")).collect();
                if n > self.kept.len() {
                    lines.push(format!("  ... and {} more", n - self.kept.len()));
                }
                SpecError::new("", format!("{n} errors:\n{}", lines.join("\n")))
            }
        }
    }
}

/// One `[[benchmarks]]` or `[[algorithms]]` entry, with its parameter grid expanded and
/// checked, and the family that declares it (an algorithm's may be an extension).
struct Component<'a, 'r> {
    path: String,
    name: String,
    table: &'a Table,
    variants: Vec<Params>,
    family: &'r dyn Family,
}

/// A component's definition by name, and the family that declares it.
type Lookup<'l, 'r> = dyn Fn(&str) -> Result<(&'static ComponentDef, &'r dyn Family), SpecError> + 'l;

/// The entries of `key` that read; the errors of the others go to `errors`.
fn components<'a, 'r>(
    top: &'a Table,
    key: &str,
    allowed_keys: &[&str],
    lookup: &Lookup<'_, 'r>,
    max_variants: usize,
    errors: &mut Errors,
) -> Vec<Component<'a, 'r>> {
    let entries = match required(top, key) {
        Ok(Value::Array(a)) if !a.is_empty() => a,
        Ok(Value::Array(_)) => {
            errors.push(SpecError::new(key, "must list at least one entry"));
            return Vec::new();
        }
        Ok(other) => {
            let message = format!("expected an array of tables ([[{key}]]), got {}", other.type_str());
            errors.push(SpecError::new(key, message));
            return Vec::new();
        }
        Err(e) => {
            errors.push(e);
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("{key}[{i}]");
        let Some(table) = entry.as_table() else {
            errors.push(SpecError::new(path.clone(), format!("expected a table, got {}", entry.type_str())));
            continue;
        };
        check_keys(table, allowed_keys, &path, errors);
        let name =
            required(table, "name").map_err(|e| e.within(&path)).and_then(|v| string(v, &format!("{path}.name")));
        let Some(name) = errors.take(name) else { continue };
        let found = lookup(name).map_err(|e| SpecError::new(format!("{path}.name"), e.message));
        let Some((def, family)) = errors.take(found) else { continue };
        let grid = match table.get("params") {
            None => vec![Params::new()],
            Some(Value::Table(t)) => match param_grid(def, t, max_variants) {
                Ok(grid) => grid,
                Err(found) => {
                    found.into_iter().for_each(|e| errors.push(e.within(&format!("{path}.params"))));
                    continue;
                }
            },
            Some(other) => {
                let message = format!("expected a table, got {}", other.type_str());
                errors.push(SpecError::new(format!("{path}.params"), message));
                continue;
            }
        };
        let checked = grid
            .iter()
            .map(|p| check_params(def, p).map_err(|e| e.within(&format!("{path}.params"))))
            .collect::<Result<Vec<_>, _>>();
        if let Some(variants) = errors.take(checked) {
            out.push(Component { path, name: name.to_string(), table, variants, family });
        }
    }
    out
}

/// Expand `{a = [1, 2], b = "x"}` into the grid `[{a=1,b="x"}, {a=2,b="x"}]` (keys in sorted order,
/// the last key varying fastest). Every name and value is checked against `def`, and the
/// grid's size against `max_variants`, before anything is expanded; every key's first
/// error is returned.
fn param_grid(def: &ComponentDef, table: &Table, max_variants: usize) -> Result<Vec<Params>, Vec<SpecError>> {
    let mut keys: Vec<_> = table.keys().collect();
    keys.sort();
    let mut columns = Vec::with_capacity(keys.len());
    let mut errors = Vec::new();
    let mut size: usize = 1;
    for key in keys {
        match column(def, key, &table[key.as_str()]) {
            Ok(values) => {
                size = size.saturating_mul(values.len());
                columns.push((key, values));
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if size > max_variants {
        // Named after the key that crossed the limit, counting in sorted order.
        let mut size = 1usize;
        let key = columns.iter().find(|(_, values)| {
            size = size.saturating_mul(values.len());
            size > max_variants
        });
        let field = key.map_or(String::new(), |(key, _)| key.to_string());
        let message = format!("the grid has more than {max_variants} variants, the limit of jobs per sweep");
        return Err(vec![SpecError::new(field, message)]);
    }
    let mut grid = vec![Params::new()];
    for (key, values) in columns {
        grid = grid
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.insert(key.clone(), v.clone());
                    q
                })
            })
            .collect();
    }
    Ok(grid)
}

/// One parameter's values (a list is a grid axis), each checked against `def`.
fn column(def: &ComponentDef, key: &str, value: &Value) -> Result<Vec<ParamValue>, SpecError> {
    let values: Vec<ParamValue> = match value {
        Value::Array(items) if items.is_empty() => return Err(SpecError::new(key, "an empty list gives no variants")),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| scalar(v).map_err(|m| SpecError::new(format!("{key}[{i}]"), m)))
            .collect::<Result<_, _>>()?,
        v => vec![scalar(v).map_err(|m| SpecError::new(key, m))?],
    };
    for (i, item) in values.iter().enumerate() {
        check_param(def, key, item).map_err(|e| {
            // An unknown name is the key's fault; a bad value, the element's.
            let known = def.params.iter().any(|p| p.name == key);
            let field = if known && value.is_array() { format!("{key}[{i}]") } else { key.to_string() };
            SpecError::new(field, e.message)
        })?;
    }
    Ok(values)
}

fn scalar(v: &Value) -> Result<ParamValue, String> {
    Ok(match v {
        Value::Boolean(b) => ParamValue::Bool(*b),
        Value::Integer(i) => ParamValue::Int(*i),
        Value::Float(x) => ParamValue::Float(*x),
        Value::String(s) => ParamValue::Str(s.clone()),
        other => {
            return Err(format!("expected a boolean, number or string (or a list of them), got {}", other.type_str()))
        }
    })
}

fn seeds(v: &Value) -> Result<Vec<u64>, SpecError> {
    match v {
        Value::Integer(_) => {
            let n = integer(v, "seeds", 1, 1_000_000)?;
            Ok((0..n as u64).collect())
        }
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, s)| integer(s, &format!("seeds[{i}]"), 0, i64::MAX).map(|s| s as u64))
            .collect(),
        _ => Err(SpecError::new(
            "seeds",
            format!(
                "expected a positive integer (the number of seeds) or a non-empty list of seed indices, got {}",
                describe(v)
            ),
        )),
    }
}

fn check_keys(table: &Table, allowed: &[&str], path: &str, errors: &mut Errors) {
    for key in table.keys() {
        if !allowed.contains(&key.as_str()) {
            let field = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            errors.push(SpecError::new(field, format!("unknown field; allowed: {}", allowed.join(", "))));
        }
    }
}

fn required<'a>(table: &'a Table, key: &str) -> Result<&'a Value, SpecError> {
    table.get(key).ok_or_else(|| SpecError::new(key, "missing required field"))
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, SpecError> {
    v.as_str().ok_or_else(|| SpecError::new(path, format!("expected a string, got {}", describe(v))))
}

fn integer(v: &Value, path: &str, min: i64, max: i64) -> Result<i64, SpecError> {
    match v.as_integer() {
        Some(i) if (min..=max).contains(&i) => Ok(i),
        Some(i) => {
            let expected = armada_core::ParamKind::Int { min, max, default: min }.describe();
            Err(SpecError::new(path, format!("{i} is out of range; expected {expected}")))
        }
        None => Err(SpecError::new(path, format!("expected an integer, got {}", describe(v)))),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("string \"{s}\""),
        Value::Integer(i) => format!("integer {i}"),
        Value::Float(x) => format!("float {x}"),
        Value::Boolean(b) => format!("boolean {b}"),
        other => other.type_str().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
family = "lse"
seeds = 2
horizon = 10
[[benchmarks]]
name = "sinusoidal"
[[benchmarks]]
name = "himmelblau"
horizon = 20
[[algorithms]]
name = "straddle"
params = { beta_sqrt = [1, 3.0], tie_break = "random" }
[[algorithms]]
name = "random"
"#;

    fn err(text: &str) -> String {
        parse_sweep(text, "t", &crate::registry()).unwrap_err().to_string()
    }

    #[test]
    fn expands_benchmarks_grids_and_seeds_in_order() {
        let s = parse_sweep(GOOD, "good", &crate::registry()).unwrap();
        assert_eq!(s.name, "good");
        // 2 benchmarks x (2 straddle variants + 1 random) x 2 seeds.
        assert_eq!(s.jobs.len(), 12);
        let first = &s.jobs[0].spec;
        assert_eq!((first.benchmark.as_str(), first.algorithm.as_str(), first.seed), ("sinusoidal", "straddle", 0));
        assert_eq!(first.algorithm_params.get("beta_sqrt"), Some(&ParamValue::Float(1.0)));
        assert_eq!(first.horizon, 10);
        assert_eq!(s.jobs[6].spec.horizon, 20);
        let keys: std::collections::HashSet<_> = s.jobs.iter().map(|j| &j.key).collect();
        assert_eq!(keys.len(), 12);
    }

    #[test]
    fn the_cells_keys_are_the_jobs_keys_in_order() {
        let cells = parse_sweep_cells(GOOD, "good", &crate::registry(), DEFAULT_MAX_JOBS).unwrap();
        let keys: Vec<JobKey> = cells.keys().collect();
        let jobs: Vec<JobKey> = cells.into_jobs().map(|j| j.key).collect();
        assert_eq!(keys.len(), 12);
        assert_eq!(keys, jobs);
    }

    /// An extension's algorithm beside the family's own: checked against its schema,
    /// keyed with the extension's salt, on the family's environment (common random numbers).
    #[test]
    fn a_sweep_names_an_extensions_algorithms_beside_its_familys() {
        use crate::coordinator::durable::catalog::{tests::extension, Catalog, Decision, Declarer};
        let catalog = Catalog::new(crate::registry());
        let checked = catalog.check(extension("my-lse", "lse", &["gp-ucb"])).unwrap();
        let Ok(Decision::New(checked)) = catalog.decide(checked, &Declarer::unlimited("test")) else { panic!("new") };
        catalog.add(*checked, "test");
        let registry = catalog.get();
        let text = format!("{GOOD}[[algorithms]]\nname = \"gp-ucb\"\nparams = {{ kappa = [1.0, 3.0] }}\n");
        let s = parse_sweep(&text, "t", &registry).unwrap();
        // 2 benchmarks x (2 straddle variants + 1 random + 2 gp-ucb) x 2 seeds.
        assert_eq!(s.jobs.len(), 20);
        let salt = registry.family("my-lse").unwrap().key_salt();
        let ucb: Vec<_> = s.jobs.iter().filter(|j| j.spec.algorithm == "gp-ucb").collect();
        assert_eq!(ucb.len(), 8);
        assert!(ucb.iter().all(|j| j.spec.family == "lse" && j.key == j.spec.key_salted(&salt)));
        let builtin = parse_sweep(GOOD, "t", &crate::registry()).unwrap();
        assert!(builtin.jobs.iter().all(|j| s.jobs.contains(j)), "the family's jobs are unchanged");
        let same_seed =
            s.jobs.iter().find(|j| j.spec.benchmark == ucb[0].spec.benchmark && j.spec.seed == ucb[0].spec.seed);
        let (a, b) =
            (armada_core::JobStreams::new(&ucb[0].spec), armada_core::JobStreams::new(&same_seed.unwrap().spec));
        assert!(a.env("noise") == b.env("noise"));
        let e = parse_sweep(&text.replace("kappa", "kapa"), "t", &registry).unwrap_err().to_string();
        assert_eq!(e, "algorithms[2].params.kapa: unknown parameter of `gp-ucb`; allowed: kappa");
        let e = parse_sweep(&text, "t", &crate::registry()).unwrap_err().to_string();
        assert!(e.starts_with("algorithms[2].name: unknown algorithm `gp-ucb` in family `lse`"), "{e}");
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            err(&GOOD.replace("name = \"random\"", "name = \"ranodm\"")),
            format!("algorithms[1].name: unknown algorithm `ranodm` in family `lse`; allowed: {}", all_algorithms())
        );
        assert_eq!(
            err(&GOOD.replace("horizon = 10", "horizon = \"10\"")),
            "horizon: expected an integer, got string \"10\""
        );
        assert_eq!(err(&GOOD.replace("horizon = 10\n", "")), "horizon: missing required field");
        assert_eq!(
            err(&GOOD.replace("beta_sqrt = [1, 3.0]", "beta_sqrt = [1, \"x\"]")),
            "algorithms[0].params.beta_sqrt[1]: expected a float in [0, 1000], got a string"
        );
        assert_eq!(
            err(&GOOD.replace("tie_break", "tiebreak")),
            "algorithms[0].params.tiebreak: unknown parameter of `straddle`; allowed: beta_sqrt, tie_break"
        );
        assert_eq!(
            err(&GOOD.replace("seeds = 2", "seeds = 0")),
            "seeds: 0 is out of range; expected an integer in [1, 1000000]"
        );
        assert_eq!(err(&format!("seed = 3\n{GOOD}")), format!("seed: unknown field; allowed: {}", TOP_KEYS.join(", ")));
        // After a table header, a key belongs to that table.
        assert_eq!(err(&format!("{GOOD}\nseed = 3")), "algorithms[1].seed: unknown field; allowed: name, params");
        assert!(err("family = ").starts_with("malformed TOML: TOML parse error at line 1"), "{}", err("family = "));
        let known: Vec<&str> = crate::registry().families().map(|f| f.name()).collect();
        assert!(known.len() > 1 && known.contains(&"lse"));
        assert_eq!(
            err(&GOOD.replace("\"lse\"", "\"lsee\"")),
            format!("family: unknown family `lsee`; known: {}", known.join(", "))
        );
        assert!(err(&format!("{GOOD}\n[[algorithms]]\nname = \"random\"")).starts_with("algorithms[2]: duplicates"));
        // Cross-field checks of the family run at validation time too.
        let continuous = GOOD.replace("sinusoidal", "sphere-5d").replace("himmelblau", "rosenbrock-5d");
        let e = err(&format!("{continuous}\n[[algorithms]]\nname = \"mile\""));
        // (with each benchmark it meets)
        assert!(
            e.starts_with("2 errors:\n  algorithms[2]: with benchmark `sphere-5d` (benchmarks[0]): algorithm: mile needs a finite")
                && e.contains("\n  algorithms[2]: with benchmark `rosenbrock-5d` (benchmarks[1]): algorithm: mile needs"),
            "{e}"
        );
    }

    /// Every error of a file is reported at once, each naming its field, up to
    /// MAX_REPORTED; fields that read are checked even when others do not.
    #[test]
    fn every_error_of_a_sweep_file_is_reported_at_once() {
        let bad = GOOD
            .replace("seeds = 2", "seeds = 0\nseed = 3")
            .replace("horizon = 10", "horizon = \"10\"")
            .replace("name = \"sinusoidal\"", "name = \"sinusoidl\"")
            .replace("beta_sqrt = [1, 3.0], tie_break", "beta_sqrt = [1, \"x\"], tiebreak")
            .replace("name = \"random\"", "name = \"random\"\nextra = 1");
        let e = err(&bad);
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(
            lines,
            [
                "7 errors:",
                &format!("  seed: unknown field; allowed: {}", TOP_KEYS.join(", ")),
                "  seeds: 0 is out of range; expected an integer in [1, 1000000]",
                "  horizon: expected an integer, got string \"10\"",
                &format!("  benchmarks[0].name: unknown benchmark `sinusoidl` in family `lse`; allowed: {}", {
                    let lse = crate::registry();
                    let names: Vec<&str> = lse.family("lse").unwrap().benchmarks().iter().map(|b| b.name).collect();
                    names.join(", ")
                }),
                "  algorithms[0].params.beta_sqrt[1]: expected a float in [0, 1000], got a string",
                "  algorithms[0].params.tiebreak: unknown parameter of `straddle`; allowed: beta_sqrt, tie_break",
                "  algorithms[1].extra: unknown field; allowed: name, params",
            ]
        );
        // An unknown family: its components cannot be checked, the other fields are.
        let e = err(&bad.replace("\"lse\"", "\"lsee\""));
        assert!(
            e.starts_with("4 errors:\n  seed: unknown field") && e.contains("\n  family: unknown family `lsee`"),
            "{e}"
        );
        // Past the limit, a count stands for the rest.
        let many: String = (0..MAX_REPORTED + 5).map(|i| format!("x{i:02} = 1\n")).collect();
        let e = err(&format!("{many}{GOOD}"));
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines[0], format!("{} errors:", MAX_REPORTED + 5));
        assert_eq!(lines.len(), MAX_REPORTED + 2);
        assert_eq!(lines[MAX_REPORTED + 1], "  ... and 5 more");
        // A duplicated entry is said once, not once per benchmark.
        let e = err(&format!("{GOOD}\n[[algorithms]]\nname = \"random\""));
        assert!(e.starts_with("algorithms[2]: duplicates the job of benchmarks[0]#0 x algorithms[1]#0"), "{e}");
    }

    /// Grids are checked and counted before they are expanded: a file of a few hundred
    /// bytes asking for 10^8 variants of unknown parameters is refused at once, naming the
    /// parameter; a grid of known ones over the limit names the limit.
    #[test]
    fn grids_are_checked_and_counted_before_expansion() {
        let registry = crate::registry();
        let huge: String = (0..8).map(|i| format!("p{i} = [0,1,2,3,4,5,6,7,8,9], ")).collect();
        let text = GOOD.replace("beta_sqrt = [1, 3.0], tie_break = \"random\"", huge.trim_end_matches(", "));
        let e = parse_sweep(&text, "x", &registry).unwrap_err().to_string();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 9, "{e}");
        assert_eq!(lines[0], "8 errors:");
        assert_eq!(
            lines[1],
            "  algorithms[0].params.p0: unknown parameter of `straddle`; allowed: beta_sqrt, tie_break"
        );
        assert!(lines[8].starts_with("  algorithms[0].params.p7: unknown parameter"), "{e}");
        // beta_sqrt x 4 with 2 benchmarks and 2 seeds: 2 x (4 + 1) x 2 = 20 jobs.
        let grid = GOOD.replace("beta_sqrt = [1, 3.0]", "beta_sqrt = [1, 2, 3, 4]");
        assert_eq!(parse_sweep_limited(&grid, "x", &registry, 20).unwrap().jobs.len(), 20);
        assert_eq!(
            parse_sweep_limited(&grid, "x", &registry, 19).unwrap_err().to_string(),
            "the sweep has 2 benchmark variants x 5 algorithm variants x 2 seeds = 20 jobs, over the limit of 19 jobs per sweep"
        );
        assert_eq!(
            parse_sweep_limited(&grid, "x", &registry, 3).unwrap_err().to_string(),
            "algorithms[0].params.beta_sqrt: the grid has more than 3 variants, the limit of jobs per sweep"
        );
    }

    /// Names cannot reach outside their directory or collide with the store's files; numbers
    /// are range-checked, seeds and horizons included.
    #[test]
    fn names_and_numbers_are_range_checked() {
        for bad in ["armada.sqlite", "armada.sqlite-journal", "Armada.sqlite-wal", ".hidden", "-x", "a/b", "..", ""] {
            let e = err(&format!("name = \"{bad}\"\n{GOOD}"));
            assert!(e.starts_with("name: `"), "{bad}: {e}");
        }
        let long = "a".repeat(MAX_NAME_LEN + 1);
        let e = err(&format!("name = \"{long}\"\n{GOOD}"));
        assert!(e.starts_with("name: `aaaa") && e.contains("..."), "{e}");
        assert!(check_name(&"a".repeat(MAX_NAME_LEN)).is_ok() && check_name("armada-fig3.v2").is_ok());
        assert_eq!(
            err(&GOOD.replace("horizon = 10", "horizon = 4294967295")),
            format!("horizon: 4294967295 is out of range; expected an integer in [1, {MAX_HORIZON}]")
        );
        assert_eq!(
            err(&GOOD.replace("seeds = 2", "seeds = [9223372036854775807, -1]")),
            "seeds[1]: -1 is out of range; expected an integer >= 0"
        );
        // A structured job's seed past Int64 is refused where the job is validated.
        let mut spec = JobSpec::new("testkit", "constant", "echo");
        spec.horizon = 1;
        spec.seed = 1 << 63;
        let e = crate::registry().validate(&spec).unwrap_err().to_string();
        assert_eq!(e, "seed: 9223372036854775808 is out of range; expected an integer in [0, 9223372036854775807] (trajectories store it as Int64)");
    }

    /// The lse family's algorithm names, in registry order, as error messages list them.
    fn all_algorithms() -> String {
        armada_lse::algorithms::ALGORITHMS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
    }
}
