//! A sweep file's `[resolve]` table: run seeds in rounds, adding them only to the cells
//! whose comparisons are still open, until each is resolved or a limit is reached.
//!
//! ```toml
//! [resolve]
//! metric = "regret"           # the metric compared, at each job's last step...
//! # step = 100                # ...or at this step (a job that ended earlier: its last)
//! better = "lower"            # which way is better (needed by "vs-best")
//! min_seeds = 10              # the first round: seeds 0..10 in every cell
//! batch = 10                  # seeds added per round to a cell still compared
//! max_seeds = 200             # a cell's most seeds
//! confidence = 0.95
//! tolerance = 0.0             # a difference within it is practically none; or
//!                             # { relative = 0.02 }: 2% of b's mean over the pairs
//! compare = "vs-best"         # or "all-pairs", or pairs: [["cdt", "ts"]]
//! budget = { jobs = 9000, cpu_hours = 4.0 }   # optional, either or both
//! ```
//!
//! A side of a pair is an algorithm's name, or `{ name = "...", params = { ... } }` when
//! the sweep has several variants of it; each side must pick exactly one variant.

use super::{describe, integer, required, string, Errors};
use armada_core::{MetricDef, ParamValue, SpecError, ValidJob};
use std::collections::BTreeSet;
use toml::Value;

const KEYS: &[&str] =
    &["metric", "step", "better", "min_seeds", "batch", "max_seeds", "confidence", "tolerance", "compare", "budget"];
const BUDGET_KEYS: &[&str] = &["jobs", "cpu_hours"];

/// The fewest paired seeds a comparison is judged at (see `results::compare`, whose
/// simulations set it): a first round has at least these.
pub const MIN_SEEDS: u64 = 5;

pub const DEFAULT_MIN_SEEDS: u64 = 10;
pub const DEFAULT_BATCH: u64 = 10;
pub const DEFAULT_MAX_SEEDS: u64 = 200;
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// The most seeds a cell may reach (as the `seeds` of a plain sweep).
const MOST_SEEDS: i64 = 1_000_000;

/// Which values of the metric are better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// Which pairs of algorithm variants are compared, on each benchmark variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Compare {
    /// Each variant against the best one (by its mean so far) of its benchmark.
    VsBest,
    /// Every pair of variants.
    AllPairs,
    /// These pairs of variants: `(a, b)` compares `a - b`.
    Pairs(Vec<(Variant, Variant)>),
}

/// One algorithm variant of a sweep: its name and its parameters after defaults, as its
/// jobs' specs (and result files) have them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Variant {
    pub algorithm: String,
    /// [`armada_core::Params::to_json`] of its parameters.
    pub params: String,
}

impl Variant {
    pub fn of(job: &ValidJob) -> Variant {
        Variant { algorithm: job.spec.algorithm.clone(), params: job.spec.algorithm_params.to_json() }
    }
}

/// What a resolving sweep may spend in all its rounds; a round that would pass it is not
/// started, and the comparisons still open end unresolved.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    pub jobs: Option<u64>,
    pub cpu_hours: Option<f64>,
}

/// A validated `[resolve]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolve {
    pub metric: String,
    /// `None`: each job's last step.
    pub step: Option<u32>,
    pub better: Option<Better>,
    pub min_seeds: u64,
    pub batch: u64,
    pub max_seeds: u64,
    pub confidence: f64,
    pub tolerance: f64,
    /// `tolerance` is a fraction of the mean of `b` over a comparison's pairs (`{ relative
    /// = ... }`), not a difference of the metric.
    pub relative: bool,
    pub compare: Compare,
    pub budget: Budget,
}

/// A side of a pair as written, before it is matched with the sweep's variants.
#[derive(Debug)]
struct Side {
    path: String,
    algorithm: String,
    params: Vec<(String, ParamValue)>,
}

/// The table as written: what can be checked without the sweep's cells.
pub(super) struct Written {
    resolve: Resolve,
    sides: Vec<(Side, Side)>,
}

impl Written {
    /// The seeds of the first round.
    pub(super) fn first_seeds(&self) -> Vec<u64> {
        (0..self.resolve.min_seeds).collect()
    }

    /// The seeds each cell may reach.
    pub(super) fn max_seeds(&self) -> u64 {
        self.resolve.max_seeds
    }
}

/// Read a `[resolve]` table; its errors go to `errors`, each naming its field.
pub(super) fn read(value: &Value, errors: &mut Errors) -> Option<Written> {
    let Some(table) = value.as_table() else {
        errors.push(SpecError::new("resolve", format!("expected a table ([resolve]), got {}", describe(value))));
        return None;
    };
    super::check_keys(table, KEYS, "resolve", errors);
    let field = |key: &str| format!("resolve.{key}");
    let count = |key: &str, default: u64, errors: &mut Errors| match table.get(key) {
        None => Some(default),
        Some(v) => errors.take(integer(v, &field(key), 1, MOST_SEEDS)).map(|n| n as u64),
    };
    let metric = errors
        .take(required(table, "metric").map_err(|e| e.within("resolve")).and_then(|v| string(v, &field("metric"))));
    let step = match table.get("step") {
        None => Some(None),
        Some(v) => errors.take(integer(v, &field("step"), 0, i64::from(u32::MAX))).map(|s| Some(s as u32)),
    };
    let better = match table.get("better") {
        None => Some(None),
        Some(Value::String(s)) if s == "lower" => Some(Some(Better::Lower)),
        Some(Value::String(s)) if s == "higher" => Some(Some(Better::Higher)),
        Some(v) => {
            errors.push(SpecError::new(
                field("better"),
                format!("expected \"lower\" or \"higher\", got {}", describe(v)),
            ));
            None
        }
    };
    let min_seeds = count("min_seeds", DEFAULT_MIN_SEEDS, errors);
    let batch = count("batch", DEFAULT_BATCH, errors);
    let max_seeds = count("max_seeds", DEFAULT_MAX_SEEDS, errors);
    if let Some(min) = min_seeds.filter(|&n| n < MIN_SEEDS) {
        let least = MIN_SEEDS;
        let message = format!("{min} is too few: a comparison is judged from {least} paired seeds on");
        errors.push(SpecError::new(field("min_seeds"), message));
    }
    if let (Some(min), Some(max)) = (min_seeds, max_seeds) {
        if max < min {
            errors.push(SpecError::new(field("max_seeds"), format!("{max} is below min_seeds ({min})")));
        }
    }
    let confidence = match table.get("confidence") {
        None => Some(DEFAULT_CONFIDENCE),
        Some(v) => errors.take(fraction(v, &field("confidence"))),
    };
    let tolerance = match table.get("tolerance") {
        None => Some((0.0, false)),
        Some(Value::Table(t)) => {
            super::check_keys(t, &["relative"], "resolve.tolerance", errors);
            match t.get("relative") {
                Some(v) => errors.take(non_negative(v, "resolve.tolerance.relative")).map(|x| (x, true)),
                None => {
                    errors.push(SpecError::new("resolve.tolerance.relative", "missing required field"));
                    None
                }
            }
        }
        Some(v) => errors.take(non_negative(v, &field("tolerance"))).map(|x| (x, false)),
    };
    let (compare, sides) = match table.get("compare") {
        None => (Some(Compare::VsBest), Vec::new()),
        Some(Value::String(s)) if s == "vs-best" => (Some(Compare::VsBest), Vec::new()),
        Some(Value::String(s)) if s == "all-pairs" => (Some(Compare::AllPairs), Vec::new()),
        Some(Value::Array(pairs)) if !pairs.is_empty() => match read_pairs(pairs, errors) {
            Some(sides) => (Some(Compare::Pairs(Vec::new())), sides),
            None => (None, Vec::new()),
        },
        Some(v) => {
            let message =
                format!("expected \"vs-best\", \"all-pairs\" or a non-empty list of pairs, got {}", describe(v));
            errors.push(SpecError::new(field("compare"), message));
            (None, Vec::new())
        }
    };
    if compare == Some(Compare::VsBest) && better == Some(None) {
        let message = "missing: \"vs-best\" compares each variant with the best one, so say which values are \
                       better (\"lower\" or \"higher\"), or compare \"all-pairs\" or given pairs";
        errors.push(SpecError::new(field("better"), message));
    }
    let budget = match table.get("budget") {
        None => Some(Budget::default()),
        Some(v) => read_budget(v, errors),
    };
    Some(Written {
        resolve: Resolve {
            metric: metric?.to_string(),
            step: step?,
            better: better?,
            min_seeds: min_seeds?,
            batch: batch?,
            max_seeds: max_seeds?,
            confidence: confidence?,
            tolerance: tolerance?.0,
            relative: tolerance?.1,
            compare: compare?,
            budget: budget?,
        },
        sides,
    })
}

fn read_pairs(pairs: &[Value], errors: &mut Errors) -> Option<Vec<(Side, Side)>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (i, pair) in pairs.iter().enumerate() {
        let path = format!("resolve.compare[{i}]");
        let sides = match pair.as_array().map(Vec::as_slice) {
            Some([a, b]) => (read_side(a, &format!("{path}[0]"), errors), read_side(b, &format!("{path}[1]"), errors)),
            _ => {
                let message = format!("expected a pair of algorithm variants, [a, b], got {}", describe(pair));
                errors.push(SpecError::new(path, message));
                (None, None)
            }
        };
        match sides {
            (Some(a), Some(b)) => out.push((a, b)),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

fn read_side(value: &Value, path: &str, errors: &mut Errors) -> Option<Side> {
    match value {
        Value::String(name) => Some(Side { path: path.to_string(), algorithm: name.clone(), params: Vec::new() }),
        Value::Table(t) => {
            super::check_keys(t, &["name", "params"], path, errors);
            let name = required(t, "name").map_err(|e| e.within(path)).and_then(|v| string(v, &format!("{path}.name")));
            let name = errors.take(name)?;
            let params = match t.get("params") {
                None => Vec::new(),
                Some(Value::Table(p)) => {
                    let mut params = Vec::new();
                    for (key, v) in p {
                        let read = super::scalar(v).map_err(|m| SpecError::new(format!("{path}.params.{key}"), m));
                        params.push((key.clone(), errors.take(read)?));
                    }
                    params
                }
                Some(v) => {
                    errors.push(SpecError::new(
                        format!("{path}.params"),
                        format!("expected a table, got {}", describe(v)),
                    ));
                    return None;
                }
            };
            Some(Side { path: path.to_string(), algorithm: name.to_string(), params })
        }
        v => {
            let message =
                format!("expected an algorithm's name or {{ name = ..., params = {{ ... }} }}, got {}", describe(v));
            errors.push(SpecError::new(path, message));
            None
        }
    }
}

fn read_budget(value: &Value, errors: &mut Errors) -> Option<Budget> {
    let Some(t) = value.as_table() else {
        let message = format!("expected a table such as {{ jobs = 9000, cpu_hours = 4.0 }}, got {}", describe(value));
        errors.push(SpecError::new("resolve.budget", message));
        return None;
    };
    super::check_keys(t, BUDGET_KEYS, "resolve.budget", errors);
    let jobs = match t.get("jobs") {
        None => Some(None),
        Some(v) => errors.take(integer(v, "resolve.budget.jobs", 1, i64::MAX)).map(|n| Some(n as u64)),
    };
    let cpu_hours = match t.get("cpu_hours") {
        None => Some(None),
        Some(v) => match errors.take(non_negative(v, "resolve.budget.cpu_hours")) {
            Some(h) if h > 0.0 => Some(Some(h)),
            Some(_) => {
                errors.push(SpecError::new("resolve.budget.cpu_hours", "must be above 0"));
                None
            }
            None => None,
        },
    };
    Some(Budget { jobs: jobs?, cpu_hours: cpu_hours? })
}

/// A number (an integer reads as one).
fn number(v: &Value, path: &str) -> Result<f64, SpecError> {
    match v {
        Value::Float(x) if x.is_finite() => Ok(*x),
        Value::Integer(i) => Ok(*i as f64),
        _ => Err(SpecError::new(path, format!("expected a finite number, got {}", describe(v)))),
    }
}

fn fraction(v: &Value, path: &str) -> Result<f64, SpecError> {
    let x = number(v, path)?;
    if (0.5..1.0).contains(&x) {
        Ok(x)
    } else {
        Err(SpecError::new(path, format!("{x} is out of range; expected a number in [0.5, 1)")))
    }
}

fn non_negative(v: &Value, path: &str) -> Result<f64, SpecError> {
    let x = number(v, path)?;
    if x >= 0.0 {
        Ok(x)
    } else {
        Err(SpecError::new(path, format!("{x} is out of range; expected a number >= 0")))
    }
}

/// Check what the table asks against the sweep: its metric is one of the family's, its
/// step within every benchmark's horizon, and each side of a pair picks one of the sweep's
/// algorithm variants (`cells`: one job of each cell).
pub(super) fn check(
    written: Written,
    metrics: &[MetricDef],
    cells: &[&ValidJob],
    errors: &mut Errors,
) -> Option<Resolve> {
    let Written { mut resolve, sides } = written;
    let mut ok = true;
    if !metrics.iter().any(|m| m.name == resolve.metric) {
        let known: Vec<&str> = metrics.iter().map(|m| m.name).collect();
        let message = format!("unknown metric `{}`; the family's: {}", resolve.metric, known.join(", "));
        errors.push(SpecError::new("resolve.metric", message));
        ok = false;
    }
    if let Some(step) = resolve.step {
        if let Some(shortest) = cells.iter().map(|c| c.spec.horizon).min().filter(|&h| step > h) {
            let message = format!("{step} is past the shortest horizon of the sweep's benchmarks ({shortest})");
            errors.push(SpecError::new("resolve.step", message));
            ok = false;
        }
    }
    let variants: BTreeSet<Variant> = cells.iter().map(|c| Variant::of(c)).collect();
    let mut pairs = Vec::new();
    for (a, b) in &sides {
        match (pick(a, &variants, cells), pick(b, &variants, cells)) {
            (Ok(va), Ok(vb)) if va == vb => {
                errors.push(SpecError::new(b.path.clone(), "is the same variant as the other side of the pair"));
                ok = false;
            }
            (Ok(va), Ok(vb)) => pairs.push((va, vb)),
            (ra, rb) => {
                for e in [ra.err(), rb.err()].into_iter().flatten() {
                    errors.push(e);
                }
                ok = false;
            }
        }
    }
    if let Compare::Pairs(p) = &mut resolve.compare {
        *p = pairs;
    }
    ok.then_some(resolve)
}

/// The one variant a side picks.
fn pick(side: &Side, variants: &BTreeSet<Variant>, cells: &[&ValidJob]) -> Result<Variant, SpecError> {
    let of_name: Vec<&Variant> = variants.iter().filter(|v| v.algorithm == side.algorithm).collect();
    if of_name.is_empty() {
        let names: BTreeSet<&str> = variants.iter().map(|v| v.algorithm.as_str()).collect();
        let message = format!(
            "the sweep runs no algorithm `{}`; it runs: {}",
            side.algorithm,
            names.into_iter().collect::<Vec<_>>().join(", ")
        );
        return Err(SpecError::new(side.path.clone(), message));
    }
    let matches = |v: &Variant| {
        let job = cells.iter().find(|c| Variant::of(c) == *v).expect("a variant of the cells");
        side.params.iter().all(|(key, want)| job.spec.algorithm_params.get(key).is_some_and(|got| same(got, want)))
    };
    let picked: Vec<&Variant> = of_name.into_iter().filter(|v| matches(v)).collect();
    match picked.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            Err(SpecError::new(side.path.clone(), format!("no variant of `{}` has these parameters", side.algorithm)))
        }
        many => {
            let listed: Vec<&str> = many.iter().map(|v| v.params.as_str()).collect();
            let message = format!(
                "`{}` has {} variants here ({}); give {{ name = \"{}\", params = {{ ... }} }} to pick one",
                side.algorithm,
                many.len(),
                listed.join(", "),
                side.algorithm
            );
            Err(SpecError::new(side.path.clone(), message))
        }
    }
}

/// Parameter values as a sweep file means them: `3` and `3.0` are the same number.
fn same(a: &ParamValue, b: &ParamValue) -> bool {
    match (a, b) {
        (ParamValue::Int(x), ParamValue::Float(y)) | (ParamValue::Float(y), ParamValue::Int(x)) => *x as f64 == *y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::parse_sweep_cells;

    const SWEEP: &str = r#"
family = "lse"
horizon = 10
[[benchmarks]]
name = "sinusoidal"
[[benchmarks]]
name = "himmelblau"
horizon = 20
[[algorithms]]
name = "straddle"
params = { beta_sqrt = [1, 3.0] }
[[algorithms]]
name = "random"
"#;

    fn parse(resolve: &str) -> Result<crate::sweep::SweepCells, String> {
        parse_sweep_cells(&format!("{SWEEP}[resolve]\n{resolve}"), "t", &crate::registry(), 1_000_000)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_resolve_table_reads_with_its_defaults_and_its_first_round_as_seeds() {
        let s = parse("metric = \"fscore\"\nbetter = \"higher\"").unwrap();
        assert_eq!(s.seeds, (0..DEFAULT_MIN_SEEDS).collect::<Vec<_>>());
        let r = s.resolve.unwrap();
        assert_eq!(
            r,
            Resolve {
                metric: "fscore".into(),
                step: None,
                better: Some(Better::Higher),
                min_seeds: DEFAULT_MIN_SEEDS,
                batch: DEFAULT_BATCH,
                max_seeds: DEFAULT_MAX_SEEDS,
                confidence: 0.95,
                tolerance: 0.0,
                relative: false,
                compare: Compare::VsBest,
                budget: Budget::default(),
            }
        );
        let s = parse(
            "metric = \"loss\"\nstep = 10\nmin_seeds = 6\nbatch = 3\nmax_seeds = 30\nconfidence = 0.9\n\
             tolerance = 0.01\nbudget = { jobs = 500, cpu_hours = 1 }\n\
             compare = [[{ name = \"straddle\", params = { beta_sqrt = 3 } }, \"random\"]]",
        )
        .unwrap();
        assert_eq!(s.seeds.len(), 6);
        let r = s.resolve.unwrap();
        assert_eq!((r.step, r.min_seeds, r.batch, r.max_seeds), (Some(10), 6, 3, 30));
        assert_eq!(
            (r.confidence, r.tolerance, r.budget),
            (0.9, 0.01, Budget { jobs: Some(500), cpu_hours: Some(1.0) })
        );
        let straddle3 = s.cells.iter().map(|(c, _)| Variant::of(c)).find(|v| v.params.contains("3.0")).unwrap();
        let random = Variant { algorithm: "random".into(), params: "{}".into() };
        assert_eq!(r.compare, Compare::Pairs(vec![(straddle3, random)]));
        let all = parse("metric = \"loss\"\ncompare = \"all-pairs\"").unwrap().resolve.unwrap();
        assert_eq!((all.compare, all.better, all.relative), (Compare::AllPairs, None, false));
        let rel = parse("metric = \"loss\"\ncompare = \"all-pairs\"\ntolerance = { relative = 0.02 }").unwrap();
        let rel = rel.resolve.unwrap();
        assert_eq!((rel.tolerance, rel.relative), (0.02, true));
        let e = parse("metric = \"loss\"\ncompare = \"all-pairs\"\ntolerance = { rel = 0.02 }").err().unwrap();
        assert_eq!(
            e,
            "2 errors:\n  resolve.tolerance.rel: unknown field; allowed: relative\n  \
             resolve.tolerance.relative: missing required field"
        );
    }

    /// Every error of the table at once, each naming its field.
    #[test]
    fn its_errors_name_their_fields_all_at_once() {
        let e = parse(
            "metric = 3\nstep = -1\nbetter = \"less\"\nmin_seeds = 3\nmax_seeds = 2\nconfidence = 1.5\n\
             tolerance = -1\nbudget = { jobs = 0, hours = 2 }\ncompare = \"best\"\nextra = 1",
        )
        .err()
        .unwrap();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(
            lines,
            [
                "11 errors:",
                &format!("  resolve.extra: unknown field; allowed: {}", KEYS.join(", ")),
                "  resolve.metric: expected a string, got integer 3",
                "  resolve.step: -1 is out of range; expected an integer in [0, 4294967295]",
                "  resolve.better: expected \"lower\" or \"higher\", got string \"less\"",
                "  resolve.min_seeds: 3 is too few: a comparison is judged from 5 paired seeds on",
                "  resolve.max_seeds: 2 is below min_seeds (3)",
                "  resolve.confidence: 1.5 is out of range; expected a number in [0.5, 1)",
                "  resolve.tolerance: -1 is out of range; expected a number >= 0",
                "  resolve.compare: expected \"vs-best\", \"all-pairs\" or a non-empty list of pairs, got string \"best\"",
                "  resolve.budget.hours: unknown field; allowed: jobs, cpu_hours",
                "  resolve.budget.jobs: 0 is out of range; expected an integer >= 1",
            ]
        );
        // With the sweep's `seeds`, or vs-best without a direction.
        let e = parse_sweep_cells(
            &format!("seeds = 3\n{SWEEP}[resolve]\nmetric = \"loss\""),
            "t",
            &crate::registry(),
            1000,
        );
        let e = e.err().unwrap().to_string();
        assert_eq!(
            e.lines().collect::<Vec<_>>(),
            [
                "2 errors:",
                "  resolve.better: missing: \"vs-best\" compares each variant with the best one, so say which values \
             are better (\"lower\" or \"higher\"), or compare \"all-pairs\" or given pairs",
                "  seeds: not with [resolve], whose rounds choose the seeds (the first: resolve.min_seeds)",
            ]
        );
        // Not a table; the job limit counts max_seeds.
        assert_eq!(
            parse_sweep_cells(&format!("resolve = 1\n{SWEEP}"), "t", &crate::registry(), 1000)
                .err()
                .unwrap()
                .to_string(),
            "resolve: expected a table ([resolve]), got integer 1"
        );
        let e = parse_sweep_cells(
            &format!("{SWEEP}[resolve]\nmetric = \"loss\"\ncompare = \"all-pairs\""),
            "t",
            &crate::registry(),
            1000,
        );
        assert_eq!(
            e.err().unwrap().to_string(),
            "the sweep has 2 benchmark variants x 3 algorithm variants x 200 seeds (resolve.max_seeds) = 1200 jobs, \
             over the limit of 1000 jobs per sweep"
        );
    }

    /// What needs the sweep: the family's metrics, the shortest horizon, the variants a
    /// pair names.
    #[test]
    fn what_it_names_must_be_in_the_sweep() {
        let e = parse(
            "metric = \"los\"\nstep = 15\ncompare = [[\"straddle\", \"random\"], [\"random\", \"random\"], \
             [\"mile\", { name = \"straddle\", params = { beta_sqrt = 2 } }]]",
        )
        .err()
        .unwrap();
        let lines: Vec<&str> = e.lines().collect();
        let metrics: Vec<&str> = crate::registry().family("lse").unwrap().metrics().iter().map(|m| m.name).collect();
        assert_eq!(
            lines,
            [
                "6 errors:".to_string(),
                format!("  resolve.metric: unknown metric `los`; the family's: {}", metrics.join(", ")),
                "  resolve.step: 15 is past the shortest horizon of the sweep's benchmarks (10)".to_string(),
                "  resolve.compare[0][0]: `straddle` has 2 variants here ({\"beta_sqrt\":1.0,\"tie_break\":\"lowest-index\"}, \
                 {\"beta_sqrt\":3.0,\"tie_break\":\"lowest-index\"}); give { name = \"straddle\", params = { ... } } to pick one"
                    .to_string(),
                "  resolve.compare[1][1]: is the same variant as the other side of the pair".to_string(),
                "  resolve.compare[2][0]: the sweep runs no algorithm `mile`; it runs: random, straddle".to_string(),
                "  resolve.compare[2][1]: no variant of `straddle` has these parameters".to_string(),
            ]
        );
    }
}
