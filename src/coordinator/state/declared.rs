//! Families as data: a family's declaration in its wire form (`FamilyInfo`), checked by
//! the rules service.proto states, digested, compared with the one kept under the same
//! name and version, and made a [`Family`] that validates sweeps and keys jobs exactly as
//! a built-in family does. Its jobs run on the workers that declared it, never here.

use armada_core::{
    AnyEpisode, ComponentDef, Declaration, Family, JobError, JobSpec, JobStreams, MetricDef, MetricKind, ParamDef,
    ParamKind, ParamValue, Registry, SpecError, ValidJob,
};
use armada_proto::v1 as pb;
use armada_proto::wire;
use prost::Message;
use std::collections::HashSet;
use std::sync::Arc;

/// Declarations one coordinator keeps at most. Each accepted declaration lives as long as
/// the process (its names become the `&'static str` of a [`Declaration`]), so the count
/// and the size of each are what bound that memory: at most 64 MiB.
pub const MAX_DECLARATIONS: usize = 256;
pub const MAX_DECLARATION_BYTES: usize = 256 * 1024;
const MAX_NAME_LEN: usize = 64;
const MAX_DOC_LEN: usize = 4096;
const MAX_ITEMS: usize = 256;
/// Integer parameter ranges travel as doubles: beyond 2^53 they would not be exact.
const MAX_EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// A declaration that follows the rules: its wire form without the fields that only
/// answers carry, and its digest.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    pub info: pb::FamilyInfo,
    pub digest: String,
}

/// What decides a declaration's jobs: the declaration without what only presents it
/// (docs, headline metrics), which may change without a new digest.
pub fn identity(info: &pb::FamilyInfo) -> pb::FamilyInfo {
    let mut info = info.clone();
    info.doc.clear();
    info.headline_metrics.clear();
    for c in info.benchmarks.iter_mut().chain(&mut info.algorithms) {
        c.doc.clear();
        c.params.iter_mut().for_each(|p| p.doc.clear());
    }
    info.metrics.iter_mut().for_each(|m| m.doc.clear());
    info
}

/// The first 16 hex digits of BLAKE3 over the encoding of the declaration's [`identity`]
/// (prost writes fields in number order and the message has no maps, so the bytes are
/// canonical).
pub fn digest(info: &pb::FamilyInfo) -> String {
    hex16(&identity(info).encode_to_vec())
}

/// The digest of stores made before docs were left out of it: over the whole declaration.
/// Their declarations keep it, so that their sweeps' jobs keep their keys.
pub fn legacy_digest(info: &pb::FamilyInfo) -> String {
    hex16(&info.encode_to_vec())
}

fn hex16(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..16].to_string()
}

/// Check `info` against the declaration rules; `builtin` holds the names it may not take.
pub fn check(mut info: pb::FamilyInfo, builtin: &Registry) -> Result<Checked, SpecError> {
    // What only answers carry is not part of a declaration.
    info.key_salt.clear();
    info.declared = false;
    info.digest.clear();
    info.abridged = false;
    let size = info.encoded_len();
    if size > MAX_DECLARATION_BYTES {
        return Err(SpecError::new("", format!("the declaration takes {size} bytes, over {MAX_DECLARATION_BYTES}")));
    }
    let name = &info.name;
    if name.is_empty()
        || name.len() > MAX_NAME_LEN
        || !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err(SpecError::new(
            "name",
            format!(
                "`{}` is not a family name; use 1 to {MAX_NAME_LEN} of a-z, 0-9, '_' and '-', starting with a letter",
                shorten(name)
            ),
        ));
    }
    if builtin.families().any(|f| f.name() == name) {
        return Err(SpecError::new("name", format!("`{name}` is a built-in family of this coordinator")));
    }
    if info.version == 0 {
        return Err(SpecError::new("version", "0 is not a version; versions start at 1"));
    }
    check_doc(&info.doc, "doc")?;
    if info.code.len() > MAX_NAME_LEN || !info.code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err(SpecError::new(
            "code",
            format!("`{}` is not a code digest; use at most {MAX_NAME_LEN} of a-z and 0-9", shorten(&info.code)),
        ));
    }
    let base = match info.extends.as_str() {
        "" => None,
        _ => Some(check_extension(&info, builtin)?),
    };
    for (field, components) in [("benchmarks", &info.benchmarks), ("algorithms", &info.algorithms)] {
        if base.is_some() && field == "benchmarks" {
            continue;
        }
        check_count(components.len(), field)?;
        let mut names = HashSet::new();
        for (i, c) in components.iter().enumerate() {
            let at = format!("{field}[{i}]");
            check_item_name(&c.name, &format!("{at}.name"), &mut names)?;
            if let Some(base) = base.filter(|b| b.algorithms().iter().any(|a| a.name == c.name)) {
                return Err(SpecError::new(
                    format!("{at}.name"),
                    format!("`{}` is an algorithm of `{}`; name yours otherwise", c.name, base.name()),
                ));
            }
            check_doc(&c.doc, &format!("{at}.doc"))?;
            if c.params.len() > MAX_ITEMS {
                return Err(SpecError::new(
                    format!("{at}.params"),
                    format!("{} parameters, over {MAX_ITEMS}", c.params.len()),
                ));
            }
            check_supported(c, field, &at, &info, base)?;
            let mut param_names = HashSet::new();
            for (j, p) in c.params.iter().enumerate() {
                let at = format!("{at}.params[{j}]");
                check_item_name(&p.name, &format!("{at}.name"), &mut param_names)?;
                check_doc(&p.doc, &format!("{at}.doc"))?;
                param_kind(p).map_err(|e| e.within(&at))?;
            }
        }
    }
    if base.is_some() {
        let digest = digest(&info);
        return Ok(Checked { info, digest });
    }
    check_count(info.metrics.len(), "metrics")?;
    let mut metric_names = HashSet::new();
    for (i, m) in info.metrics.iter().enumerate() {
        let at = format!("metrics[{i}]");
        check_item_name(&m.name, &format!("{at}.name"), &mut metric_names)?;
        if crate::results::schema::is_fixed_column(&m.name) {
            return Err(SpecError::new(
                format!("{at}.name"),
                format!("`{}` is a trajectory column; name the metric otherwise", m.name),
            ));
        }
        check_doc(&m.doc, &format!("{at}.doc"))?;
        metric_kind(m.kind).ok_or_else(|| SpecError::new(format!("{at}.kind"), "expected FLOAT or INT"))?;
    }
    for (i, n) in info.headline_metrics.iter().enumerate() {
        if !info.metrics.iter().any(|m| m.name == *n) {
            return Err(SpecError::new(
                format!("headline_metrics[{i}]"),
                format!("`{}` is not a metric of the family", shorten(n)),
            ));
        }
    }
    for (i, n) in info.summary_axes.iter().enumerate() {
        let float = info.metrics.iter().any(|m| m.name == *n && metric_kind(m.kind) == Some(MetricKind::Float));
        if !float {
            return Err(SpecError::new(
                format!("summary_axes[{i}]"),
                format!("`{}` is not a FLOAT metric of the family", shorten(n)),
            ));
        }
    }
    let digest = digest(&info);
    Ok(Checked { info, digest })
}

/// An algorithm's supported benchmarks are distinct benchmarks of its family (an
/// extension's: the family it extends); a benchmark names none.
fn check_supported(
    c: &pb::ComponentInfo,
    field: &str,
    at: &str,
    info: &pb::FamilyInfo,
    base: Option<&dyn Family>,
) -> Result<(), SpecError> {
    if field == "benchmarks" {
        return match c.benchmarks.is_empty() {
            true => Ok(()),
            false => {
                Err(SpecError::new(format!("{at}.benchmarks"), "only an algorithm names the benchmarks it supports"))
            }
        };
    }
    let known: Vec<&str> = match base {
        Some(base) => base.benchmarks().iter().map(|b| b.name).collect(),
        None => info.benchmarks.iter().map(|b| b.name.as_str()).collect(),
    };
    let mut seen = HashSet::new();
    for (j, name) in c.benchmarks.iter().enumerate() {
        if !known.contains(&name.as_str()) {
            return Err(SpecError::new(
                format!("{at}.benchmarks[{j}]"),
                format!("`{}` is not a benchmark of the family; allowed: {}", shorten(name), known.join(", ")),
            ));
        }
        if !seen.insert(name) {
            return Err(SpecError::new(format!("{at}.benchmarks[{j}]"), format!("`{name}` twice")));
        }
    }
    Ok(())
}

/// The rules of an extension (everything but its algorithms is its family's); the
/// built-in family it extends.
fn check_extension<'a>(info: &pb::FamilyInfo, builtin: &'a Registry) -> Result<&'a dyn Family, SpecError> {
    let Some(base) = builtin.families().find(|f| f.name() == info.extends) else {
        let known: Vec<&str> = builtin.families().map(|f| f.name()).collect();
        return Err(SpecError::new(
            "extends",
            format!(
                "`{}` is not a built-in family of this coordinator (an extension extends one of: {})",
                shorten(&info.extends),
                known.join(", ")
            ),
        ));
    };
    let inherited = [
        ("benchmarks", info.benchmarks.len()),
        ("metrics", info.metrics.len()),
        ("headline_metrics", info.headline_metrics.len()),
        ("summary_axes", info.summary_axes.len()),
    ];
    if let Some((field, _)) = inherited.iter().find(|(_, n)| *n > 0) {
        return Err(SpecError::new(*field, format!("an extension of `{}` has its {field}; declare none", base.name())));
    }
    if info.ends_early {
        return Err(SpecError::new("ends_early", format!("an extension of `{}` ends as its jobs end", base.name())));
    }
    Ok(base)
}

/// A family as ServerInfo gives it beyond its size budget: what names it, without its
/// components and metrics (DescribeFamily gives it whole).
pub fn abridged(info: pb::FamilyInfo) -> pb::FamilyInfo {
    pb::FamilyInfo {
        benchmarks: Vec::new(),
        algorithms: Vec::new(),
        metrics: Vec::new(),
        headline_metrics: Vec::new(),
        summary_axes: Vec::new(),
        abridged: true,
        ..info
    }
}

/// A declaration as it was declared: an extension's answers carry its family's
/// benchmarks and metrics, which it did not declare.
pub fn as_declared(mut info: pb::FamilyInfo) -> pb::FamilyInfo {
    if !info.extends.is_empty() {
        info.benchmarks.clear();
        info.metrics.clear();
        info.headline_metrics.clear();
        info.summary_axes.clear();
        info.ends_early = false;
    }
    pb::FamilyInfo { key_salt: String::new(), declared: false, digest: String::new(), abridged: false, ..info }
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(80).collect::<String>())
    }
}

fn check_count(n: usize, field: &str) -> Result<(), SpecError> {
    if n == 0 {
        return Err(SpecError::new(field, "declare at least one"));
    }
    if n > MAX_ITEMS {
        return Err(SpecError::new(field, format!("{n} declared, over {MAX_ITEMS}")));
    }
    Ok(())
}

fn check_doc(doc: &str, field: &str) -> Result<(), SpecError> {
    match doc.chars().count() {
        n if n > MAX_DOC_LEN => Err(SpecError::new(field, format!("{n} characters, over {MAX_DOC_LEN}"))),
        _ => Ok(()),
    }
}

fn check_item_name<'a>(name: &'a str, field: &str, seen: &mut HashSet<&'a str>) -> Result<(), SpecError> {
    let usable = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !usable {
        return Err(SpecError::new(
            field,
            format!(
                "`{}` is not a usable name; use 1 to {MAX_NAME_LEN} of A-Z, a-z, 0-9, '_', '.' and '-'",
                shorten(name)
            ),
        ));
    }
    if !seen.insert(name) {
        return Err(SpecError::new(field, format!("`{name}` is declared twice")));
    }
    Ok(())
}

fn metric_kind(kind: i32) -> Option<MetricKind> {
    match pb::metric_info::Kind::try_from(kind) {
        Ok(pb::metric_info::Kind::Float) => Some(MetricKind::Float),
        Ok(pb::metric_info::Kind::Int) => Some(MetricKind::Int),
        _ => None,
    }
}

/// A parameter's kind with its own (not yet `'static`) choices.
enum Kind {
    Float { min: f64, max: f64, default: f64 },
    Int { min: i64, max: i64, default: i64 },
    Bool { default: bool },
    Choice { options: Vec<String>, default: String },
}

fn param_kind(p: &pb::ParamInfo) -> Result<Kind, SpecError> {
    use pb::param_info::Kind as K;
    use pb::param_value::Kind as V;
    let default = p.default.as_ref().and_then(|d| d.kind.as_ref());
    let range = |what: &str| -> Result<(), SpecError> {
        if !(p.min.is_finite() && p.max.is_finite() && p.min <= p.max) {
            return Err(SpecError::new("min", format!("[{}, {}] is not a finite range of {what}s", p.min, p.max)));
        }
        Ok(())
    };
    let outside = |x: f64| SpecError::new("default", format!("{x} is outside [{}, {}]", p.min, p.max));
    match K::try_from(p.kind) {
        Ok(K::Float) => {
            range("float")?;
            match default {
                Some(&V::Float(d)) if (p.min..=p.max).contains(&d) => {
                    Ok(Kind::Float { min: p.min, max: p.max, default: d })
                }
                Some(&V::Float(d)) => Err(outside(d)),
                _ => Err(SpecError::new("default", "a FLOAT parameter needs a float default")),
            }
        }
        Ok(K::Int) => {
            range("integer")?;
            let integral = |x: f64| x.fract() == 0.0 && x.abs() <= MAX_EXACT_INT;
            if !(integral(p.min) && integral(p.max)) {
                return Err(SpecError::new(
                    "min",
                    format!("[{}, {}] is not an integral range within +-2^53", p.min, p.max),
                ));
            }
            match default {
                Some(&V::Int(d)) if (p.min..=p.max).contains(&(d as f64)) => {
                    Ok(Kind::Int { min: p.min as i64, max: p.max as i64, default: d })
                }
                Some(&V::Int(d)) => Err(outside(d as f64)),
                _ => Err(SpecError::new("default", "an INT parameter needs an int default")),
            }
        }
        Ok(K::Bool) => match default {
            Some(&V::Flag(d)) => Ok(Kind::Bool { default: d }),
            _ => Err(SpecError::new("default", "a BOOL parameter needs a flag default")),
        },
        Ok(K::Choice) => {
            if p.choices.is_empty() || p.choices.len() > MAX_ITEMS {
                return Err(SpecError::new(
                    "choices",
                    format!("{} choices; declare 1 to {MAX_ITEMS}", p.choices.len()),
                ));
            }
            let mut seen = HashSet::new();
            for (i, c) in p.choices.iter().enumerate() {
                if c.is_empty() || c.len() > MAX_NAME_LEN || c.contains(['"', '\\']) || c.chars().any(char::is_control)
                {
                    return Err(SpecError::new(
                        format!("choices[{i}]"),
                        format!("`{}` is not a usable choice; use 1 to {MAX_NAME_LEN} characters, no quotes, backslashes or control characters", shorten(c)),
                    ));
                }
                if !seen.insert(c) {
                    return Err(SpecError::new(format!("choices[{i}]"), format!("`{c}` is declared twice")));
                }
            }
            match default {
                Some(V::Text(d)) if p.choices.contains(d) => {
                    Ok(Kind::Choice { options: p.choices.clone(), default: d.clone() })
                }
                Some(V::Text(d)) => {
                    Err(SpecError::new("default", format!("`{}` is not one of the choices", shorten(d))))
                }
                _ => Err(SpecError::new("default", "a CHOICE parameter needs a text default")),
            }
        }
        _ => Err(SpecError::new("kind", "expected FLOAT, INT, BOOL or CHOICE")),
    }
}

/// The first field in which two declarations of one name and version differ, as a path
/// (`algorithms[1].params[0].default`), for the message that refuses the second.
pub fn first_difference(kept: &pb::FamilyInfo, new: &pb::FamilyInfo) -> String {
    fn diff<T: PartialEq>(a: &T, b: &T, path: &str) -> Option<String> {
        (a != b).then(|| path.to_string())
    }
    fn list<T: PartialEq>(
        a: &[T],
        b: &[T],
        path: &str,
        item: impl Fn(&T, &T, &str) -> Option<String>,
    ) -> Option<String> {
        if a.len() != b.len() {
            return Some(format!("{path} (kept: {}, now: {})", a.len(), b.len()));
        }
        a.iter().zip(b).enumerate().find_map(|(i, (x, y))| item(x, y, &format!("{path}[{i}]")))
    }
    let param = |a: &pb::ParamInfo, b: &pb::ParamInfo, at: &str| {
        diff(&a.name, &b.name, &format!("{at}.name"))
            .or_else(|| diff(&a.kind, &b.kind, &format!("{at}.kind")))
            .or_else(|| diff(&a.min.to_bits(), &b.min.to_bits(), &format!("{at}.min")))
            .or_else(|| diff(&a.max.to_bits(), &b.max.to_bits(), &format!("{at}.max")))
            .or_else(|| diff(&a.choices, &b.choices, &format!("{at}.choices")))
            .or_else(|| diff(&a.default, &b.default, &format!("{at}.default")))
            .or_else(|| diff(&a.doc, &b.doc, &format!("{at}.doc")))
    };
    let component = |a: &pb::ComponentInfo, b: &pb::ComponentInfo, at: &str| {
        diff(&a.name, &b.name, &format!("{at}.name"))
            .or_else(|| list(&a.params, &b.params, &format!("{at}.params"), param))
            .or_else(|| diff(&a.doc, &b.doc, &format!("{at}.doc")))
    };
    let metric = |a: &pb::MetricInfo, b: &pb::MetricInfo, at: &str| {
        diff(&a.name, &b.name, &format!("{at}.name"))
            .or_else(|| diff(&a.kind, &b.kind, &format!("{at}.kind")))
            .or_else(|| diff(&a.doc, &b.doc, &format!("{at}.doc")))
    };
    list(&kept.benchmarks, &new.benchmarks, "benchmarks", component)
        .or_else(|| list(&kept.algorithms, &new.algorithms, "algorithms", component))
        .or_else(|| list(&kept.metrics, &new.metrics, "metrics", metric))
        .or_else(|| diff(&kept.ends_early, &new.ends_early, "ends_early"))
        .or_else(|| diff(&kept.headline_metrics, &new.headline_metrics, "headline_metrics"))
        .or_else(|| diff(&kept.summary_axes, &new.summary_axes, "summary_axes"))
        .or_else(|| diff(&kept.extends, &new.extends, "extends"))
        .or_else(|| diff(&kept.doc, &new.doc, "doc"))
        .unwrap_or_else(|| "nothing (the same declaration)".to_string())
}

/// A declared family: validates and keys its jobs like a built-in one; it cannot run
/// them (its workers do).
pub struct DeclaredFamily {
    declaration: &'static Declaration,
    checked: Checked,
    /// The built-in family an extension extends.
    base: Option<Arc<dyn Family>>,
}

impl DeclaredFamily {
    /// A new revision of `kept` (another `code`, the rest the same) shares its `'static`
    /// form, which it would only copy.
    pub fn revision_of(kept: &DeclaredFamily, checked: Checked) -> Option<DeclaredFamily> {
        let same = pb::FamilyInfo { code: String::new(), ..kept.checked.info.clone() }
            == pb::FamilyInfo { code: String::new(), ..checked.info.clone() };
        same.then(|| DeclaredFamily { declaration: kept.declaration, checked, base: kept.base.clone() })
    }

    /// The declaration as it was declared, and its digest.
    pub fn checked(&self) -> &Checked {
        &self.checked
    }

    /// Make the declaration's `'static` form. Call it once per accepted declaration: its
    /// memory is never given back (see [`MAX_DECLARATIONS`]). `builtin` holds the family
    /// an extension extends (checked to be there).
    pub fn new(checked: Checked, builtin: &Registry) -> DeclaredFamily {
        fn text(s: &str) -> &'static str {
            Box::leak(s.to_string().into_boxed_str())
        }
        fn each<T, U>(items: &[T], make: impl Fn(&T) -> U) -> &'static [U] {
            Box::leak(items.iter().map(make).collect::<Vec<_>>().into_boxed_slice())
        }
        let param = |p: &pb::ParamInfo| ParamDef {
            name: text(&p.name),
            doc: text(&p.doc),
            kind: match param_kind(p).expect("checked") {
                Kind::Float { min, max, default } => ParamKind::Float { min, max, default },
                Kind::Int { min, max, default } => ParamKind::Int { min, max, default },
                Kind::Bool { default } => ParamKind::Bool { default },
                Kind::Choice { options, default } => {
                    ParamKind::Choice { options: each(&options, |o| text(o)), default: text(&default) }
                }
            },
        };
        let component = |c: &pb::ComponentInfo| ComponentDef {
            name: text(&c.name),
            doc: text(&c.doc),
            params: each(&c.params, param),
        };
        let metric = |m: &pb::MetricInfo| MetricDef {
            name: text(&m.name),
            kind: metric_kind(m.kind).expect("checked"),
            doc: text(&m.doc),
        };
        let info = &checked.info;
        let base = builtin.shared(&info.extends);
        let declaration = Box::leak(Box::new(match &base {
            None => Declaration {
                name: text(&info.name),
                version: info.version,
                doc: text(&info.doc),
                benchmarks: each(&info.benchmarks, component),
                algorithms: each(&info.algorithms, component),
                metrics: each(&info.metrics, metric),
                ends_early: info.ends_early,
                headline_metrics: each(&info.headline_metrics, |n| text(n)),
                summary_axes: each(&info.summary_axes, |n| text(n)),
            },
            Some(base) => Declaration {
                name: text(&info.name),
                version: info.version,
                doc: text(&info.doc),
                algorithms: each(&info.algorithms, component),
                ..*base.declaration()
            },
        }));
        DeclaredFamily { declaration, checked, base }
    }
}

impl Family for DeclaredFamily {
    fn declaration(&self) -> &'static Declaration {
        self.declaration
    }

    fn declared_digest(&self) -> Option<&str> {
        Some(&self.checked.digest)
    }

    fn extends(&self) -> Option<&str> {
        self.base.as_ref().map(|b| b.name())
    }

    fn code(&self) -> &str {
        &self.checked.info.code
    }

    fn supported_benchmarks(&self, algorithm: &str) -> &[String] {
        self.checked.info.algorithms.iter().find(|a| a.name == algorithm).map_or(&[], |a| &a.benchmarks)
    }

    fn key_salt(&self) -> String {
        let version = self.base.as_ref().map_or(self.version(), |b| b.version());
        format!("{}+{}", armada_core::key_salt(version), self.checked.digest)
    }

    /// An algorithm runs only the benchmarks it declares it supports; an extension's jobs
    /// pass its family's checks of their benchmark; its algorithms' parameters are checked
    /// by their schemas alone.
    fn check(&self, spec: &JobSpec) -> Result<(), SpecError> {
        let supported = self.supported_benchmarks(&spec.algorithm);
        if !supported.is_empty() && !supported.contains(&spec.benchmark) {
            return Err(SpecError::new(
                "algorithm",
                format!(
                    "`{}` does not run benchmark `{}`: its declaration supports only {}",
                    spec.algorithm,
                    spec.benchmark,
                    supported.join(", ")
                ),
            ));
        }
        self.base.as_ref().map_or(Ok(()), |base| base.check_benchmark(spec))
    }

    fn start(&self, job: &ValidJob, _: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        Err(JobError::Invalid(format!(
            "{} belongs to the declared family `{}`: it runs on the workers that declared it",
            job.describe(),
            self.name()
        )))
    }
}

/// A family as ServerInfo and `armada list` describe it, and as a declaration carries it.
pub fn family_info(f: &dyn Family) -> pb::FamilyInfo {
    let component = |c: &ComponentDef| pb::ComponentInfo {
        name: c.name.to_string(),
        doc: c.doc.to_string(),
        benchmarks: Vec::new(),
        params: c
            .params
            .iter()
            .map(|p| {
                use pb::param_info::Kind;
                let (kind, min, max, choices, default) = match p.kind {
                    ParamKind::Float { min, max, default } => {
                        (Kind::Float, min, max, vec![], ParamValue::Float(default))
                    }
                    ParamKind::Int { min, max, default } => {
                        (Kind::Int, min as f64, max as f64, vec![], ParamValue::Int(default))
                    }
                    ParamKind::Bool { default } => (Kind::Bool, 0.0, 0.0, vec![], ParamValue::Bool(default)),
                    ParamKind::Choice { options, default } => (
                        Kind::Choice,
                        0.0,
                        0.0,
                        options.iter().map(|o| o.to_string()).collect(),
                        ParamValue::Str(default.to_string()),
                    ),
                };
                pb::ParamInfo {
                    name: p.name.to_string(),
                    doc: p.doc.to_string(),
                    kind: kind as i32,
                    min,
                    max,
                    choices,
                    default: Some(wire::param_to_wire(&default)),
                }
            })
            .collect(),
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    pb::FamilyInfo {
        name: f.name().to_string(),
        doc: f.doc().to_string(),
        version: f.version(),
        key_salt: f.key_salt(),
        ends_early: f.ends_early(),
        benchmarks: f.benchmarks().iter().map(component).collect(),
        algorithms: f
            .algorithms()
            .iter()
            .map(|a| pb::ComponentInfo { benchmarks: f.supported_benchmarks(a.name).to_vec(), ..component(a) })
            .collect(),
        metrics: f
            .metrics()
            .iter()
            .map(|m| pb::MetricInfo {
                name: m.name.to_string(),
                doc: m.doc.to_string(),
                kind: match m.kind {
                    MetricKind::Float => pb::metric_info::Kind::Float,
                    MetricKind::Int => pb::metric_info::Kind::Int,
                } as i32,
            })
            .collect(),
        headline_metrics: strings(f.headline_metrics()),
        summary_axes: strings(f.summary_axes()),
        declared: f.declared_digest().is_some(),
        digest: f.declared_digest().unwrap_or_default().to_string(),
        extends: f.extends().unwrap_or_default().to_string(),
        code: f.code().to_string(),
        abridged: false,
    }
}
