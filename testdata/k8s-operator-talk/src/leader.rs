//! Leader election on a coordination.k8s.io Lease, so only one replica reconciles at a time.
//! kube has no built-in leader election; kube-lease-manager renews the Lease with
//! server-side apply and reports changes on a watch channel.

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;

pub struct Leadership {
    leading: watch::Receiver<bool>,
}

impl Leadership {
    /// Waits until this process holds the Lease `name` in `namespace`.
    pub async fn acquire(
        client: Client,
        namespace: &str,
        name: &str,
    ) -> Result<Leadership, LeaseManagerError> {
        let manager = LeaseManagerBuilder::new(client, name)
            .with_namespace(namespace)
            .build()
            .await?;
        let (mut leading, _task) = manager.watch().await;
        // The task releases the Lease once `leading` (the last receiver) is dropped.
        while !*leading.borrow_and_update() {
            if leading.changed().await.is_err() {
                break;
            }
        }
        Ok(Leadership { leading })
    }

    /// Resolves when the Lease is lost (or its renewal task ended).
    pub async fn lost(&mut self) {
        while *self.leading.borrow_and_update() {
            if self.leading.changed().await.is_err() {
                return;
            }
        }
    }
}
