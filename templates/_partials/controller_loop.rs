
/// Watches {{ r.kind }}s{% if r.deploy_image %} and the Deployments and Services they own{% endif %} until shutdown.
{%- if not r.deploy_image %} Add `.owns(...)` for every kind of child you create.{% endif %}
pub async fn run(ctx: Arc<Context>) {
    let client = ctx.client.clone();
{%- if r.deploy_image %}
    let owned = watcher::Config::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
{%- endif %}
    // The controller's cache of {{ r.kind }}s, without managedFields: nothing here reads them,
    // and they are most of each cached object's memory.
    let (reader, writer) = reflector::store();
    // Only a new generation (a spec change, or deletion starting) or a finalizer change needs a
    // reconcile: our own status writes would otherwise each cause one more.
    let changed = predicates::generation.combine(predicates::finalizers);
    let objects = watcher(Api::<{{ r.type_name }}>::all(client.clone()), watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(|obj| obj.managed_fields_mut().clear())
        .reflect(writer)
        .touched_objects()
        .predicate_filter(changed, PredicateConfig::default());
    Controller::for_stream(objects, reader)
{%- if r.deploy_image %}
        .owns(Api::<appsv1::Deployment>::all(client.clone()), owned.clone())
        .owns(Api::<corev1::Service>::all(client), owned)
{%- endif %}
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                warn!(controller = CONTROLLER, "{err}");
            }
        })
        .await;
}

/// Reconciles one {{ r.kind }} through the finalizer: `apply` while it lives, `cleanup` once
/// it is being deleted.
pub async fn reconcile(obj: Arc<{{ r.type_name }}>, ctx: Arc<Context>) -> Result<Action> {
    let _timer = ctx.metrics.reconcile_started(CONTROLLER);
    let key = object_key(obj.as_ref());
{%- if r.namespaced %}
    let namespace = obj.namespace().ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let api: Api<{{ r.type_name }}> = Api::namespaced(ctx.client.clone(), &namespace);
{%- else %}
    let api: Api<{{ r.type_name }}> = Api::all(ctx.client.clone());
{%- endif %}
    let action = finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, &ctx).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &ctx).await,
        }
    })
    .await
    .map_err(|err| Error::Finalizer(Box::new(err)))?;
    ctx.reset_backoff(&key);
    Ok(action)
}

/// Retries a failed {{ r.kind }} with exponential backoff (1 s doubling to 5 min).
pub fn error_policy(obj: Arc<{{ r.type_name }}>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconcile_failed(CONTROLLER, error);
    let key = object_key(obj.as_ref());
    let delay = ctx.backoff(&key);
    warn!(controller = CONTROLLER, object = %key, retry_in = ?delay, "reconcile failed: {error}");
    Action::requeue(delay)
}
