//! Waiting for Ctrl-C or SIGTERM, the way every long-running subcommand stops.

/// Ctrl-C or SIGTERM. Handled explicitly (not left to the default action) so that the
/// workers are stopped and the store closed cleanly, also when the signal's default
/// action was inherited as "ignore".
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
