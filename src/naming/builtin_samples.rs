//! A minimal object of the Kubernetes types a project most often controls, which the API server
//! accepts with no controller running: the generated envtest suite of such a controller creates
//! one and waits for its reconcile, where it would otherwise only have the objects the API
//! server makes itself (often none) to see.

/// A pod template the API server accepts.
const POD: &str = r#"{"containers": [{"name": "app", "image": "nginx"}]}"#;

/// The object of `api_group` `kind` (`""` for the core group) but for its metadata, as JSON.
pub fn sample(api_group: &str, kind: &str) -> Option<String> {
    let labels = r#"{"app": "envtest-sample"}"#;
    let template = format!(r#"{{"metadata": {{"labels": {labels}}}, "spec": {POD}}}"#);
    let workload = format!(
        r#"{{"spec": {{"selector": {{"matchLabels": {labels}}}, "template": {template}}}}}"#
    );
    let job = format!(
        r#"{{"template": {{"spec": {{"restartPolicy": "Never", {}}}}}}}"#,
        &POD[1..POD.len() - 1]
    );
    let sample = match (api_group, kind) {
        ("", "ConfigMap") => r#"{"data": {"key": "value"}}"#.to_string(),
        ("", "Secret") => r#"{"stringData": {"key": "value"}}"#.to_string(),
        ("", "ServiceAccount" | "Namespace") | ("coordination.k8s.io", "Lease") => "{}".into(),
        ("", "Service") => r#"{"spec": {"ports": [{"port": 80}]}}"#.to_string(),
        ("", "Pod") => format!(r#"{{"spec": {POD}}}"#),
        ("", "PersistentVolumeClaim") => r#"{"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}"#.to_string(),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => workload,
        ("batch", "Job") => format!(r#"{{"spec": {job}}}"#),
        ("batch", "CronJob") => format!(
            r#"{{"spec": {{"schedule": "0 * * * *", "jobTemplate": {{"spec": {job}}}}}}}"#
        ),
        ("networking.k8s.io", "Ingress") => r#"{"spec": {"defaultBackend": {"service": {"name": "envtest-sample", "port": {"number": 80}}}}}"#.to_string(),
        ("networking.k8s.io", "NetworkPolicy") => r#"{"spec": {"podSelector": {}}}"#.to_string(),
        ("policy", "PodDisruptionBudget") => format!(r#"{{"spec": {{"minAvailable": 1, "selector": {{"matchLabels": {labels}}}}}}}"#),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => r#"{"rules": []}"#.to_string(),
        _ => return None,
    };
    Some(sample)
}

/// The whole object of `sample`, named `name`, as JSON: what a webhook suite sends the API
/// server.
pub fn manifest(api_version: &str, kind: &str, name: &str) -> Option<String> {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let fields = sample(group, kind)?;
    // The sample's fields, without the braces around them.
    let inner = fields.trim().strip_prefix('{')?.strip_suffix('}')?.trim();
    let rest = if inner.is_empty() {
        String::new()
    } else {
        format!(", {inner}")
    };
    Some(format!(
        r#"{{"apiVersion": "{api_version}", "kind": "{kind}", "metadata": {{"name": "{name}"}}{rest}}}"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_json_objects() {
        for (group, kind) in [
            ("", "ConfigMap"),
            ("", "Pod"),
            ("apps", "Deployment"),
            ("batch", "CronJob"),
            ("networking.k8s.io", "Ingress"),
            ("policy", "PodDisruptionBudget"),
        ] {
            let sample = sample(group, kind).unwrap();
            let value: serde_json::Value = serde_json::from_str(&sample).unwrap();
            assert!(value.is_object(), "{kind}: {sample}");
        }
        assert_eq!(sample("", "Node"), None);
    }

    #[test]
    fn a_manifest_is_the_sample_with_its_type_and_name() {
        let pod: serde_json::Value =
            serde_json::from_str(&manifest("v1", "Pod", "x").unwrap()).unwrap();
        assert_eq!(pod["apiVersion"], "v1");
        assert_eq!(pod["metadata"]["name"], "x");
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
        let deployment = manifest("apps/v1", "Deployment", "x").unwrap();
        assert!(
            deployment.contains(r#""kind": "Deployment""#),
            "{deployment}"
        );
        let namespace: serde_json::Value =
            serde_json::from_str(&manifest("v1", "Namespace", "x").unwrap()).unwrap();
        assert_eq!(namespace["kind"], "Namespace");
        assert_eq!(manifest("v1", "Node", "x"), None);
    }
}
