//! `armada-golden JOBS OUT_DIR`: runs the job specs of JOBS (lines of
//! [`armada_golden::write_jobs`]) and writes each family's golden text to
//! `OUT_DIR/<family>.txt`. `armada-golden --families` prints the families it runs.
//!
//! `tests/numerics/golden.rs` runs it cross-compiled, under qemu, to compare the golden trajectories
//! computed on another architecture with those recorded (`.ci/run` builds it for aarch64).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let registry = armada_golden::paper_families();
    match args.as_slice() {
        [flag] if flag == "--families" => {
            for family in registry.families() {
                println!("{}", family.name());
            }
            ExitCode::SUCCESS
        }
        [jobs, out] => match run(&registry, jobs, &PathBuf::from(out)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("armada-golden: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: armada-golden JOBS OUT_DIR | armada-golden --families");
            ExitCode::from(2)
        }
    }
}

fn run(registry: &armada_core::Registry, jobs: &str, out: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(jobs).map_err(|e| format!("{jobs}: {e}"))?;
    let specs = armada_golden::read_jobs(&text).map_err(|e| format!("{jobs}: {e}"))?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (family, golden) in armada_golden::golden_texts(registry, &specs)? {
        let path = out.join(format!("{family}.txt"));
        std::fs::write(&path, golden).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
