//! What a PROJECT file must hold beyond its shape: names opsdk could have written, and each
//! version of a kind once. A hand edit that breaks them is refused before a command uses it
//! (it would otherwise write a kind's module twice, or a sample named after a bad domain).

use std::collections::BTreeSet;

use anyhow::Result;

use super::{Project, Resource};
use crate::validate;

impl Project {
    /// The first fault found, as one line.
    pub(super) fn fault(&self) -> Option<String> {
        let first_line = |checked: Result<()>| {
            checked.err().map(|e| {
                let text = e.to_string();
                let line = text.lines().next().unwrap_or_default();
                line.replacen("invalid --", "invalid ", 1)
            })
        };
        if let Some(fault) = first_line(validate::domain(&self.domain)) {
            return Some(fault);
        }
        if let Some(fault) = first_line(validate::project_name(&self.project_name, "PROJECT")) {
            return Some(fault);
        }
        let mut seen = BTreeSet::new();
        for r in &self.resources {
            let api = format!("{}/{} {}", r.group, r.version, r.kind);
            if !seen.insert((&r.domain, &r.group, &r.version, &r.kind)) {
                return Some(format!("resource {api} is recorded twice"));
            }
            if r.external || r.builtin().is_some() {
                continue;
            }
            let own = [
                (!r.group.is_empty()).then(|| validate::group(&r.group)),
                Some(validate::version(&r.version)),
                Some(validate::kind(&r.kind)),
                Some(validate::plural(&r.plural)),
            ];
            if let Some(fault) = own.into_iter().flatten().find_map(first_line) {
                return Some(format!("resource {api}: {fault}"));
            }
        }
        // Once every entry is known to be recorded once.
        self.resources
            .iter()
            .filter(|r| !r.external && r.builtin().is_none())
            .find_map(|r| {
                let api = format!("{}/{} {}", r.group, r.version, r.kind);
                self.kind_fault(r)
                    .map(|fault| format!("resource {api}: {fault}"))
            })
    }

    /// What the versions of `r`'s kind must agree on, `r` against the first of them: they are
    /// one CRD (one plural and scope), one controller, and a conversion hub's
    /// spokes are versions the kind has.
    fn kind_fault(&self, r: &Resource) -> Option<String> {
        // Own kinds only: a controller for another project's or Kubernetes' kind of the same
        // group and kind is recorded beside them (another full group).
        let versions: Vec<&Resource> = (self.resources.iter())
            .filter(|o| o.same_kind(r) && !o.external && o.builtin().is_none())
            .collect();
        let first = versions[0];
        if (&r.plural, r.namespaced) != (&first.plural, first.namespaced) {
            return Some(format!(
                "its plural or namespaced differs from version {}'s, though every version is one CRD",
                first.version
            ));
        }
        let controllers = versions.iter().filter(|o| o.controller).count();
        if r.controller && controllers > 1 {
            return Some(format!(
                "{controllers} versions of kind {} record a controller; a kind has one",
                r.kind
            ));
        }
        let spokes = r
            .webhooks
            .as_ref()
            .map(|w| w.spoke.as_slice())
            .unwrap_or_default();
        let missing = spokes
            .iter()
            .find(|v| *v == &r.version || !versions.iter().any(|o| &o.version == *v));
        missing.map(|v| format!("spoke {v} is not another version of kind {}", r.kind))
    }
}
