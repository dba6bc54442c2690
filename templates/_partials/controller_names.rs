/// Name of this controller in logs and metrics.
const CONTROLLER: &str = "{{ r.name_stem }}";
/// Field manager of this controller's writes: one per controller, so that two controllers
/// writing the same field show up as a conflict instead of silently taking turns.
const FIELD_MANAGER: &str = "{{ project.name }}-{{ r.name_stem }}";