//! The TLS handshakes a listener runs, so that one can be ended when every slot is taken:
//! of the source (IP address) running the most, the oldest. Clients one Pod opens and leaves
//! without a ClientHello then end each other's handshakes, not the API server's, whose
//! handshakes take moments.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::AbortHandle;

/// Handshake tasks, oldest first.
#[derive(Debug, Default)]
pub struct Handshakes {
    running: VecDeque<Handshake>,
}

#[derive(Debug)]
struct Handshake {
    task: AbortHandle,
    /// Cleared by the task once its handshake is done: past it, it is a connection, not a
    /// handshake to end.
    shaking: Arc<AtomicBool>,
    source: IpAddr,
}

impl Handshakes {
    /// Follows `task`, a handshake with `source` that clears `shaking` once done.
    pub fn track(&mut self, task: AbortHandle, shaking: Arc<AtomicBool>, source: IpAddr) {
        self.running.retain(Handshake::running);
        self.running.push_back(Handshake {
            task,
            shaking,
            source,
        });
    }

    /// Ends the oldest handshake of the source running the most.
    pub fn end_one(&mut self) {
        self.running.retain(Handshake::running);
        let mut held = HashMap::<IpAddr, usize>::new();
        for handshake in &self.running {
            *held.entry(handshake.source).or_default() += 1;
        }
        let Some((busiest, _)) = held.into_iter().max_by_key(|(_, count)| *count) else {
            return;
        };
        if let Some(at) = self.running.iter().position(|h| h.source == busiest) {
            let ended = self.running.remove(at).expect("position is in range");
            ended.task.abort();
        }
    }
}

impl Handshake {
    /// Still in its handshake.
    fn running(&self) -> bool {
        !self.task.is_finished() && self.shaking.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_source_running_the_most_handshakes_ends_its_oldest() {
        let spawn = || tokio::spawn(std::future::pending::<()>());
        let (api_server, flood_oldest, flood_newest) = (spawn(), spawn(), spawn());
        let (api, pod): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut handshakes = Handshakes::default();
        for (task, source) in [
            (&api_server, api),
            (&flood_oldest, pod),
            (&flood_newest, pod),
        ] {
            handshakes.track(task.abort_handle(), Arc::new(AtomicBool::new(true)), source);
        }
        handshakes.end_one();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), flood_oldest).await;
        assert!(
            ended
                .expect("the flood's oldest still runs")
                .unwrap_err()
                .is_cancelled()
        );
        assert!(!api_server.is_finished() && !flood_newest.is_finished());
    }
}
