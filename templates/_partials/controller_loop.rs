{% include "_partials/controller_watch.rs" %}
/// Reconciles one {{ r.kind }}, timed and counted in the metrics.
pub async fn reconcile(obj: Arc<{{ r.type_name }}>, state: Arc<State>) -> Result<Action> {
    let timer = state.ctx.metrics.reconcile_started(CONTROLLER);
    let result = match state.ctx.bounded(reconcile_through_finalizer(obj.clone(), &state)).await {
        // Cut short before it could show: shown now, within a time limit of its own.
        Err(err @ Error::Timeout(_)) => state.ctx.bounded(report_failure(&obj, &state, err)).await,
        result => result,
    };
    timer.finish(&result, state.ctx.settings.sync_period);
    result
}

/// The client of `obj`'s own {{ r.kind }}s.
{%- if r.namespaced %}
fn api_of(obj: &{{ r.type_name }}, state: &State) -> Result<Api<{{ r.type_name }}>> {
    let namespace = obj.namespace().ok_or_else(|| Error::MissingNamespace(obj.name_any()))?;
    Ok(Api::namespaced(state.ctx.client.clone(), &namespace))
}
{%- else %}
fn api_of(_obj: &{{ r.type_name }}, state: &State) -> Result<Api<{{ r.type_name }}>> {
    Ok(Api::all(state.ctx.client.clone()))
}
{%- endif %}

/// Shows a failure in `obj`'s status (`Ready=False`) and as a Warning event, as `apply` and
/// `cleanup` show theirs, and returns it for the retry.
async fn report_failure(obj: &{{ r.type_name }}, state: &State, err: Error) -> Result<Action> {
    let status = failed_status(obj, &err);
    let api = api_of(obj, state)?;
    let reported = state.ctx.report(&api, obj, obj.status.as_ref(), &status, crate::context::Hold::No, FIELD_MANAGER, Err(err));
    reported.await.map(|(action, _): (Action, Action)| action)
}

/// Reconciles one {{ r.kind }} through the finalizer: `apply` while it lives, `cleanup` once
/// it is being deleted.
async fn reconcile_through_finalizer(obj: Arc<{{ r.type_name }}>, state: &State) -> Result<Action> {
    let api = api_of(&obj, state)?;
{%- if r.deploy_image %}
    // In a burst of new objects, their children before their finalizers (see `finalizer_order`).
    let children_first = CHILDREN_BEFORE_FINALIZER && state.busy();
    match state.finalizer_order.next(obj.as_ref(), FINALIZER, children_first) {
        Some(finalizer_order::Next::CacheBehind) => return Ok(Action::await_change()),
        Some(finalizer_order::Next::ChildrenFirst) => {
            apply(&obj, &api, state, true).await?;
            state.ctx.retries.forget(&retry_key(obj.as_ref()));
            return Ok(Action::requeue(finalizer_order::RECHECK));
        }
        Some(finalizer_order::Next::AddFinalizer) | None => {}
    }
{%- endif %}
    let reconciled = finalizer(&api, FINALIZER, obj.clone(), |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &api, state{% if r.deploy_image %}, false{% endif %}).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &api, state).await,
        }
    })
    .await;
{%- if r.deploy_image %}
    if reconciled.is_ok() {
        state.finalizer_order.added(obj.as_ref(), FINALIZER);
    }
{%- endif %}
    let action = match reconciled {
        // A reconcile queued behind the one that removed the finalizer (by its children's
        // Delete events) reads the object from a cache that still shows it: the change fails,
        // and the object is gone, or still there without the finalizer (a foreground deletion,
        // another finalizer). Nothing is left to do, and no error for the metrics to count.
        // The patch also fails, on its test of the finalizers, when someone else changed them
        // after the cache read them: the watch brings the new list, and the next reconcile
        // tries again. Otherwise the change was refused (an admission webhook or policy):
        // that shows.
        Err(err @ (kube::runtime::finalizer::Error::AddFinalizer(_) | kube::runtime::finalizer::Error::RemoveFinalizer(_))) => {
            let removing = matches!(err, kube::runtime::finalizer::Error::RemoveFinalizer(_));
            let fresh = api.get_opt(&obj.name_any()).await?;
            let ours = fresh.as_ref().is_some_and(|fresh| fresh.finalizers().iter().any(|f| f == FINALIZER));
            let cache_behind = fresh.as_ref().is_some_and(|fresh| fresh.finalizers() != obj.finalizers());
            if fresh.is_some() && ours == removing && !cache_behind {
                return report_failure(&obj, state, Error::Finalizer(Box::new(err))).await;
            }
            Action::await_change()
        }
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
