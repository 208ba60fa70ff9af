//! The life of the process around the routes: draining on SIGTERM or
//! Ctrl-C ([`drain_then`], [`termination`]), and reading the keys file again on SIGHUP
//! ([`reload_keys_on_hangup`]). Does not own the routes (`mod.rs`) or the connections
//! (`connections.rs`).

use super::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Wait for `signal`, then drain: turn new requests away and wait until none is in flight. The
/// future ends when the server may stop (give it to `axum::serve(..).with_graceful_shutdown`).
pub async fn drain_then(server: Arc<Server>, signal: impl std::future::Future<Output = ()>) {
    signal.await;
    server.draining.store(true, Ordering::SeqCst);
    tracing::info!(
        in_flight = server.in_flight(),
        "shutting down: new requests are turned away, those in flight finish"
    );
    while server.in_flight() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// SIGTERM (what Kubernetes and systemd send) or Ctrl-C, whichever comes first.
pub async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                return;
            }
            Err(e) => tracing::warn!("SIGTERM cannot be caught ({e}); only Ctrl-C drains"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Read the keys file again on each SIGHUP, for the life of the process; a file that cannot be
/// read keeps the keys in use (and says why in the log). Without a keys file, SIGHUP is logged
/// and ignored (rather than ending the process).
pub async fn reload_keys_on_hangup(server: Arc<Server>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = match signal(SignalKind::hangup()) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(
                    "SIGHUP cannot be caught ({e}); the keys file is read only at start"
                );
                return;
            }
        };
        while hup.recv().await.is_some() {
            match server.keys.reload() {
                Ok(_) if server.keys.file().is_none() => {
                    tracing::info!("SIGHUP: no keys file to read")
                }
                Ok(n) => tracing::info!("SIGHUP: read {n} keys"),
                Err(e) => tracing::warn!("SIGHUP: {e}; the keys in use stay"),
            }
        }
    }
    #[cfg(not(unix))]
    let _ = server;
}
