//! The reconcilers' error type. Every variant is recoverable: the controller reports it in
//! the object's status and as a Warning event, counts it in the metrics and retries the
//! object with backoff.

use kube::runtime::finalizer;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),

    #[error("finalizer error: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),

    #[error("serializing: {0}")]
    Serialization(#[from] serde_json::Error),

    #[error("{0} has no namespace; it must be namespaced")]
    MissingNamespace(String),

    #[error("{0} has no uid yet; it has not been stored by the API server")]
    MissingUid(String),

    /// A child's name is taken by an object this owner does not control.
    #[error("{0}")]
    ChildConflict(String),

    #[error("{0} changed twice while being corrected; retrying")]
    ChildChanging(String),

    #[error("the cache of {0}s stopped; the manager is shutting down")]
    CacheStopped(String),

    #[error(
        "the cache of {0}s has not listed them after {1:?}: check that the manager may list \
         and watch them (config/rbac/role.yaml) and that the API server answers"
    )]
    CacheNotSynced(String, std::time::Duration),

    #[error("the reconcile took longer than {0:?}; retrying")]
    Timeout(std::time::Duration),
}

impl Error {
    /// The error a reconcile step returned, unwrapped from the finalizer helper's wrapper.
    pub fn cause(&self) -> &Error {
        match self {
            Error::Finalizer(err) => match err.as_ref() {
                finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => {
                    inner.cause()
                }
                _ => self,
            },
            _ => self,
        }
    }

    /// A short, stable label for the error metric.
    pub fn metric_label(&self) -> String {
        match self.cause() {
            Error::Kube(kube::Error::Api(status)) => format!("api_{}", status.code),
            Error::Kube(_) => "kube".into(),
            Error::Finalizer(_) => "finalizer".into(),
            Error::Serialization(_) => "serialization".into(),
            Error::MissingNamespace(_) => "missing_namespace".into(),
            Error::MissingUid(_) => "missing_uid".into(),
            Error::ChildConflict(_) => "child_conflict".into(),
            Error::ChildChanging(_) => "child_changing".into(),
            Error::CacheStopped(_) => "cache_stopped".into(),
            Error::CacheNotSynced(..) => "cache_not_synced".into(),
            Error::Timeout(_) => "timeout".into(),
        }
    }

    /// The reason of the `Ready=False` condition this error sets, in CamelCase.
    pub fn reason(&self) -> &'static str {
        match self.cause() {
            Error::ChildConflict(_) => "ChildConflict",
            _ => "ReconcileError",
        }
    }

    /// What the status and the event say: the API server's own message where there is one.
    pub fn message(&self) -> String {
        match self.cause() {
            Error::Kube(kube::Error::Api(status)) => status.message.clone(),
            Error::Finalizer(err) => match err.as_ref() {
                finalizer::Error::AddFinalizer(kube::Error::Api(status)) => {
                    format!("adding the finalizer: {}", status.message)
                }
                finalizer::Error::RemoveFinalizer(kube::Error::Api(status)) => {
                    format!("removing the finalizer: {}", status.message)
                }
                _ => err.to_string(),
            },
            other => other.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
