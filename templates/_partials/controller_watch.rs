/// Sets up the watches of {{ r.kind }}s{% if r.deploy_image %} and of the Deployments and Services they own{% endif %}, and returns the
/// controller, which runs until shutdown. The watches are registered here, before the
/// manager waits for them to list (see `watches`), so nothing here may wait.
pub fn run(ctx: Arc<Context>) -> impl Future<Output = ()> + Send + 'static {
{%- if r.deploy_image %}
    let (deployments, deployment_changes) = Children::watch::<{{ r.type_name }}>(&ctx, FIELD_MANAGER, deployment_name);
    let (services, service_changes) = Children::watch::<{{ r.type_name }}>(&ctx, FIELD_MANAGER, service_name);
{%- endif %}
    // The controller's cache of {{ r.kind }}s, without managedFields: nothing here reads them,
    // and they are most of each cached object's memory.
    let (reader, writer) = reflector::store();
{%- if r.foreign_type %}
    // A new generation (a spec change) needs a reconcile, and for types without one (a
    // ConfigMap) any change; status updates of the others need none.
    let changed = predicates::generation.fallback(predicates::resource_version);
{%- else %}
    // Only a new generation (a spec change, or deletion starting) or a finalizer change needs a
    // reconcile: our own status writes would otherwise each cause one more.
    let changed = predicates::generation.combine(predicates::finalizers);
{%- endif %}
    let forget = ctx.clone();
    let mut relist = Relist::default();
{%- if r.namespaced %}
    // Every namespace, or one watch per namespace the manager is limited to (WATCH_NAMESPACE).
    let apis = ctx.settings.namespaces.apis::<{{ r.type_name }}>(&ctx.client);
{%- else %}
    let apis = vec![Api::<{{ r.type_name }}>::all(ctx.client.clone())];
{%- endif %}
    let objects = ctx
        .watches
        .watch(apis, watches::config())
        .modify(|obj| obj.managed_fields_mut().clear())
        .reflect(writer)
        // An object that is gone needs no more retries. Forgotten once the cache has let it go,
        // so that a failure recorded later finds it gone (see `error_policy`).
        .map_ok(move |event| {
            if let watcher::Event::Delete(obj) = &event {
                forget.forget(&retry_key(obj));
            }
            for dropped in relist.follow(&event) {
                forget.forget(&dropped);
            }
            event
        })
        .touched_objects()
        .predicate_filter(changed, PredicateConfig::default());
    let concurrency = ctx.settings.max_concurrent_reconciles;
    ctx.metrics.controller_started(CONTROLLER, concurrency);
{%- if not r.foreign_type %}
    let cached = reader.clone();
    ctx.metrics.count_ready(CONTROLLER, move || {
        let objects = cached.state();
        ReadyCounts::of(objects.iter().map(|obj| {
            obj.status.as_ref().and_then(|status| ready_status(&status.conditions))
        }))
    });
{%- endif %}
    let config = controller::Config::default().concurrency(concurrency);
{%- if r.deploy_image %}
    let state = Arc::new(State::new(ctx, deployments, services));
{%- else %}
    let state = Arc::new(State { ctx });
{%- endif %}
    let cache = reader.clone();
    let controller = Controller::for_stream(objects, reader)
{%- if r.deploy_image %}
        // Each child wakes the {{ r.kind }} controlling it, whichever version made it.
        .watches_stream(deployment_changes, |d| controller_of::<{{ r.type_name }}>(&d))
        .watches_stream(service_changes, |s| controller_of::<{{ r.type_name }}>(&s))
{%- endif %}
        .with_config(config)
        // Every watch above already waits out its own failures; kube's default here would
        // add up to 30 s more after an API server outage.
        .trigger_backoff(watches::backoff())
        .shutdown_on_signal();
    async move {
        controller
            .run(reconcile, move |obj, error: &Error, state| error_policy(obj, error, state, &cache), state)
            .for_each(|result| async move {
                match result {
                    // error_policy has logged it, naming the object.
                    Ok(_) | Err(kube::runtime::controller::Error::ReconcilerFailed(..)) => {}
                    // A child's event after its owner is gone (the children's Delete events
                    // once it was deleted): nothing to do, as controller-runtime ignores it.
                    Err(err @ kube::runtime::controller::Error::ObjectNotFound(_)) => debug!(controller = CONTROLLER, "{err}"),
                    Err(err) => warn!(controller = CONTROLLER, "{err}"),
                }
            })
            .await;
    }
}

/// Retries a failed {{ r.kind }} after a jittered, growing delay (see `retry`). The failure of
/// an object deleted while its reconcile ran is not kept: its watch has already forgotten it,
/// and nothing would forget it again.
pub fn error_policy(obj: Arc<{{ r.type_name }}>, error: &Error, state: Arc<State>, cache: &reflector::Store<{{ r.type_name }}>) -> Action {
    state.ctx.metrics.reconcile_failed(CONTROLLER, error);
    let key = retry_key(obj.as_ref());
{%- if r.deploy_image %}
    let delay = retry_delay(&state.ctx.retries, &key, error);
{%- else %}
    let delay = state.ctx.retries.next_delay(&key);
{%- endif %}
    if cache.get(&reflector::ObjectRef::from_obj(obj.as_ref())).is_none_or(|cached| cached.uid() != obj.uid()) {
        state.ctx.retries.forget(&key);
    }
    warn!(controller = CONTROLLER, namespace = %obj.namespace().unwrap_or_default(), object = %obj.name_any(), retry_in = ?delay, "reconcile failed: {error}");
    Action::requeue(delay)
}
{%- if r.deploy_image %}

/// The wait before the object `key` is reconciled again after `error`. The object in a child's
/// way is not watched (it lacks the managed-by label), so its removal wakes nothing: a conflict
/// is looked at again within `CONFLICT_RECHECK`, as the manager-wide rate limit allows.
fn retry_delay(retries: &Retries, key: &str, error: &Error) -> Duration {
    match error.cause() {
        Error::ChildConflict(_) => retries.next_delay_within(key, CONFLICT_RECHECK),
        _ => retries.next_delay(key),
    }
}
{%- endif %}
