    // Watched; the finalizer is added and removed with a patch, and when that fails, one GET
    // tells whether the object is gone or the change was refused.
    Rule { api_groups: &["{{ r.api_group }}"], resources: &["{{ r.plural }}"], verbs: &["get", "list", "watch", "patch"] },
    Rule { api_groups: &["{{ r.api_group }}"], resources: &["{{ r.plural }}/status"], verbs: &["patch"] },
    // An ownerReference that blocks the owner's deletion needs `update` on its finalizers.
    Rule { api_groups: &["{{ r.api_group }}"], resources: &["{{ r.plural }}/finalizers"], verbs: &["update"] },