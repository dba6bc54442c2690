    // Watched; the finalizer is added and removed with a patch.
    Rule { api_groups: &["{{ r.api_group }}"], resources: &["{{ r.plural }}"], verbs: &["list", "watch", "patch"] },
    Rule { api_groups: &["{{ r.api_group }}"], resources: &["{{ r.plural }}/status"], verbs: &["patch"] },
    // An ownerReference that blocks the owner's deletion needs `update` on its finalizers.
    Rule { api_groups: &["{{ r.api_group }}"], resources: &["{{ r.plural }}/finalizers"], verbs: &["update"] },