//! Leader election on a coordination.k8s.io Lease, so that only one replica reconciles at a
//! time: client-go's algorithm with controller-runtime's timings (see `lease`). The leader
//! renews every 2 s and gives up, so the manager exits, when it has not renewed for 10 s;
//! standbys try every 2 s and take the Lease once it is released or 15 s after it last
//! changed. At shutdown the leader releases the Lease, so a standby leads within 2 s.
//!
//! Requests: get, create (once) and update (a PUT with the resourceVersion read, so that two
//! replicas never both win), as `config/rbac/leader_election_role.yaml` allows.

mod lease;
#[cfg(test)]
mod tests;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until, timeout, timeout_at};
use tracing::{debug, info, warn};

pub use lease::Timings;
use lease::{Observed, claim, released};

/// The Lease's name; `config/rbac/leader_election_role.yaml` allows this one only.
pub const LEASE: &str = concat!(env!("CARGO_PKG_NAME"), "-leader");

/// How long the release at shutdown may take before the manager exits anyway.
pub const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the Lease may be refused (401, 403) before a standby gives up with a hint: an
/// API server that has just restarted can refuse for a moment while its authenticator and
/// authorizer catch up, and a standby that exited then would only wait out CrashLoopBackOff.
pub const REFUSED_FOR: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error(
        "the manager may not use the Lease {0}: {1}\nhelp: allow get, create and update on it \
         (config/rbac/leader_election_role.yaml)"
    )]
    Forbidden(String, #[source] kube::Error),

    #[error("{0}")]
    Timings(String),

    #[error("lost the leader-election Lease: {0}; exiting so that another replica can lead")]
    Lost(String),
}

/// This replica's identity in the Lease: `POD_NAME` (the downward API sets it in
/// config/manager/manager.yaml), else the host name and the process id.
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME").ok().or_else(|| {
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
        Some(name.trim().to_string())
    });
    lease::identity_from(std::env::var("POD_NAME").ok(), host, std::process::id())
}

/// This replica holds the Lease, and a task renews it until it is released or lost.
pub struct Leadership {
    stop: Option<oneshot::Sender<()>>,
    renewal: JoinHandle<Result<(), LeaderError>>,
}

impl Leadership {
    /// Waits until this replica holds the Lease `name` in `namespace` as `identity`.
    pub async fn acquire(
        client: Client,
        namespace: &str,
        name: &str,
        identity: String,
        timings: Timings,
    ) -> Result<Leadership, LeaderError> {
        let timings = timings.checked().map_err(LeaderError::Timings)?;
        let mut elector = Elector {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity,
            timings,
            observed: None,
        };
        let mut last_holder = None;
        let mut refused_since = None;
        loop {
            let started = Instant::now();
            // Bounded as a renewal's try is: a try that hung for the whole renew deadline
            // would leave a new leader no time before its first renewal is due.
            match timeout(timings.renew_deadline / 2, elector.try_acquire_or_renew()).await {
                Ok(Ok(None)) => {
                    info!(lease = name, identity = %elector.identity, "acquired the Lease");
                    let (stop, stopped) = oneshot::channel();
                    let deadline = started + timings.renew_deadline;
                    let renewal = tokio::spawn(elector.renew(deadline, stopped));
                    return Ok(Leadership {
                        stop: Some(stop),
                        renewal,
                    });
                }
                Ok(Ok(Some(holder))) if last_holder.as_ref() != Some(&holder) => {
                    info!(lease = name, %holder, "another replica leads; standing by");
                    last_holder = Some(holder);
                }
                Ok(Ok(Some(_))) => {}
                Ok(Err(kube::Error::Api(status))) if matches!(status.code, 401 | 403) => {
                    let since: Instant = *refused_since.get_or_insert(started);
                    let err = kube::Error::Api(status);
                    if since.elapsed() >= REFUSED_FOR {
                        return Err(LeaderError::Forbidden(name.to_string(), err));
                    }
                    warn!(lease = name, "the Lease was refused: {err}");
                    sleep(timings.retry_period).await;
                    continue;
                }
                Ok(Err(err)) => warn!(lease = name, "could not take the Lease: {err}"),
                Err(_) => warn!(lease = name, "could not take the Lease: no answer in time"),
            }
            refused_since = None;
            sleep(timings.retry_period).await;
        }
    }

    /// Resolves when the Lease is lost: another replica holds it, or this one could not
    /// renew it within the renew deadline.
    pub async fn lost(&mut self) -> LeaderError {
        match (&mut self.renewal).await {
            Ok(Err(err)) => err,
            Ok(Ok(())) => LeaderError::Lost("its renewal stopped".into()),
            Err(err) => LeaderError::Lost(format!("its renewal failed: {err}")),
        }
    }

    /// Stops renewing and releases the Lease, so that a standby takes it at its next try;
    /// waits for the release, at most `RELEASE_TIMEOUT`.
    pub async fn release(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match timeout(RELEASE_TIMEOUT, &mut self.renewal).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(err))) => warn!("{err}"),
            Ok(Err(err)) => warn!("releasing the Lease failed: {err}"),
            Err(_) => {
                self.renewal.abort();
                warn!("the Lease was not released within {RELEASE_TIMEOUT:?}; it expires instead");
            }
        }
    }
}

struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timings: Timings,
    observed: Option<Observed>,
}

impl Elector {
    /// One try, as client-go's tryAcquireOrRenew: reads the Lease (creating it, held by us,
    /// when missing) and writes us in as holder unless another replica holds it. `None` when
    /// we hold it now, else the other holder.
    async fn try_acquire_or_renew(&mut self) -> kube::Result<Option<String>> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let spec = LeaseSpec {
                lease_transitions: Some(0),
                ..claim(
                    &LeaseSpec::default(),
                    &self.identity,
                    &self.timings,
                    Timestamp::now(),
                )
            };
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            let created = self.api.create(&params(), &lease).await?;
            self.observe(created.spec.unwrap_or_default());
            return Ok(None);
        };
        let observed = self.observe(lease.spec.take().unwrap_or_default()).clone();
        if let Some(holder) = observed.held_by_other(&self.identity, Instant::now()) {
            return Ok(Some(holder.to_string()));
        }
        let now = Timestamp::now();
        lease.spec = Some(claim(&observed.spec, &self.identity, &self.timings, now));
        // The resourceVersion read above makes this fail if the Lease changed meanwhile.
        let written = self.api.replace(&self.name, &params(), &lease).await?;
        self.observe(written.spec.unwrap_or_default());
        Ok(None)
    }

    /// The Lease as read just now: the clock of another holder's lease starts after the
    /// answer came, never before the holder's write.
    fn observe(&mut self, spec: LeaseSpec) -> &Observed {
        let observed = Observed::update(self.observed.take(), spec, Instant::now());
        self.observed.insert(observed)
    }

    /// Renews every retry period until `stop`, then releases the Lease. Fails when another
    /// replica holds it or no renewal succeeded by the deadline (the last successful
    /// renewal's start plus the renew deadline). One try may take half the renew deadline:
    /// a request that hangs (a pooled connection a load balancer dropped) is abandoned and
    /// tried again at once, on another connection, before the deadline, as client-go bounds
    /// each Lease request to half of it.
    async fn renew(
        mut self,
        mut deadline: Instant,
        mut stop: oneshot::Receiver<()>,
    ) -> Result<(), LeaderError> {
        let renew_deadline = self.timings.renew_deadline;
        let late = || LeaderError::Lost(format!("not renewed within {renew_deadline:?}"));
        let mut abandoned = false;
        loop {
            // An abandoned try is made again at once: waiting the retry period after it
            // could leave no time for another before the deadline.
            let next = match abandoned {
                true => Instant::now(),
                false => self.timings.next_renewal(Instant::now(), deadline),
            };
            tokio::select! {
                _ = &mut stop => break,
                () = sleep_until(next) => {}
            }
            let started = Instant::now();
            if started >= deadline {
                return Err(late());
            }
            let given_up = deadline.min(started + renew_deadline / 2);
            abandoned = false;
            tokio::select! {
                _ = &mut stop => break,
                renewed = timeout_at(given_up, self.try_acquire_or_renew()) => match renewed {
                    Ok(Ok(None)) => deadline = started + renew_deadline,
                    Ok(Ok(Some(holder))) => return Err(LeaderError::Lost(format!("{holder} holds it"))),
                    Ok(Err(err)) => warn!(lease = %self.name, "could not renew the Lease: {err}"),
                    Err(_) if given_up >= deadline => return Err(late()),
                    Err(_) => {
                        warn!(lease = %self.name, "a renewal of the Lease got no answer in {:?}; trying again", renew_deadline / 2);
                        abandoned = true;
                    }
                },
            }
        }
        self.release().await;
        Ok(())
    }

    /// Gives the Lease back if we hold it, and logs how that went.
    async fn release(&mut self) {
        match self.give_back().await {
            Ok(true) => info!(lease = %self.name, "released the Lease"),
            Ok(false) => debug!(lease = %self.name, "the Lease is not ours to release"),
            Err(err) => warn!(lease = %self.name, "could not release the Lease: {err}"),
        }
    }

    /// Reads the Lease afresh (a renewal cut short by the stop may have changed it) and, if
    /// we hold it, writes it released.
    async fn give_back(&mut self) -> kube::Result<bool> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(false);
        };
        let spec = lease.spec.take().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(false);
        }
        lease.spec = Some(released(&spec, Timestamp::now()));
        self.api.replace(&self.name, &params(), &lease).await?;
        Ok(true)
    }
}

fn params() -> PostParams {
    PostParams {
        field_manager: Some(crate::MANAGER.to_string()),
        ..PostParams::default()
    }
}
