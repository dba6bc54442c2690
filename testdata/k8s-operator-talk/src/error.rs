//! The reconcilers' error type. Every variant is recoverable: the controller logs it,
//! counts it in the metrics and retries the object with backoff.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),

    #[error("finalizer error: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),

    #[error("serializing status: {0}")]
    Serialization(#[from] serde_json::Error),

    #[error("{0} has no namespace; it must be namespaced")]
    MissingNamespace(String),

    #[error("{0} has no uid yet; it has not been stored by the API server")]
    MissingUid(String),
}

impl Error {
    /// A short, stable label for the error metric.
    pub fn metric_label(&self) -> String {
        match self {
            Error::Kube(kube::Error::Api(status)) => format!("api_{}", status.code),
            Error::Kube(_) => "kube".into(),
            Error::Finalizer(_) => "finalizer".into(),
            Error::Serialization(_) => "serialization".into(),
            Error::MissingNamespace(_) => "missing_namespace".into(),
            Error::MissingUid(_) => "missing_uid".into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
