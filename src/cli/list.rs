//! `armada list`: what this build can run, with every parameter, its range and default;
//! with `--coordinator`, what a coordinator runs, the families declared to it included.

use armada::coordinator::state::declared::{self, DeclaredFamily};
use armada_core::{ComponentDef, Family, ParamKind, Registry};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// List what this coordinator runs (its ServerInfo) instead of this build's families.
    #[arg(long)]
    coordinator: Option<String>,
    /// Bearer token, if the coordinator requires one.
    #[arg(long, env = armada_proto::auth::TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// CA certificate (PEM) for an https:// coordinator.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
}

pub fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let Some(url) = &args.coordinator else {
        for family in armada::registry().families() {
            print_family(family, "");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let families = super::remote::block_on(async {
        use armada_proto::v1 as pb;
        let mut client = armada::client::connect(url, args.token.as_deref(), args.tls_ca.as_deref()).await?;
        let info = client.server_info(pb::ServerInfoRequest {}).await;
        let mut families = info.map_err(armada::client::status_error)?.into_inner().families;
        // ServerInfo abridges declared families beyond a size: each of those whole.
        for f in families.iter_mut().filter(|f| f.abridged) {
            let request =
                pb::DescribeFamilyRequest { name: f.name.clone(), version: f.version, digest: f.digest.clone() };
            *f = client.describe_family(request).await.map_err(armada::client::status_error)?.into_inner();
        }
        Ok(families)
    })?;
    // Each family as the coordinator describes it, read like a declaration (built-in ones
    // follow the same rules), so that both print alike.
    let no_builtins = Registry::new(vec![]);
    for mut wire in families {
        let (name, digest) = (wire.name.clone(), wire.digest.clone());
        // An extension is described whole (its family's benchmarks and metrics with its
        // algorithms): printed as such.
        let extends = std::mem::take(&mut wire.extends);
        let checked = declared::check(wire, &no_builtins)
            .map_err(|e| anyhow::anyhow!("the coordinator describes family {name} oddly: {e}"))?;
        let mut origin = String::new();
        if !extends.is_empty() {
            origin += &format!(", extends {extends}");
        }
        if !digest.is_empty() {
            origin += &format!(", declared, digest {digest}");
        }
        print_family(&DeclaredFamily::new(checked, &no_builtins), &origin);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_family(family: &dyn Family, origin: &str) {
    println!("family {} (version {}{origin}): {}", family.name(), family.version(), family.doc());
    print_components("benchmark", family.benchmarks());
    print_components("algorithm", family.algorithms());
    if family.ends_early() {
        println!("  metrics (one row per step; a run may end before its horizon):");
    } else {
        println!("  metrics (one row per step, 0..=horizon):");
    }
    for m in family.metrics() {
        let kind = match m.kind {
            armada_core::MetricKind::Float => "float",
            armada_core::MetricKind::Int => "integer",
        };
        println!("      {} ({kind}): {}", m.name, m.doc);
    }
}

fn print_components(what: &str, defs: &[ComponentDef]) {
    for d in defs {
        println!("  {what} {}: {}", d.name, d.doc);
        for p in d.params {
            let default = match p.kind {
                ParamKind::Float { default, .. } => armada_core::human_number(default),
                ParamKind::Int { default, .. } => default.to_string(),
                ParamKind::Bool { default } => default.to_string(),
                ParamKind::Choice { default, .. } => default.to_string(),
            };
            let kind = format!("{}, default {default}", p.kind.describe());
            println!("      {} ({kind}): {}", p.name, p.doc);
        }
    }
}
