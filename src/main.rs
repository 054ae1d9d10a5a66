//! The `armada` command line: parse, then dispatch to one file per subcommand.

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("ARMADA_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        // A log that cannot be written (a full disk) must not stop a server: the subscriber
        // would report that with `eprintln!`, which panics when stderr fails.
        .log_internal_errors(false)
        // Colour only for a terminal: a log file or a pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
