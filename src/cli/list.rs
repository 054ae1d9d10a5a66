//! `armada list`: what this build can run, with every parameter, its range and default.

use armada_core::{ComponentDef, ParamKind};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ListArgs {}

pub fn list(_args: ListArgs) -> anyhow::Result<ExitCode> {
    for family in armada::registry().families() {
        println!("family {} (version {}): {}", family.name(), family.version(), family.doc());
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
    Ok(ExitCode::SUCCESS)
}

fn print_components(what: &str, defs: &[ComponentDef]) {
    for d in defs {
        println!("  {what} {}: {}", d.name, d.doc);
        for p in d.params {
            let kind = match p.kind {
                ParamKind::Float { min, max, default } => format!("float in [{min}, {max}], default {default}"),
                ParamKind::Int { min, max, default } => format!("integer in [{min}, {max}], default {default}"),
                ParamKind::Bool { default } => format!("boolean, default {default}"),
                ParamKind::Choice { options, default } => format!("one of {}, default {default}", options.join("|")),
            };
            println!("      {} ({kind}): {}", p.name, p.doc);
        }
    }
}
