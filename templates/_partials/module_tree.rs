{% for group in groups %}
{%- if group.module %}
pub mod {{ group.module }} {
{%- endif %}
{%- for version in group.versions %}
pub mod {{ version.module }} {
{%- for kind in version.kinds %}
    mod {{ kind.module }};
    pub use {{ kind.module }}::*;
{%- if kind.hub and kind.hub != kind.version %}
    mod {{ kind.conversion_module }};
{%- endif %}
{%- endfor %}
}
{%- endfor %}
{%- if group.module %}
}
{%- endif %}
{% endfor %}