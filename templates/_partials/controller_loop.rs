{% include "_partials/controller_watch.rs" %}
/// Reconciles one {{ r.kind }}, timed and counted in the metrics.
pub async fn reconcile(obj: Arc<{{ r.type_name }}>, state: Arc<State>) -> Result<Action> {
    let timer = state.ctx.metrics.reconcile_started(CONTROLLER);
    let result = state.ctx.bounded(reconcile_through_finalizer(obj, &state)).await;
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
    let reconciled = finalizer(&api, FINALIZER, obj.clone(), |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, state).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &api, state).await,
        }
    })
    .await;
    let action = match reconciled {
        // Gone while its finalizer was being changed: a reconcile queued behind the one that
        // removed the finalizer (by its children's Delete events) finds nothing left to do,
        // and is no error for the metrics and alerts to count.
        Err(
            kube::runtime::finalizer::Error::AddFinalizer(kube::Error::Api(status))
            | kube::runtime::finalizer::Error::RemoveFinalizer(kube::Error::Api(status)),
        ) if status.code == 404 => Action::await_change(),
        reconciled => reconciled.map_err(|err| Error::Finalizer(Box::new(err)))?,
    };
    state.ctx.retries.forget(&retry_key(obj.as_ref()));
    Ok(action)
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
