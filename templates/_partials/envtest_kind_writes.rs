
/// Whatever the controller's code does, the API server lets the manager's ServiceAccount
/// change only its own finalizer on {{ r.article }} {{ r.kind }} (config/policy/manager_kind_policy.yaml,
/// installed by the harness as config/default does): tried with dry runs on `obj`, which
/// carries the finalizer and is not being deleted, each changing one thing; `spec` is another
/// spec for it. The suite deletes its objects after this, through the controller's removal of
/// the finalizer, which the policy must let through.
async fn the_api_server_limits_what_the_manager_changes_in_{{ r.plural }}(cp: &ControlPlane, obj: &{{ r.type_name }}, spec: Value) {
    let manager = cp.manager_client().await;
{%- if r.namespaced %}
    let api: Api<{{ r.type_name }}> = Api::namespaced(manager, &obj.namespace().unwrap());
{%- else %}
    let api: Api<{{ r.type_name }}> = Api::all(manager);
{%- endif %}
    let name = obj.name_any();
    let dry_run = PatchParams { dry_run: true, ..PatchParams::default() };
    let patch = |change: Value| {
        let api = api.clone();
        let (name, dry_run) = (name.clone(), dry_run.clone());
        async move { api.patch(&name, &dry_run, &Patch::Merge(&change)).await.map(|_| ()) }
    };
    let refusal = |outcome: Result<(), kube::Error>| match outcome {
        Err(kube::Error::Api(status)) if status.message.contains("ValidatingAdmissionPolicy") => Some(status.message),
        _ => None,
    };
    // The harness waits for the policy on Deployments, when the project has one; this one may
    // be enforced a moment later.
    let message = eventually("a spec change refused", || async { refusal(patch(json!({"spec": spec})).await) }).await;
    assert!(message.contains("no spec, label or annotation"), "{message}");
    let forged = json!([{
        "manager": "envtest-forged", "operation": "Update", "apiVersion": "{{ r.api_version }}",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:finalizers": {}}},
    }]);
    for (what, change, because) in [
        ("a label", json!({"metadata": {"labels": {"app": "payments"}}}), "no spec, label or annotation"),
        ("an annotation", json!({"metadata": {"annotations": {"note": "x"}}}), "no spec, label or annotation"),
        ("another finalizer", json!({"metadata": {"finalizers": [controller::FINALIZER, "example.com/other"]}}), "no finalizer but"),
        ("its finalizer removed from a live object", json!({"metadata": {"finalizers": []}}), "only from an object being deleted"),
        ("who owns which field", json!({"metadata": {"managedFields": forged}}), "managedFields"),
    ] {
        let message = refusal(patch(change).await).unwrap_or_else(|| panic!("{what}: not refused by the policy"));
        assert!(message.contains(because), "{what}: {message}");
    }
    // An owner: refused too, here before the policy sees it (the control plane runs
    // OwnerReferencesPermissionEnforcement, and the manager may not delete {{ r.plural }}).
    let owner = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "00000000-0000-0000-0000-000000000000"}]);
    let outcome = patch(json!({"metadata": {"ownerReferences": owner}})).await;
    assert!(matches!(&outcome, Err(kube::Error::Api(status)) if status.code == 403), "an owner: {outcome:?}");
    // Its finalizer added and, once the object is being deleted, removed: the controller's
    // own writes, which the suite's other steps make under the policy.
    assert_eq!(api.get(&name).await.unwrap().finalizers(), [controller::FINALIZER], "a dry run changed the object");
}
