//! Status conditions (`Ready`, and any a controller adds), shaped like `metav1.Condition`.
//! Our own type keeps k8s-openapi's `schemars` feature (and its compile time) out of the build.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type in CamelCase, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Last time the status changed (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub last_transition_time: String,
    /// Machine-readable reason for the last transition, in CamelCase.
    pub reason: String,
    /// Human-readable details.
    #[serde(default)]
    pub message: String,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// A condition of `type_` that keeps `previous`'s transition time while its status is
    /// unchanged, so that an unchanged object yields an identical status and no write.
    pub fn new(
        type_: &str,
        status: bool,
        reason: &str,
        message: impl Into<String>,
        generation: Option<i64>,
        previous: &[Condition],
    ) -> Condition {
        let status = if status { "True" } else { "False" };
        let last_transition_time = previous
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or_else(now);
        Condition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time,
            reason: reason.into(),
            message: message.into(),
            observed_generation: generation,
        }
    }
}

/// The status of the `Ready` condition in `conditions` (`True`, `False`), if there is one.
pub fn ready_status(conditions: &[Condition]) -> Option<&str> {
    conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.as_str())
}

/// Puts `condition` in `conditions`, in place of the one of the same type if there is one.
pub fn set_condition(conditions: &mut Vec<Condition>, condition: Condition) {
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => *existing = condition,
        None => conditions.push(condition),
    }
}

fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", now)
        .expect("formatting the current time")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_transition_time_while_the_status_holds() {
        let first = Condition::new("Ready", false, "Progressing", "0/2 ready", Some(1), &[]);
        let mut earlier = first.clone();
        earlier.last_transition_time = "2020-01-01T00:00:00Z".into();
        let same = Condition::new(
            "Ready",
            false,
            "Progressing",
            "1/2 ready",
            Some(1),
            &[earlier],
        );
        assert_eq!(same.last_transition_time, "2020-01-01T00:00:00Z");
        let flipped = Condition::new("Ready", true, "Ready", "2/2 ready", Some(1), &[same]);
        assert_ne!(flipped.last_transition_time, "2020-01-01T00:00:00Z");
        assert!(first.last_transition_time.ends_with('Z'));
    }
}
