//! The manager's stop request: SIGTERM (the kubelet stopping the Pod) or Ctrl-C, heard by one
//! listener installed before anything starts. A signal only reaches the listeners that exist
//! when it arrives: listeners made on demand by each part (the servers, the controllers, the
//! webhooks) would miss one that came between its start and their first poll, and until the
//! first of them existed, SIGTERM would kill the process without a word.

use tokio::sync::watch;

/// A stop request, requested once; clones see the same one.
#[derive(Clone, Debug)]
pub struct Shutdown(watch::Receiver<bool>);

/// Requests the stop of every [`Shutdown`] made with it.
#[derive(Debug)]
pub struct Trigger(watch::Sender<bool>);

impl Shutdown {
    /// A stop request that `Trigger::request` makes.
    pub fn new() -> (Trigger, Shutdown) {
        let (requested, shutdown) = watch::channel(false);
        (Trigger(requested), Shutdown(shutdown))
    }

    /// A stop request made by SIGTERM or Ctrl-C, listened for from now on.
    pub fn on_signals() -> std::io::Result<Shutdown> {
        let (trigger, shutdown) = Shutdown::new();
        let signal = signals()?;
        tokio::spawn(async move {
            let name = signal.await;
            tracing::info!("{name} received: stopping");
            trigger.request();
            // Kept until every `Shutdown` is gone, so that none reads the request as withdrawn.
            trigger.0.closed().await;
        });
        Ok(shutdown)
    }

    /// Resolves once the stop is requested, at once if it already was.
    pub async fn requested(mut self) {
        // An error means the trigger is gone without requesting: never.
        if self.0.wait_for(|requested| *requested).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Trigger {
    pub fn request(&self) {
        self.0.send_replace(true);
    }
}

/// The first of SIGTERM and Ctrl-C to arrive, its listeners installed now.
#[cfg(unix)]
fn signals() -> std::io::Result<impl Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut interrupt) = (
        signal(SignalKind::terminate())?,
        signal(SignalKind::interrupt())?,
    );
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        }
    })
}

#[cfg(not(unix))]
fn signals() -> std::io::Result<impl Future<Output = &'static str>> {
    Ok(async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            // Never heard: the manager runs until killed.
            Err(_) => std::future::pending().await,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_request_reaches_every_clone_made_before_or_after_it() {
        let (trigger, shutdown) = Shutdown::new();
        let before = tokio::spawn(shutdown.clone().requested());
        let early = tokio::time::timeout(Duration::from_secs(60), shutdown.clone().requested());
        assert!(early.await.is_err(), "stopped before the request");
        trigger.request();
        before.await.unwrap();
        // A part that starts listening after the request stops at once.
        let after = tokio::time::timeout(Duration::from_secs(1), shutdown.clone().requested());
        after.await.expect("a late listener missed the request");
        // Still requested once the trigger is gone.
        drop(trigger);
        shutdown.requested().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_trigger_dropped_without_a_request_never_stops() {
        let (trigger, shutdown) = Shutdown::new();
        drop(trigger);
        let waited = tokio::time::timeout(Duration::from_secs(60), shutdown.requested());
        assert!(waited.await.is_err(), "a dropped trigger read as a request");
    }
}
