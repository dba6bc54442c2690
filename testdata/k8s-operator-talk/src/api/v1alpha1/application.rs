//! The Application API (minetto.dev/v1alpha1). An Application names a container image; its controller
//! runs it as a Deployment and exposes it with a NodePort Service.
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::Condition;

/// The desired state of Application.
// clippy reads two `type_ = "integer"` in separate printcolumn(...) lists as one duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "minetto.dev",
    version = "v1alpha1",
    kind = "Application",
    doc = "Application is the schema of the applications API.",
    plural = "applications",
    namespaced,
    status = "ApplicationStatus",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "Desired", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    // The children are named <name>-deployment, <name>-service and <name>-container (a
    // DNS-1035 label, at most 63 characters): refuse names that would make them invalid
    // when the object is created, not at every reconcile.
    validation = Rule::new("self.metadata.name.size() <= 53 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')")
        .message("metadata.name must be at most 53 characters of lowercase letters, digits and '-', starting with a letter: the Application's Service is named <name>-service and its container <name>-container"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// Container image to run, e.g. `nginx:latest`.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Number of Pods to run.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// Port the container listens on; the Service exposes the same port.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

fn default_replicas() -> i32 {
    1
}

fn default_port() -> i32 {
    80
}

/// The observed state of Application, written by its controller.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationStatus {
    /// Pods of the Deployment, for the scale subresource.
    #[serde(default)]
    pub replicas: i32,
    /// Pods of the Deployment that run the current spec.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Pods that pass their readiness probe.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Pods ready for at least `minReadySeconds`.
    #[serde(default)]
    pub available_replicas: i32,
    /// Label selector of the Pods, for `kubectl scale` and HorizontalPodAutoscalers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
