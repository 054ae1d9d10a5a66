//! Every option of every choice parameter reaches its family's code, and every component's
//! schema is the parameter struct its family parses: a job with that option starts without
//! a "parameter `...`" error (`Params::parse` refuses parameters missing from, or mistyped
//! for, the struct it builds). Within the code, choices are enums matched exhaustively, so an
//! option cannot be forgotten there.

use armada_core::{JobSpec, JobStreams, ParamKind, ParamValue};

#[test]
fn every_option_of_every_choice_parameter_is_handled() {
    let registry = armada::registry();
    let mut checked = 0;
    let mut failures = Vec::new();
    for family in registry.families() {
        // Vary one parameter of one component at a time, with the first counterpart that
        // validates (defaults elsewhere).
        for (is_benchmark, components) in [(true, family.benchmarks()), (false, family.algorithms())] {
            for component in components {
                for param in component.params {
                    let ParamKind::Choice { options, .. } = param.kind else { continue };
                    for option in options {
                        let counterparts = if is_benchmark { family.algorithms() } else { family.benchmarks() };
                        let valid = counterparts.iter().find_map(|other| {
                            let (bench, algo) =
                                if is_benchmark { (component.name, other.name) } else { (other.name, component.name) };
                            let mut spec = JobSpec::new(family.name(), bench, algo);
                            spec.horizon = 2;
                            let params =
                                if is_benchmark { &mut spec.benchmark_params } else { &mut spec.algorithm_params };
                            params.insert(param.name.into(), ParamValue::Str(option.to_string()));
                            registry.validate(&spec).ok()
                        });
                        let Some(job) = valid else { continue };
                        checked += 1;
                        if let Err(e) = family.start(&job, &JobStreams::new(&job.spec)) {
                            if e.to_string().contains("parameter `") {
                                failures.push(format!("{}: {e}", job.describe()));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 40, "only {checked} options checked");
}
