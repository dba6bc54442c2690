//! Convergence: watches on the operator's children (Deployments, and for opsdk Services) that
//! say when every Application's child first exists with the right spec.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::Error;
use crate::args::{Args, Flavor};
use crate::workload::PORT;

/// The watches, started before the creates so that their initial lists are long done by then.
pub struct Watches {
    deployments: JoinHandle<Result<Instant, Error>>,
    services: Option<JoinHandle<Result<Instant, Error>>>,
}

/// When every child had converged: the Deployments, and the Services if the operator makes them.
pub struct Converged {
    pub deployments: Instant,
    pub services: Option<Instant>,
}

impl Converged {
    /// The later of the two.
    pub fn all(&self) -> Instant {
        self.services
            .map_or(self.deployments, |s| s.max(self.deployments))
    }
}

impl Watches {
    /// Watches the children the operator should make for the Applications `names`: opsdk's
    /// `<name>-deployment` and `<name>-service`, kubebuilder's Deployment `<name>`.
    pub fn start(client: &Client, args: &Args, names: &[String]) -> Self {
        let children = |suffix: &str| -> HashSet<String> {
            names.iter().map(|n| format!("{n}/{n}{suffix}")).collect()
        };
        let deployments = {
            let want = children(match args.flavor {
                Flavor::Opsdk => "-deployment",
                Flavor::Kubebuilder => "",
                Flavor::Floor => unreachable!("the floor runs no operator"),
            });
            let image = args.image.clone();
            tokio::spawn(converged(
                Api::<Deployment>::all(client.clone()),
                want,
                move |d: &Deployment| deployment_ok(d, &image, PORT),
            ))
        };
        let services = (args.flavor == Flavor::Opsdk).then(|| {
            tokio::spawn(converged(
                Api::<Service>::all(client.clone()),
                children("-service"),
                move |s: &Service| service_ok(s, PORT),
            ))
        });
        Self {
            deployments,
            services,
        }
    }

    /// Waits for every watch to see its children converged, each at most `deadline`.
    pub async fn wait(self, deadline: Duration) -> Result<Converged, Error> {
        let deployments = tokio::time::timeout(deadline, self.deployments)
            .await
            .map_err(|_| format!("Deployments not converged after {deadline:?}"))???;
        let services = match self.services {
            Some(task) => Some(
                tokio::time::timeout(deadline, task)
                    .await
                    .map_err(|_| format!("Services not converged after {deadline:?}"))???,
            ),
            None => None,
        };
        Ok(Converged {
            deployments,
            services,
        })
    }
}

fn deployment_ok(d: &Deployment, image: &str, port: i32) -> bool {
    let spec = &d.spec;
    let Some(container) = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
    else {
        return false;
    };
    let container_port = container
        .ports
        .as_ref()
        .and_then(|p| p.first())
        .map(|p| p.container_port);
    spec.replicas == Some(1)
        && container.image.as_deref() == Some(image)
        && container_port == Some(port)
}

fn service_ok(s: &Service, port: i32) -> bool {
    s.spec
        .as_ref()
        .and_then(|spec| spec.ports.as_ref())
        .and_then(|ports| ports.first())
        .is_some_and(|p| p.port == port)
}

/// Watches `api` until every object named in `want` (`namespace/name`) satisfies `ok`;
/// returns when that was first seen.
async fn converged<K>(
    api: Api<K>,
    want: HashSet<String>,
    ok: impl Fn(&K) -> bool + Send + 'static,
) -> Result<Instant, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let mut good: HashSet<String> = HashSet::new();
    let mut listing = false;
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { continue };
        let key = |o: &K| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any());
        match event {
            watcher::Event::Init => {
                good.clear();
                listing = true;
            }
            watcher::Event::InitDone => listing = false,
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                let k = key(&o);
                if want.contains(&k) && ok(&o) {
                    good.insert(k);
                } else {
                    good.remove(&k);
                }
            }
            watcher::Event::Delete(o) => {
                good.remove(&key(&o));
            }
        }
        if !listing && good.len() == want.len() {
            return Ok(Instant::now());
        }
    }
    Err("watch ended".into())
}
