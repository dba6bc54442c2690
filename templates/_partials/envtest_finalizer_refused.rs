
/// A finalizer the API server refuses to add (here an admission policy on {{ r.plural }}
/// labelled `no-finalizers`) turns Ready False with the refusal and a Warning event. The
/// controller runs under the manager's own role, which must let it tell a refused change from
/// an object already gone.
async fn a_refused_finalizer_shows_in_the_status(admin: &Client, api: &Api<{{ r.type_name }}>, mut obj: {{ r.type_name }}) {
    use k8s_openapi::api::events::v1::Event;
    use kube::api::{ApiResource, DynamicObject};
    // Untyped: a kind may be named like any built-in type.
    let admission = |kind: &str, plural: &str| {
        let resource = ApiResource {
            group: "admissionregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "admissionregistration.k8s.io/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::<DynamicObject>::all_with(admin.clone(), &resource)
    };
    let rule = json!({"apiGroups": ["{{ r.api_group }}"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["{{ r.plural }}"]});
    let validation = json!({
        "expression": "!has(object.metadata.labels) || !('no-finalizers' in object.metadata.labels) || !has(object.metadata.finalizers) || size(object.metadata.finalizers) == 0",
        "message": "labelled no-finalizers: finalizers refused",
    });
    let policy_spec = json!({"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [rule]}, "validations": [validation]});
    let binding_spec = json!({"policyName": "envtest-no-finalizers", "validationActions": ["Deny"]});
    let policies = admission("ValidatingAdmissionPolicy", "validatingadmissionpolicies");
    let bindings = admission("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings");
    for (api, spec) in [(&policies, policy_spec), (&bindings, binding_spec)] {
        let object = serde_json::from_value(json!({"metadata": {"name": "envtest-no-finalizers"}, "spec": spec})).unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }

    obj.metadata.labels = Some([("no-finalizers".to_string(), "true".to_string())].into());
    let mut probe = obj.clone();
    probe.metadata.finalizers = Some(vec!["envtest/probe".into()]);
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    eventually("the policy enforced", || async {
        match api.create(&dry_run, &probe).await {
            Err(kube::Error::Api(status)) => status.message.contains("finalizers refused").then_some(()),
            _ => None,
        }
    })
    .await;

    api.create(&PostParams::default(), &obj).await.unwrap();
    let name = obj.name_any();
    let message = eventually("the refused finalizer in the status", || async {
        let ready = api.get(&name).await.unwrap().status?.conditions.into_iter().find(|c| c.type_ == "Ready")?;
        (ready.status == "False" && ready.reason == "ReconcileError").then_some(ready.message)
    })
    .await;
    assert!(message.contains("finalizers refused"), "{message}");
    let events: Api<Event> = Api::all(admin.clone());
    eventually("a ReconcileError Warning event", || async {
        let events = events.list(&Default::default()).await.unwrap().items;
        events
            .iter()
            .any(|e| {
                e.type_.as_deref() == Some("Warning")
                    && e.reason.as_deref() == Some("ReconcileError")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name.as_str())
            })
            .then_some(())
    })
    .await;

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    bindings.delete("envtest-no-finalizers", &DeleteParams::default()).await.unwrap();
    policies.delete("envtest-no-finalizers", &DeleteParams::default()).await.unwrap();
}
