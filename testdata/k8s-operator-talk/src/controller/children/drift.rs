//! How a child in the cache is compared with its desired state: every field the controller sets
//! must match, fields others set stay theirs, except in maps whose every key matters.

use serde_json::Value;

/// Maps whose every key changes what the object does, so a key another writer adds is drift:
/// a Service's selector with one more label selects none of our Pods. Elsewhere (labels,
/// annotations) keys others set stay theirs.
const EXACT_MAPS: [&str; 1] = ["/spec/selector"];

/// Sets to null in `wanted` each key of an exact map that `current` has and `wanted` lacks:
/// `contains` then sees the difference, and the merge patch removes the key.
pub(super) fn unset_foreign_keys(current: &Value, wanted: &mut Value) {
    for path in EXACT_MAPS {
        let (Some(Value::Object(have)), Some(Value::Object(want))) =
            (current.pointer(path), wanted.pointer_mut(path))
        else {
            continue;
        };
        for key in have.keys() {
            want.entry(key.as_str()).or_insert(Value::Null);
        }
    }
}

/// Whether every field `desired` sets has the same value in `current`. Lists must have the
/// same length and match item by item; fields `desired` leaves empty are ignored.
pub fn contains(current: &Value, desired: &Value) -> bool {
    match (current, desired) {
        (Value::Object(current), Value::Object(desired)) => desired.iter().all(|(key, value)| {
            current
                .get(key)
                .map_or_else(|| is_empty(value), |c| contains(c, value))
        }),
        (Value::Array(current), Value::Array(desired)) => {
            current.len() == desired.len()
                && current.iter().zip(desired).all(|(c, d)| contains(c, d))
        }
        (current, desired) => current == desired || (current.is_null() && is_empty(desired)),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.values().all(is_empty),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}
