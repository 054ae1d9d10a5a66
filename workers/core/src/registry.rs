//! The registry of families: names, parameter schemas, defaults and constructors.
//!
//! Validation happens once, before any work: [`Registry::validate`] checks every name
//! and parameter of a [`JobSpec`], fills in defaults, and returns a [`ValidJob`] whose
//! key is computed from the canonical, completed spec.

use std::sync::Arc;

use crate::{
    human_number, JobError, JobKey, JobSpec, JobStreams, MetricDef, Metrics, ParamDef, ParamKind, ParamValue,
    Parameters, Params, SpecError,
};

/// A benchmark or an algorithm of a family: its name, what it is, its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComponentDef {
    pub name: &'static str,
    pub doc: &'static str,
    pub params: &'static [ParamDef],
}

impl ComponentDef {
    /// A component whose parameters are the struct `P` ([`crate::params!`]).
    pub const fn new<P: Parameters>(name: &'static str, doc: &'static str) -> Self {
        ComponentDef { name, doc, params: P::DEFS }
    }

    /// A component without parameters.
    pub const fn bare(name: &'static str, doc: &'static str) -> Self {
        ComponentDef { name, doc, params: &[] }
    }
}

/// A running job: plain synchronous code that yields the metrics of one step at a time,
/// built by name as its family's [`Metrics`] struct.
pub trait Episode {
    type Metrics: Metrics;
    /// Metrics of step 0: the state after the initial design, before any acquisition.
    fn initial(&mut self) -> Result<Self::Metrics, JobError>;
    /// Perform acquisition `step` (1-based) and return the metrics after it, or `None` when
    /// the episode has ended before it (a budget spent): the trajectory is then steps
    /// `0..step`. Only a family whose [`Declaration::ends_early`] says so may end early.
    fn step(&mut self, step: u32) -> Result<Option<Self::Metrics>, JobError>;
}

/// An [`Episode`] whose metrics are a record's values: what [`Family::start`] returns and
/// [`crate::run_job`] drives. Every `Episode` is one; nothing else implements it.
pub trait AnyEpisode {
    /// The metrics its records carry, in order.
    fn metrics(&self) -> &'static [MetricDef];
    fn initial_values(&mut self) -> Result<Vec<f64>, JobError>;
    fn step_values(&mut self, step: u32) -> Result<Option<Vec<f64>>, JobError>;
}

impl<E: Episode> AnyEpisode for E {
    fn metrics(&self) -> &'static [MetricDef] {
        E::Metrics::defs()
    }
    fn initial_values(&mut self) -> Result<Vec<f64>, JobError> {
        Ok(self.initial()?.into_values())
    }
    fn step_values(&mut self, step: u32) -> Result<Option<Vec<f64>>, JobError> {
        Ok(self.step(step)?.map(Metrics::into_values))
    }
}

/// What a family declares once, as a constant: its name, version, benchmarks and
/// algorithms with their parameter schemas, and its metrics. Validation, `armada list`,
/// ServerInfo, the job keys and the summaries all read it.
#[derive(Clone, Copy, Debug)]
pub struct Declaration {
    pub name: &'static str,
    /// The version of what this family's jobs compute, part of every job key
    /// ([`crate::key_salt`]). Bump it with any change that alters a trajectory of one of its
    /// jobs, and say why beside it: its results of older code are then no longer resumed,
    /// and its golden trajectories (`tests/numerics/golden.rs`) are regenerated.
    pub version: u32,
    pub doc: &'static str,
    pub benchmarks: &'static [ComponentDef],
    pub algorithms: &'static [ComponentDef],
    /// The metrics of every step, in the order of [`crate::StepRecord::values`]: the
    /// `DEFS` of the family's [`metrics!`](crate::metrics) struct.
    pub metrics: &'static [MetricDef],
    /// An episode may end before its horizon ([`Episode::step`] returns `None`), so its
    /// trajectory has steps `0..=last` for some `last <= horizon`. Otherwise every
    /// trajectory has every step `0..=horizon`, and a shorter one is an error.
    pub ends_early: bool,
    /// The metrics a terminal summary shows (all float metrics when empty).
    pub headline_metrics: &'static [&'static str],
    /// Monotone metrics (e.g. cumulative cost) whose common grid the summaries also
    /// aggregate along, besides the step: one `along_<metric>.parquet` per name.
    pub summary_axes: &'static [&'static str],
}

/// A family crate's entry point: its [`Declaration`], its cross-field checks and its
/// constructor.
pub trait Family: Send + Sync {
    fn declaration(&self) -> &'static Declaration;
    fn name(&self) -> &'static str {
        self.declaration().name
    }
    fn version(&self) -> u32 {
        self.declaration().version
    }
    fn doc(&self) -> &'static str {
        self.declaration().doc
    }
    fn benchmarks(&self) -> &'static [ComponentDef] {
        self.declaration().benchmarks
    }
    fn algorithms(&self) -> &'static [ComponentDef] {
        self.declaration().algorithms
    }
    fn metrics(&self) -> &'static [MetricDef] {
        self.declaration().metrics
    }
    fn headline_metrics(&self) -> &'static [&'static str] {
        self.declaration().headline_metrics
    }
    fn summary_axes(&self) -> &'static [&'static str] {
        self.declaration().summary_axes
    }
    fn ends_early(&self) -> bool {
        self.declaration().ends_early
    }
    /// The digest of the family's declaration when it was declared at run time (by a
    /// worker or a client) rather than built in: it salts the family's job keys.
    fn declared_digest(&self) -> Option<&str> {
        None
    }
    /// For a family declared as an extension of a built-in one: that family's name. The
    /// extension's jobs are that family's jobs (their specs name it, so they draw its
    /// environment streams: common random numbers with its own algorithms), on its
    /// benchmarks and with its metrics; only their algorithms are the extension's.
    fn extends(&self) -> Option<&str> {
        None
    }
    /// The benchmarks `algorithm` runs, when its declaration limits them (a declared
    /// family's or extension's algorithm); empty: all of its family's.
    fn supported_benchmarks(&self, _algorithm: &str) -> &[String] {
        &[]
    }
    /// For a declared family: the digest of the code that computes its trajectories, as
    /// its workers' SDK computed it (empty when it said none, and for a built-in family).
    fn code(&self) -> &str {
        ""
    }
    /// How the coordinator refers to this very declaration: the name for a built-in family,
    /// `name+digest` for a declared one ([`Registry::resolve`] finds it again).
    fn reference(&self) -> String {
        match self.declared_digest() {
            None => self.name().to_string(),
            Some(digest) => format!("{}+{digest}", self.name()),
        }
    }
    /// What starts the canonical text of the family's job keys: [`crate::key_salt`] of
    /// its version, and for a declared family its digest too, so that two declarations
    /// never share a key.
    fn key_salt(&self) -> String {
        match self.declared_digest() {
            None => crate::key_salt(self.version()),
            Some(digest) => format!("{}+{digest}", crate::key_salt(self.version())),
        }
    }
    /// Checks across fields that parameter schemas cannot express (an algorithm that does
    /// not apply to a benchmark, parameters that must agree). Runs during validation, so a
    /// bad combination is refused before anything is queued.
    fn check(&self, _spec: &JobSpec) -> Result<(), SpecError> {
        Ok(())
    }
    /// The part of [`Family::check`] that concerns the benchmark alone, which jobs of an
    /// extension's algorithms pass too. A family with such checks calls it from `check`.
    fn check_benchmark(&self, _spec: &JobSpec) -> Result<(), SpecError> {
        Ok(())
    }
    /// Start a validated job. Randomness must come only from `streams`.
    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError>;
}

/// A job whose spec passed validation: complete, canonical, and keyed.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidJob {
    pub spec: JobSpec,
    pub key: JobKey,
}

impl ValidJob {
    /// A short human description of the job for messages.
    pub fn describe(&self) -> String {
        let s = &self.spec;
        format!(
            "{}/{}{} x {}{} seed {} ({})",
            s.family, s.benchmark, s.benchmark_params, s.algorithm, s.algorithm_params, s.seed, self.key
        )
    }
}

/// All families known: those of this build, and on a coordinator those declared since.
#[derive(Clone)]
pub struct Registry {
    families: Vec<Arc<dyn Family>>,
}

impl Registry {
    pub fn new(families: Vec<Box<dyn Family>>) -> Self {
        Registry { families: families.into_iter().map(Arc::from).collect() }
    }

    /// This registry and `family` (a declared one: several versions of a name may stand,
    /// and several revisions of a version), last of them, in place of one with its reference.
    pub fn with(&self, family: Arc<dyn Family>) -> Registry {
        let reference = family.reference();
        let mut families: Vec<_> = self.families.iter().filter(|f| f.reference() != reference).cloned().collect();
        families.push(family);
        Registry { families }
    }

    /// This registry without the family of `reference` (a declared one that was removed).
    pub fn without(&self, reference: &str) -> Registry {
        Registry { families: self.families.iter().filter(|f| f.reference() != reference).cloned().collect() }
    }

    pub fn families(&self) -> impl Iterator<Item = &dyn Family> {
        self.families.iter().map(|f| f.as_ref())
    }

    /// The family of this name; of a declared name, its newest version (of its revisions,
    /// the last declared).
    pub fn family(&self, name: &str) -> Result<&dyn Family, SpecError> {
        self.newest(name).map(|f| f.as_ref()).ok_or_else(|| {
            let mut known: Vec<&str> = self.families().map(|f| f.name()).collect();
            known.dedup();
            SpecError::new("family", format!("unknown family `{name}`; known: {}", known.join(", ")))
        })
    }

    /// The family of this name as a shared handle (an extension keeps its base's).
    pub fn shared(&self, name: &str) -> Option<Arc<dyn Family>> {
        self.newest(name).cloned()
    }

    fn newest(&self, name: &str) -> Option<&Arc<dyn Family>> {
        // `max_by_key` takes the last of equal versions.
        self.families.iter().filter(|f| f.name() == name).max_by_key(|f| f.version())
    }

    /// The family whose algorithm `algorithm` is among the jobs of family `family`: that
    /// family when it declares it, or else the one extension of it (in its newest version)
    /// that does.
    pub fn declaring(&self, family: &str, algorithm: &str) -> Result<&dyn Family, SpecError> {
        let base = self.family(family)?;
        if base.algorithms().iter().any(|a| a.name == algorithm) {
            return Ok(base);
        }
        let newest = |f: &&dyn Family| self.family(f.name()).is_ok_and(|n| n.reference() == f.reference());
        let extensions: Vec<&dyn Family> =
            self.families().filter(|f| f.extends() == Some(base.name())).filter(newest).collect();
        let declaring: Vec<&dyn Family> =
            extensions.iter().copied().filter(|f| f.algorithms().iter().any(|a| a.name == algorithm)).collect();
        match declaring[..] {
            [one] => Ok(one),
            [] => {
                let allowed = base.algorithms().iter().chain(extensions.iter().flat_map(|f| f.algorithms()));
                let allowed: Vec<&str> = allowed.map(|a| a.name).collect();
                Err(SpecError::new(
                    "algorithm",
                    format!("unknown algorithm `{algorithm}` in family `{family}`; allowed: {}", allowed.join(", ")),
                ))
            }
            _ => {
                let names: Vec<&str> = declaring.iter().map(|f| f.name()).collect();
                Err(SpecError::new(
                    "algorithm",
                    format!(
                        "`{algorithm}` is declared by several extensions of family `{family}` ({}); a sweep can \
                         name it only while one of them declares it",
                        names.join(", ")
                    ),
                ))
            }
        }
    }

    /// The family a [`Family::reference`] names: a built-in family by name, a declared one
    /// by name and digest, whatever versions were declared since.
    pub fn resolve(&self, reference: &str) -> Result<&dyn Family, SpecError> {
        match reference.split_once('+') {
            None => self.family(reference),
            Some((name, digest)) => {
                self.families().find(|f| f.name() == name && f.declared_digest() == Some(digest)).ok_or_else(|| {
                    SpecError::new("family", format!("no declaration of family `{name}` has digest {digest}"))
                })
            }
        }
    }

    /// A digest of everything that decides what a job is: each built-in family's name, version,
    /// benchmarks, algorithms (with their parameter schemas and defaults) and metrics.
    /// A worker and a coordinator with the same digest compute the same jobs from the same
    /// specs; the coordinator refuses a worker whose digest differs.
    pub fn digest(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        hasher.update(crate::STREAM_SALT.as_bytes());
        for f in self.families().filter(|f| f.declared_digest().is_none()) {
            let schema = format!(
                "\n{};v{};{:?};{:?};{:?};ends_early={}",
                f.name(),
                f.version(),
                f.benchmarks(),
                f.algorithms(),
                f.metrics(),
                f.ends_early()
            );
            hasher.update(schema.as_bytes());
        }
        hasher.finalize().to_hex()[..16].to_string()
    }

    /// Check names and parameters, fill defaults, and key the completed spec.
    pub fn validate(&self, spec: &JobSpec) -> Result<ValidJob, SpecError> {
        validate_as(self.declaring(&spec.family, &spec.algorithm)?, spec)
    }
}

/// [`Registry::validate`] for the given declaration of the spec's family.
pub fn validate_as(family: &dyn Family, spec: &JobSpec) -> Result<ValidJob, SpecError> {
    if spec.family != family.name() && Some(spec.family.as_str()) != family.extends() {
        let of = family.extends().map_or(String::new(), |base| format!(" (an extension of `{base}`)"));
        return Err(SpecError::new("family", format!("`{}` is not family `{}`{of}", spec.family, family.name())));
    }
    let bench = find_component(family.benchmarks(), &spec.benchmark, "benchmark", family.name())?;
    let algo = find_component(family.algorithms(), &spec.algorithm, "algorithm", family.name())?;
    let mut complete = spec.clone();
    complete.benchmark_params =
        check_params(bench, &spec.benchmark_params).map_err(|e| e.within("benchmark_params"))?;
    complete.algorithm_params = check_params(algo, &spec.algorithm_params).map_err(|e| e.within("algorithm_params"))?;
    if !(1..=MAX_HORIZON).contains(&complete.horizon) {
        return Err(SpecError::new(
            "horizon",
            format!("{} is out of range; expected an integer in [1, {MAX_HORIZON}]", complete.horizon),
        ));
    }
    if complete.seed > MAX_SEED {
        return Err(SpecError::new(
            "seed",
            format!(
                "{} is out of range; expected an integer in [0, {MAX_SEED}] (trajectories store it as Int64)",
                complete.seed
            ),
        ));
    }
    family.check(&complete)?;
    let key = complete.key_salted(&family.key_salt());
    Ok(ValidJob { spec: complete, key })
}

/// The longest horizon a job may have: steps are numbered 0..=horizon, and a trajectory
/// of more rows than this is beyond any experiment (and any disk) armada is meant for.
pub const MAX_HORIZON: u32 = 100_000_000;

/// The largest seed index: trajectories store it as a signed 64-bit integer.
pub const MAX_SEED: u64 = i64::MAX as u64;

/// Check one parameter value given for `def` (its name must be one of `def`'s), without
/// completing the others: sweep files check each grid value before expanding the grid.
pub fn check_param(def: &ComponentDef, name: &str, value: &ParamValue) -> Result<(), SpecError> {
    let Some(p) = def.params.iter().find(|p| p.name == name) else {
        let allowed: Vec<_> = def.params.iter().map(|p| p.name).collect();
        let allowed = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
        return Err(SpecError::new(name, format!("unknown parameter of `{}`; allowed: {allowed}", def.name)));
    };
    check_value(&p.kind, value).map(|_| ()).map_err(|m| SpecError::new(name, m))
}

/// Look up a benchmark or algorithm by name; the error lists the names there are.
pub fn find_component(
    defs: &'static [ComponentDef],
    name: &str,
    what: &str,
    family: &str,
) -> Result<&'static ComponentDef, SpecError> {
    defs.iter().find(|d| d.name == name).ok_or_else(|| {
        SpecError::new(
            what,
            format!(
                "unknown {what} `{name}` in family `{family}`; allowed: {}",
                defs.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
            ),
        )
    })
}

/// Validate `given` against the schema of `def` and return the completed parameters.
pub fn check_params(def: &ComponentDef, given: &Params) -> Result<Params, SpecError> {
    for (name, value) in &given.0 {
        check_param(def, name, value)?;
    }
    let mut out = Params::new();
    for p in def.params {
        let value = match given.get(p.name) {
            None => default_value(&p.kind),
            Some(v) => check_value(&p.kind, v).map_err(|m| SpecError::new(p.name, m))?,
        };
        out.insert(p.name.to_string(), value);
    }
    Ok(out)
}

fn default_value(kind: &ParamKind) -> ParamValue {
    match *kind {
        ParamKind::Float { default, .. } => ParamValue::Float(default),
        ParamKind::Int { default, .. } => ParamValue::Int(default),
        ParamKind::Bool { default } => ParamValue::Bool(default),
        ParamKind::Choice { default, .. } => ParamValue::Str(default.to_string()),
    }
}

fn check_value(kind: &ParamKind, v: &ParamValue) -> Result<ParamValue, String> {
    match (*kind, v) {
        (ParamKind::Float { min, max, .. }, ParamValue::Float(_) | ParamValue::Int(_)) => {
            let x = v.as_f64().unwrap_or(f64::NAN);
            if x.is_finite() && (min..=max).contains(&x) {
                Ok(ParamValue::Float(x))
            } else {
                Err(format!("{} is out of range; expected {}", human_number(x), kind.describe()))
            }
        }
        (ParamKind::Int { min, max, .. }, ParamValue::Int(x)) => {
            if (min..=max).contains(x) {
                Ok(ParamValue::Int(*x))
            } else {
                Err(format!("{x} is out of range; expected {}", kind.describe()))
            }
        }
        (ParamKind::Bool { .. }, ParamValue::Bool(b)) => Ok(ParamValue::Bool(*b)),
        (ParamKind::Choice { options, .. }, ParamValue::Str(s)) => {
            if options.contains(&s.as_str()) {
                Ok(ParamValue::Str(s.clone()))
            } else {
                Err(format!("`{s}` is not allowed; expected one of: {}", options.join(", ")))
            }
        }
        (kind, v) => Err(format!("expected {}, got {}", kind.describe(), v.type_name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEF: ComponentDef = ComponentDef {
        name: "straddle",
        doc: "",
        params: &[
            ParamDef { name: "beta_sqrt", kind: ParamKind::Float { min: 0.0, max: 100.0, default: 3.0 }, doc: "" },
            ParamDef {
                name: "tie_break",
                kind: ParamKind::Choice { options: &["first", "random"], default: "first" },
                doc: "",
            },
        ],
    };

    fn params(pairs: &[(&str, ParamValue)]) -> Params {
        let mut p = Params::new();
        for (k, v) in pairs {
            p.insert(k.to_string(), v.clone());
        }
        p
    }

    #[test]
    fn defaults_are_filled_and_ints_widen_to_floats() {
        let out = check_params(&DEF, &params(&[("beta_sqrt", ParamValue::Int(2))])).unwrap();
        assert_eq!(out.get("beta_sqrt"), Some(&ParamValue::Float(2.0)));
        assert_eq!(out.get("tie_break"), Some(&ParamValue::Str("first".into())));
        // An explicit default and an omitted one give the same canonical parameters.
        let explicit = check_params(&DEF, &params(&[("tie_break", ParamValue::Str("first".into()))])).unwrap();
        assert_eq!(explicit, check_params(&DEF, &Params::new()).unwrap());
    }

    #[test]
    fn errors_name_the_field_and_the_allowed_values() {
        let e = check_params(&DEF, &params(&[("beta", ParamValue::Float(1.0))])).unwrap_err();
        assert_eq!(e.field_path, "beta");
        assert!(e.message.contains("allowed: beta_sqrt, tie_break"), "{e}");
        let e = check_params(&DEF, &params(&[("beta_sqrt", ParamValue::Str("x".into()))])).unwrap_err();
        assert_eq!(e.to_string(), "beta_sqrt: expected a float in [0, 100], got a string");
        let e = check_params(&DEF, &params(&[("beta_sqrt", ParamValue::Float(-1.0))])).unwrap_err();
        assert!(e.message.contains("out of range"), "{e}");
        let e = check_params(&DEF, &params(&[("tie_break", ParamValue::Str("last".into()))])).unwrap_err();
        assert_eq!(e.to_string(), "tie_break: `last` is not allowed; expected one of: first, random");
        assert_eq!(e.within("algorithm[0].params").field_path, "algorithm[0].params.tie_break");
    }
}
