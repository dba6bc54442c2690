//! The TLS handshakes a listener runs, so that one can be ended when every slot is taken
//! (`give_way`: of a source running more than a quarter of them, or else of all, the oldest).
//! Clients one Pod opens and leaves without a ClientHello then end each other's handshakes,
//! not the API server's, whose handshakes take moments.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::server::give_way;

/// Handshake tasks, oldest first.
#[derive(Debug)]
pub struct Handshakes {
    running: VecDeque<Handshake>,
    capacity: usize,
}

#[derive(Debug)]
struct Handshake {
    task: AbortHandle,
    /// Claimed (cleared) either by the task once its handshake is done, past which it is a
    /// connection and never ended, or by `end_one`: whichever comes first.
    shaking: Arc<AtomicBool>,
    source: IpAddr,
    started: Instant,
}

impl Handshakes {
    pub fn new(capacity: usize) -> Self {
        Handshakes {
            running: VecDeque::new(),
            capacity,
        }
    }

    /// Follows `task`, a handshake with `source` that claims `shaking` once done.
    pub fn track(&mut self, task: AbortHandle, shaking: Arc<AtomicBool>, source: IpAddr) {
        self.running.retain(Handshake::running);
        self.running.push_back(Handshake {
            task,
            shaking,
            source: source.to_canonical(),
            started: Instant::now(),
        });
    }

    /// Ends one handshake, if one is still running.
    pub fn end_one(&mut self) {
        loop {
            self.running.retain(Handshake::running);
            let candidates: Vec<_> = (self.running.iter())
                .map(|handshake| (handshake.source, handshake.started))
                .collect();
            let Some(index) = give_way(&candidates, self.capacity / 4) else {
                return;
            };
            let ended = self
                .running
                .remove(index)
                .expect("give_way picks one of them");
            // Lost to the task finishing its handshake: end another.
            if ended.shaking.swap(false, Ordering::AcqRel) {
                ended.task.abort();
                return;
            }
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
        let mut handshakes = Handshakes::new(4);
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

    #[tokio::test]
    async fn a_handshake_done_is_not_ended() {
        let (done, running) = (
            tokio::spawn(std::future::pending::<()>()),
            tokio::spawn(std::future::pending::<()>()),
        );
        let source: IpAddr = "10.0.0.2".parse().unwrap();
        let mut handshakes = Handshakes::new(4);
        let done_flag = Arc::new(AtomicBool::new(true));
        handshakes.track(done.abort_handle(), done_flag.clone(), source);
        handshakes.track(
            running.abort_handle(),
            Arc::new(AtomicBool::new(true)),
            source,
        );
        // The oldest finishes its handshake just before one must end.
        done_flag.swap(false, Ordering::AcqRel);
        handshakes.end_one();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), running).await;
        assert!(
            ended
                .expect("the running handshake still runs")
                .unwrap_err()
                .is_cancelled()
        );
        assert!(!done.is_finished());
    }
}
