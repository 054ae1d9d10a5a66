//! `armada family add FILE`: declare a family to a coordinator ahead of its workers, from a
//! TOML file that spells out its declaration (service.proto's `FamilyInfo`), so that its
//! sweeps can be validated and queued before any of its workers starts.

use super::remote::{block_on, Remote};
use anyhow::Context;
use armada_proto::v1 as pb;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum FamilyCommand {
    /// Declare the family a TOML file describes (name, version, benchmarks and algorithms
    /// with their parameters, metrics); a different declaration under a declared name and
    /// version is refused: bump the version.
    Add {
        /// The declaration (TOML; see the README's "Your own method" section).
        file: PathBuf,
        #[command(flatten)]
        remote: Remote,
    },
    /// Forget the declarations of a family's version (every revision, or the one of
    /// --digest), so that their place can be taken: refused while a stored sweep uses one
    /// (delete it first). Takes an admin token.
    Remove {
        name: String,
        version: u32,
        /// Only this revision (its digest, as `armada list --coordinator` shows it).
        #[arg(long)]
        digest: Option<String>,
        #[command(flatten)]
        remote: Remote,
    },
}

pub fn family(command: FamilyCommand) -> anyhow::Result<ExitCode> {
    match command {
        FamilyCommand::Add { file, remote } => {
            let declaration = read_declaration(&file)?;
            let (name, version) = (declaration.name.clone(), declaration.version);
            block_on(async {
                let mut client = remote.client().await?;
                let reply = client
                    .declare_family(pb::DeclareFamilyRequest { declaration: Some(declaration) })
                    .await
                    .map_err(|e| armada::client::file_error(&file, e))?
                    .into_inner();
                let what = if reply.created { "declared" } else { "was declared already" };
                eprintln!("family {name} version {version} {what} (digest {})", reply.digest);
                println!("{}", reply.digest);
                Ok(ExitCode::SUCCESS)
            })
        }
        FamilyCommand::Remove { name, version, digest, remote } => block_on(async {
            let mut client = remote.client().await?;
            let request = pb::RemoveFamilyRequest { name: name.clone(), version, digest: digest.unwrap_or_default() };
            let reply = client.remove_family(request).await.map_err(armada::client::status_error)?.into_inner();
            for digest in &reply.removed {
                eprintln!("removed family {name} version {version} (digest {digest})");
            }
            Ok(ExitCode::SUCCESS)
        }),
    }
}

/// A declaration file, field for field the wire's `FamilyInfo`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FamilyFile {
    name: String,
    version: u32,
    #[serde(default)]
    doc: String,
    /// An extension of this built-in family (algorithms only).
    #[serde(default)]
    extends: String,
    #[serde(default)]
    ends_early: bool,
    #[serde(default)]
    headline_metrics: Vec<String>,
    #[serde(default)]
    summary_axes: Vec<String>,
    #[serde(default)]
    benchmarks: Vec<ComponentFile>,
    #[serde(default)]
    algorithms: Vec<ComponentFile>,
    #[serde(default)]
    metrics: Vec<MetricFile>,
    /// A digest of the workers' code (`FamilyInfo.code`), for workers that declare one.
    #[serde(default)]
    code: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentFile {
    name: String,
    #[serde(default)]
    doc: String,
    #[serde(default)]
    params: Vec<ParamFile>,
    /// An algorithm's supported benchmarks (all, when absent).
    #[serde(default)]
    benchmarks: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamFile {
    name: String,
    #[serde(default)]
    doc: String,
    /// float, int, bool or choice.
    kind: String,
    #[serde(default)]
    min: f64,
    #[serde(default)]
    max: f64,
    #[serde(default)]
    choices: Vec<String>,
    default: toml::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricFile {
    name: String,
    /// float or int.
    kind: String,
    #[serde(default)]
    doc: String,
}

/// Read a declaration file; errors name the file and the field.
pub fn read_declaration(path: &Path) -> anyhow::Result<pb::FamilyInfo> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_declaration(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn parse_declaration(text: &str) -> Result<pb::FamilyInfo, String> {
    let file: FamilyFile = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    let component = |c: ComponentFile, at: String| -> Result<pb::ComponentInfo, String> {
        let params = c
            .params
            .into_iter()
            .enumerate()
            .map(|(j, p)| param(p).map_err(|e| format!("{at}.params[{j}].{e}")))
            .collect::<Result<_, _>>()?;
        Ok(pb::ComponentInfo { name: c.name, doc: c.doc, params, benchmarks: c.benchmarks })
    };
    let components = |v: Vec<ComponentFile>, field: &str| -> Result<Vec<pb::ComponentInfo>, String> {
        v.into_iter().enumerate().map(|(i, c)| component(c, format!("{field}[{i}]"))).collect()
    };
    let metrics = file
        .metrics
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let kind = match m.kind.as_str() {
                "float" => pb::metric_info::Kind::Float,
                "int" => pb::metric_info::Kind::Int,
                other => {
                    return Err(format!("metrics[{i}].kind: `{other}` is not a metric kind; expected float or int"))
                }
            };
            Ok(pb::MetricInfo { name: m.name, doc: m.doc, kind: kind as i32 })
        })
        .collect::<Result<_, _>>()?;
    Ok(pb::FamilyInfo {
        name: file.name,
        version: file.version,
        doc: file.doc,
        extends: file.extends,
        ends_early: file.ends_early,
        headline_metrics: file.headline_metrics,
        summary_axes: file.summary_axes,
        benchmarks: components(file.benchmarks, "benchmarks")?,
        algorithms: components(file.algorithms, "algorithms")?,
        metrics,
        code: file.code,
        ..Default::default()
    })
}

/// One parameter; an error starts with the field it names.
fn param(p: ParamFile) -> Result<pb::ParamInfo, String> {
    use pb::param_info::Kind;
    use pb::param_value::Kind as V;
    let (kind, default) = match (p.kind.as_str(), &p.default) {
        ("float", toml::Value::Float(x)) => (Kind::Float, V::Float(*x)),
        ("float", toml::Value::Integer(x)) => (Kind::Float, V::Float(*x as f64)),
        ("int", toml::Value::Integer(x)) => (Kind::Int, V::Int(*x)),
        ("bool", toml::Value::Boolean(x)) => (Kind::Bool, V::Flag(*x)),
        ("choice", toml::Value::String(x)) => (Kind::Choice, V::Text(x.clone())),
        ("float" | "int" | "bool" | "choice", other) => {
            return Err(format!("default: a {} parameter cannot default to {other}", p.kind))
        }
        (other, _) => {
            return Err(format!("kind: `{other}` is not a parameter kind; expected float, int, bool or choice"))
        }
    };
    Ok(pb::ParamInfo {
        name: p.name,
        doc: p.doc,
        kind: kind as i32,
        min: p.min,
        max: p.max,
        choices: p.choices,
        default: Some(pb::ParamValue { kind: Some(default) }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
name = "mybo"
version = 2
doc = "my methods"
headline_metrics = ["regret"]

[[benchmarks]]
name = "branin"
[[benchmarks.params]]
name = "noise_sd"
kind = "float"
min = 0
max = 1
default = 0.1

[[algorithms]]
name = "my-ucb"
[[algorithms.params]]
name = "kernel"
kind = "choice"
choices = ["se", "matern52"]
default = "se"
[[algorithms.params]]
name = "restarts"
kind = "int"
min = 1
max = 100
default = 5

[[metrics]]
name = "regret"
kind = "float"
doc = "f(x_best) - f*"
[[metrics]]
name = "evals"
kind = "int"
"#;

    #[test]
    fn a_declaration_file_reads_field_for_field() {
        let info = parse_declaration(FILE).unwrap();
        assert_eq!((info.name.as_str(), info.version, info.doc.as_str()), ("mybo", 2, "my methods"));
        let noise = &info.benchmarks[0].params[0];
        assert_eq!((noise.kind, noise.min, noise.max), (pb::param_info::Kind::Float as i32, 0.0, 1.0));
        assert_eq!(noise.default.as_ref().unwrap().kind, Some(pb::param_value::Kind::Float(0.1)));
        let kernel = &info.algorithms[0].params[0];
        assert_eq!(kernel.choices, ["se", "matern52"]);
        assert_eq!(kernel.default.as_ref().unwrap().kind, Some(pb::param_value::Kind::Text("se".into())));
        assert_eq!(info.algorithms[0].params[1].default.as_ref().unwrap().kind, Some(pb::param_value::Kind::Int(5)));
        assert_eq!(info.metrics[1].kind, pb::metric_info::Kind::Int as i32);
        // And it follows the coordinator's rules.
        armada::coordinator::state::declared::check(info, &armada::registry()).unwrap();
    }

    #[test]
    fn an_extension_file_declares_algorithms_only() {
        let text = "name = \"my-lse\"\nversion = 1\nextends = \"lse\"\n[[algorithms]]\nname = \"gp-ucb\"\n";
        let info = parse_declaration(text).unwrap();
        assert_eq!((info.extends.as_str(), info.algorithms.len(), info.benchmarks.len()), ("lse", 1, 0));
        armada::coordinator::state::declared::check(info, &armada::registry()).unwrap();
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse_declaration(&FILE.replace("kind = \"int\"\nmin", "kind = \"integer\"\nmin")).unwrap_err();
        assert_eq!(
            e,
            "algorithms[0].params[1].kind: `integer` is not a parameter kind; expected float, int, bool or choice"
        );
        let e = parse_declaration(&FILE.replace("default = \"se\"", "default = 3")).unwrap_err();
        assert_eq!(e, "algorithms[0].params[0].default: a choice parameter cannot default to 3");
        let e = parse_declaration(&FILE.replace("kind = \"float\"\ndoc", "kind = \"real\"\ndoc")).unwrap_err();
        assert_eq!(e, "metrics[0].kind: `real` is not a metric kind; expected float or int");
        let e = parse_declaration(&format!("{FILE}\ncolour = 1\n")).unwrap_err();
        assert!(e.contains("unknown field `colour`"), "{e}");
    }
}
