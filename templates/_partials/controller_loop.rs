/// Sets up the watches of {{ r.kind }}s{% if r.deploy_image %} and of the Deployments and Services they own{% endif %}, and returns the
/// controller, which runs until shutdown. The watches are registered here, before the
/// manager waits for them to list (see `watches`), so nothing here may wait.
pub fn run(ctx: Arc<Context>) -> impl Future<Output = ()> + Send + 'static {
{%- if r.deploy_image %}
    let (deployments, deployment_changes) = Children::watch(&ctx, FIELD_MANAGER);
    let (services, service_changes) = Children::watch(&ctx, FIELD_MANAGER);
{%- endif %}
    // The controller's cache of {{ r.kind }}s, without managedFields: nothing here reads them,
    // and they are most of each cached object's memory.
    let (reader, writer) = reflector::store();
    // Only a new generation (a spec change, or deletion starting) or a finalizer change needs a
    // reconcile: our own status writes would otherwise each cause one more.
    let changed = predicates::generation.combine(predicates::finalizers);
    let forget = ctx.clone();
{%- if r.namespaced %}
    // Every namespace, or one watch per namespace the manager is limited to (WATCH_NAMESPACE).
    let apis = ctx.settings.namespaces.apis::<{{ r.type_name }}>(&ctx.client);
{%- else %}
    let apis = vec![Api::<{{ r.type_name }}>::all(ctx.client.clone())];
{%- endif %}
    let objects = ctx
        .watches
        .watch(apis, watcher::Config::default().any_semantic())
        // An object that is gone needs no more retries.
        .map_ok(move |event| {
            if let watcher::Event::Delete(obj) = &event {
                forget.forget(&retry_key(obj));
            }
            event
        })
        .modify(|obj| obj.managed_fields_mut().clear())
        .reflect(writer)
        .touched_objects()
        .predicate_filter(changed, PredicateConfig::default());
    let concurrency = ctx.settings.max_concurrent_reconciles;
    ctx.metrics.controller_started(CONTROLLER, concurrency);
    let config = controller::Config::default().concurrency(concurrency);
{%- if r.deploy_image %}
    let state = Arc::new(State { ctx, deployments, services });
{%- else %}
    let state = Arc::new(State { ctx });
{%- endif %}
    let controller = Controller::for_stream(objects, reader)
{%- if r.deploy_image %}
        .owns_stream(deployment_changes)
        .owns_stream(service_changes)
{%- endif %}
        .with_config(config)
        // Every watch above already waits out its own failures; kube's default here would
        // add up to 30 s more after an API server outage.
        .trigger_backoff(watches::backoff())
        .shutdown_on_signal();
    async move {
        controller
            .run(reconcile, error_policy, state)
            .for_each(|result| async move {
                if let Err(err) = result {
                    warn!(controller = CONTROLLER, "{err}");
                }
            })
            .await;
    }
}

/// Reconciles one {{ r.kind }}, timed and counted in the metrics.
pub async fn reconcile(obj: Arc<{{ r.type_name }}>, state: Arc<State>) -> Result<Action> {
    let timer = state.ctx.metrics.reconcile_started(CONTROLLER);
    let result = reconcile_through_finalizer(obj, &state).await;
    timer.finish(&result, state.ctx.settings.sync_period);
    result
}

/// Reconciles one {{ r.kind }} through the finalizer: `apply` while it lives, `cleanup` once
/// it is being deleted.
async fn reconcile_through_finalizer(obj: Arc<{{ r.type_name }}>, state: &State) -> Result<Action> {
{%- if r.namespaced %}
    let namespace = obj.namespace().ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    let api: Api<{{ r.type_name }}> = Api::namespaced(state.ctx.client.clone(), &namespace);
{%- else %}
    let api: Api<{{ r.type_name }}> = Api::all(state.ctx.client.clone());
{%- endif %}
    let action = finalizer(&api, FINALIZER, obj.clone(), |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, state).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &api, state).await,
        }
    })
    .await
    .map_err(|err| Error::Finalizer(Box::new(err)))?;
    state.ctx.retries.forget(&retry_key(obj.as_ref()));
    Ok(action)
}

/// Retries a failed {{ r.kind }} after a jittered, growing delay (see `retry`).
pub fn error_policy(obj: Arc<{{ r.type_name }}>, error: &Error, state: Arc<State>) -> Action {
    state.ctx.metrics.reconcile_failed(CONTROLLER, error);
    let delay = state.ctx.retries.next_delay(&retry_key(obj.as_ref()));
    warn!(controller = CONTROLLER, object = %obj.name_any(), retry_in = ?delay, "reconcile failed: {error}");
    Action::requeue(delay)
}

/// The status `obj` shows after `error`: `Ready=False` with the error's reason and message,
/// the other conditions as they were.
fn failed_status(obj: &{{ r.type_name }}, error: &Error) -> {{ r.kind }}Status {
    let mut status = obj.status.clone().unwrap_or_default();
    let ready = Condition::new("Ready", false, error.reason(), error.message(), obj.metadata.generation, &status.conditions);
    set_condition(&mut status.conditions, ready);
    status.observed_generation = obj.metadata.generation;
    status
}
