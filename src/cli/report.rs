//! `armada report DIR/<sweep>`: write the sweep's self-contained HTML report.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The sweep's results directory (holding summary.parquet and final.parquet).
    sweep_dir: PathBuf,
    /// Where to write the report (default: SWEEP_DIR/report.html).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let path = armada::report::write_report(&args.sweep_dir, args.out.as_deref())?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}
