//! Golden trajectories: a job's records written as text, every value as the bits of its
//! f64, so that two runs compare bit for bit and a difference is named by job, step and
//! metric.
//!
//! The workspace's `tests/numerics/golden.rs` runs every family's golden jobs (the sweep files
//! `workers/<crate>/golden/*.toml`) and compares their text with `golden/<family>.txt`.
//! This crate holds what that comparison is made of, apart from the sweep files and the
//! coordinator, so that the binary `armada-golden` (the paper families, nothing of polars
//! or tokio) cross-compiles to another architecture and recomputes the same text there:
//! the test hands it the jobs as [`write_jobs`] lines and compares what it prints.

use armada_core::{run_job, Family, JobSpec, ParamValue, Params, Registry, StepRecord, ValidJob};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::ops::ControlFlow;

/// The families `armada-golden` runs: every family of armada's build but the test kit
/// (which lives in the worker runtime, with tokio); `tests/numerics/golden.rs` checks that.
pub use armada_families::paper_families;

/// A job's header line and its records, one line per step: the step, then every value as
/// the 16 hex digits of its bits.
pub struct Trajectory {
    pub header: String,
    pub lines: Vec<String>,
}

/// Each job run to its end, in order (a job that fails gives one `error` line).
pub fn run(registry: &Registry, jobs: &[ValidJob]) -> Vec<Trajectory> {
    jobs.iter()
        .map(|job| {
            let mut records: Vec<StepRecord> = Vec::new();
            let ran = run_job(registry, job, &mut |r| {
                records.push(r);
                ControlFlow::Continue(())
            });
            let lines = match ran {
                Ok(_) => records
                    .iter()
                    .map(|r| {
                        let mut line = r.step.to_string();
                        for v in &r.values {
                            write!(line, " {:016x}", v.to_bits()).unwrap();
                        }
                        line
                    })
                    .collect(),
                Err(e) => vec![format!("error {e}")],
            };
            Trajectory { header: format!("job {} {}", job.key, job.describe()), lines }
        })
        .collect()
}

/// The text of a family's golden file: a comment, its version, then each trajectory.
pub fn render(family: &dyn Family, trajectories: &[Trajectory]) -> String {
    let metrics: Vec<&str> = family.metrics().iter().map(|m| m.name).collect();
    let mut text = format!(
        "# Golden trajectories of family `{}` (armada's tests/numerics/golden.rs): per job, one line per step with\n\
         # every metric ({}) as the hex of its f64 bits. Written by the test when the\n\
         # family's version changes; commit it with the bump.\nversion {}\n",
        family.name(),
        metrics.join(", "),
        family.version()
    );
    for t in trajectories {
        text.push_str(&t.header);
        text.push('\n');
        for line in &t.lines {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// What a golden text compares by: its lines but the comments, which are for readers.
pub fn data(text: &str) -> String {
    text.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n")
}

/// The version a golden text records, if it says one.
pub fn recorded_version(text: &str) -> Option<u32> {
    text.lines().find_map(|l| l.strip_prefix("version ")).and_then(|v| v.parse().ok())
}

/// The first difference between a recorded and a computed golden text ([`data`] of each),
/// said in terms of a job, a step and a metric.
pub fn first_difference(family: &dyn Family, recorded: &str, computed: &str) -> String {
    let metrics: Vec<&str> = family.metrics().iter().map(|m| m.name).collect();
    let mut job = "";
    for (want, got) in recorded.lines().zip(computed.lines()) {
        if want.starts_with("job ") && want == got {
            job = want;
        }
        if want == got {
            continue;
        }
        if want.starts_with("job ") || got.starts_with("job ") {
            return format!("a different job: recorded `{want}`, computed `{got}`");
        }
        let (w, g): (Vec<&str>, Vec<&str>) = (want.split(' ').collect(), got.split(' ').collect());
        let column = (1..w.len().max(g.len())).find(|&i| w.get(i) != g.get(i)).unwrap_or(0);
        let name = metrics.get(column.wrapping_sub(1)).copied().unwrap_or("?");
        let value = |v: Option<&&str>| {
            v.and_then(|h| u64::from_str_radix(h, 16).ok())
                .map_or("-".to_string(), |b| format!("{:e}", f64::from_bits(b)))
        };
        return format!(
            "{job}\n  step {}, metric `{name}`: recorded {}, computed {}",
            w[0],
            value(w.get(column)),
            value(g.get(column))
        );
    }
    format!(
        "a different number of lines ({} recorded, {} computed)",
        recorded.lines().count(),
        computed.lines().count()
    )
}

/// A parameter value on the way to another process: a float as its bits, so that it
/// arrives exactly (a decimal float's parse is not promised to round correctly).
#[derive(serde::Serialize, serde::Deserialize)]
enum WireValue {
    Bool(bool),
    Int(i64),
    FloatBits(u64),
    Str(String),
}

/// A job spec on the way to another process: one JSON object per line.
#[derive(serde::Serialize, serde::Deserialize)]
struct WireJob {
    family: String,
    benchmark: String,
    benchmark_params: BTreeMap<String, WireValue>,
    algorithm: String,
    algorithm_params: BTreeMap<String, WireValue>,
    seed: u64,
    horizon: u32,
    sweep_seed: u64,
}

fn to_wire(params: &Params) -> BTreeMap<String, WireValue> {
    params
        .iter()
        .map(|(name, value)| {
            let value = match value {
                ParamValue::Bool(b) => WireValue::Bool(*b),
                ParamValue::Int(i) => WireValue::Int(*i),
                ParamValue::Float(x) => WireValue::FloatBits(x.to_bits()),
                ParamValue::Str(s) => WireValue::Str(s.clone()),
            };
            (name.clone(), value)
        })
        .collect()
}

fn from_wire(params: BTreeMap<String, WireValue>) -> Params {
    Params(
        params
            .into_iter()
            .map(|(name, value)| {
                let value = match value {
                    WireValue::Bool(b) => ParamValue::Bool(b),
                    WireValue::Int(i) => ParamValue::Int(i),
                    WireValue::FloatBits(bits) => ParamValue::Float(f64::from_bits(bits)),
                    WireValue::Str(s) => ParamValue::Str(s),
                };
                (name, value)
            })
            .collect(),
    )
}

/// Job specs as text, one JSON line each, for [`read_jobs`] in another process.
pub fn write_jobs<'a>(specs: impl IntoIterator<Item = &'a JobSpec>) -> String {
    let mut text = String::new();
    for s in specs {
        let wire = WireJob {
            family: s.family.clone(),
            benchmark: s.benchmark.clone(),
            benchmark_params: to_wire(&s.benchmark_params),
            algorithm: s.algorithm.clone(),
            algorithm_params: to_wire(&s.algorithm_params),
            seed: s.seed,
            horizon: s.horizon,
            sweep_seed: s.sweep_seed,
        };
        text.push_str(&serde_json::to_string(&wire).expect("a job spec serializes"));
        text.push('\n');
    }
    text
}

/// The job specs [`write_jobs`] wrote, exactly; an error names the line.
pub fn read_jobs(text: &str) -> Result<Vec<JobSpec>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let w: WireJob = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            Ok(JobSpec {
                family: w.family,
                benchmark: w.benchmark,
                benchmark_params: from_wire(w.benchmark_params),
                algorithm: w.algorithm,
                algorithm_params: from_wire(w.algorithm_params),
                seed: w.seed,
                horizon: w.horizon,
                sweep_seed: w.sweep_seed,
            })
        })
        .collect()
}

/// Each family's golden text for `specs` (validated against `registry`, run in order),
/// by family name, in the order the families first appear.
pub fn golden_texts(registry: &Registry, specs: &[JobSpec]) -> Result<Vec<(String, String)>, String> {
    let mut by_family: Vec<(String, Vec<ValidJob>)> = Vec::new();
    for spec in specs {
        let job = registry.validate(spec).map_err(|e| format!("{}/{}: {e}", spec.family, spec.benchmark))?;
        match by_family.iter_mut().find(|(f, _)| *f == spec.family) {
            Some((_, jobs)) => jobs.push(job),
            None => by_family.push((spec.family.clone(), vec![job])),
        }
    }
    by_family
        .into_iter()
        .map(|(name, jobs)| {
            let family = registry.family(&name).map_err(|e| e.to_string())?;
            Ok((name, render(family, &run(registry, &jobs))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_specs_cross_as_lines_exactly() {
        let mut spec = JobSpec::new("lse", "sinusoidal", "straddle");
        // A float whose shortest decimal form is long, its neighbour, a subnormal, -0.0.
        for (name, x) in [("a", 0.1 + 0.2), ("b", f64::from_bits((0.3f64).to_bits() + 1)), ("c", 5e-324), ("d", -0.0)] {
            spec.benchmark_params.insert(name.into(), ParamValue::Float(x));
        }
        spec.algorithm_params.insert("n".into(), ParamValue::Int(-7));
        spec.algorithm_params.insert("flag".into(), ParamValue::Bool(true));
        spec.algorithm_params.insert("rule".into(), ParamValue::Str("a \"quoted\"\nname".into()));
        (spec.seed, spec.horizon, spec.sweep_seed) = (3, 40, u64::MAX);
        let other = JobSpec::new("cvs", "plant", "proposed");
        let back = read_jobs(&write_jobs([&spec, &other])).unwrap();
        assert_eq!(back, vec![spec.clone(), other]);
        // Bits, not only values (-0.0 == 0.0).
        let bits = |p: &Params| p.iter().filter_map(|(_, v)| v.as_f64()).map(f64::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(&back[0].benchmark_params), bits(&spec.benchmark_params));
        let err = read_jobs("{\"family\": 3}\n").unwrap_err();
        assert!(err.starts_with("line 1: "), "{err}");
    }

    #[test]
    fn a_difference_is_named_by_job_step_and_metric() {
        let registry = paper_families();
        let family = registry.family("lse").unwrap();
        let metrics: Vec<&str> = family.metrics().iter().map(|m| m.name).collect();
        let row = |x: f64| {
            let mut line = "3".to_string();
            for _ in &metrics {
                write!(line, " {:016x}", x.to_bits()).unwrap();
            }
            line
        };
        let recorded = format!("version 1\njob k1 a\n{}\njob k2 b\n{}", row(1.0), row(2.0));
        let mut changed = row(2.0);
        changed.replace_range(changed.len() - 16.., &format!("{:016x}", 2.5f64.to_bits()));
        let computed = format!("version 1\njob k1 a\n{}\njob k2 b\n{changed}", row(1.0));
        let said = first_difference(family, &recorded, &computed);
        let last = metrics.last().unwrap();
        assert_eq!(said, format!("job k2 b\n  step 3, metric `{last}`: recorded 2e0, computed 2.5e0"));
        assert_eq!(
            first_difference(family, &recorded, "version 1\njob k3 c"),
            "a different job: recorded `job k1 a`, computed `job k3 c`"
        );
        assert_eq!(
            first_difference(family, &recorded, &recorded[..recorded.rfind('\n').unwrap()]),
            "a different number of lines (5 recorded, 4 computed)"
        );
        assert_eq!(recorded_version("# v\nversion 12\njob"), Some(12));
        assert_eq!(data("# comment\nversion 1\n# x\njob"), "version 1\njob");
    }
}
