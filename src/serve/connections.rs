//! Accepting connections for `lilypad serve`, with the limits `axum::serve` does not set: a
//! connection whose request headers do not arrive within the read timeout is closed, and so is
//! a keep-alive connection left idle that long (hyper's header read timer runs while it waits
//! for the next request's head). A body that does not arrive in time is the door's to refuse
//! (`door.rs`). Each request carries its peer's address (`ConnectInfo`) for the audit trail.
//!
//! Shutting down: once `shutdown` ends (the drain, [`super::drain_then`]), no connection is
//! accepted; each open one finishes the request it serves and closes, for at most
//! [`CLOSE_WAIT`].
//!
//! Does not own: the routes and what they answer (`mod.rs`), when to shut down (`mod.rs`).

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::Service;

/// How long open connections get to close once the drain is over.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Serve `router` on `listener` until `shutdown` ends, then close the connections.
/// `read_timeout` bounds the wait for a request's headers, and a keep-alive connection's idle
/// time.
pub async fn serve_with_limits(
    listener: TcpListener,
    router: Router,
    read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: the connections open go on; wait
                    // a moment rather than spin.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.as_mut() => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            let mut router = router.clone();
            async move { router.call(request.map(Body::new)).await }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(read_timeout)
            .keep_alive(true);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = watched.await {
                // A client that went away, or one too slow with its headers: that connection's
                // end, nothing more.
                tracing::debug!(%peer, "connection closed: {e}");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(CLOSE_WAIT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "connections still open {}s after the drain were left to close with the process",
            CLOSE_WAIT.as_secs()
        );
    }
}
