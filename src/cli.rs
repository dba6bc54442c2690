//! Command-line interface: clap structs mirroring operator-sdk's commands and flags.

mod usage;

pub use usage::{report as report_usage_error, report_error};

use clap::{ArgAction, Args, Parser, Subcommand};
use clap_complete::Shell;

use crate::project_file::License;

#[derive(Debug, Parser)]
#[command(
    name = "opsdk",
    version,
    about = "Scaffold Kubernetes operators in Rust, the operator-sdk way"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Initialize a new operator project in the current directory
    Init(InitArgs),
    /// Scaffold a Kubernetes API (CRD types) and its controller
    #[command(subcommand)]
    Create(CreateCommand),
    /// Remove a Kubernetes API (CRD types) and its controller, or an API's webhooks
    #[command(subcommand)]
    Delete(DeleteCommand),
    /// Change project-wide settings of an existing project
    Edit(EditArgs),
    /// Print the opsdk version and the versions it pins in generated projects
    Version,
    /// Print a shell completion script
    Completion {
        #[arg(value_enum)]
        shell: Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Add an API (CRD types) and its controller to the project
    Api(CreateApiArgs),
    /// Add webhooks (defaulting, validation, conversion) for an API of the project, or admission webhooks for one of Kubernetes' own kinds
    Webhook(CreateWebhookArgs),
}

#[derive(Debug, Subcommand)]
pub enum DeleteCommand {
    /// Remove an API version (and, with its last version, the kind) from the project
    Api(DeleteApiArgs),
    /// Remove webhooks (defaulting, validation, conversion) of an API of the project
    Webhook(DeleteWebhookArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Domain of the project's API groups
    #[arg(long, default_value = "my.domain")]
    pub domain: String,
    /// Repository path, e.g. github.com/owner/name; its last segment names the project
    #[arg(long)]
    pub repo: Option<String>,
    /// Project (crate) name [default: the last segment of --repo, else the directory name]
    #[arg(long)]
    pub project_name: Option<String>,
    /// Copyright owner for the license
    #[arg(long, default_value = "")]
    pub owner: String,
    /// License of the generated project [default: that of a LICENSE already in the
    /// directory when it is MIT or Apache-2.0, else apache2]
    #[arg(long, value_enum)]
    pub license: Option<License>,
    /// Scaffold a namespace-scoped manager: it watches only the namespaces in WATCH_NAMESPACE
    /// (its own when deployed), granted by a Role and RoleBinding instead of a ClusterRole
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub namespaced: bool,
    /// Optional parts, comma-separated: `helm` (a Helm chart under dist/chart)
    #[arg(long, value_delimiter = ',', value_name = "PLUGIN")]
    pub plugins: Vec<String>,
    /// Print the files that would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Accepted for kubebuilder's scripts: opsdk checks no Go version
    #[arg(long, hide = true)]
    pub skip_go_version_check: bool,
}

/// Each setting is optional: what is not given keeps its value in PROJECT.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// Make the manager namespace-scoped (Role, RoleBinding, WATCH_NAMESPACE), or with
    /// `--namespaced=false` cluster-wide again (ClusterRole, ClusterRoleBinding)
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub namespaced: Option<bool>,
    /// License of the project (LICENSE, Cargo.toml's `license`)
    #[arg(long, value_enum)]
    pub license: Option<License>,
    /// Copyright owner (LICENSE, Cargo.toml's `authors`)
    #[arg(long)]
    pub owner: Option<String>,
    /// Accepted for kubebuilder's habit: every opsdk project lays each group out apart
    /// (src/api/<group>/<version>), as kubebuilder's multigroup layout does
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub multigroup: Option<bool>,
    /// Add optional parts, comma-separated: `helm` (a Helm chart under dist/chart, regenerated
    /// by every later command)
    #[arg(long, value_delimiter = ',', value_name = "PLUGIN")]
    pub plugins: Vec<String>,
    /// Overwrite the files the change rewrites even when you changed them
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// Which API a command is about: group, version and kind, as operator-sdk names them.
#[derive(Debug, Clone, Args)]
pub struct ApiArgs {
    /// API group, prefixed to the domain; without it the group is the domain
    #[arg(long, default_value = "")]
    pub group: String,
    /// API version, e.g. v1alpha1
    #[arg(long)]
    pub version: String,
    /// Kind, in CamelCase, e.g. Application
    #[arg(long)]
    pub kind: String,
}

/// Boolean flags below accept both `--flag` and `--flag=false`, as operator-sdk's do.
#[derive(Debug, Clone, Args)]
pub struct CreateApiArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// Plural resource name [default: kubebuilder's plural of the kind]
    #[arg(long)]
    pub plural: Option<String>,
    /// Whether the resource is namespaced [default: true, or the kind's recorded scope]
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub namespaced: Option<bool>,
    /// Scaffold the API types
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub resource: bool,
    /// Scaffold the controller [default: true, or what the kind's version records with --force;
    /// with --external-api-crd --force, false refreshes the types and keeps the controller]
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub controller: Option<bool>,
    /// Give the kind an image/replicas/port spec and a controller that runs it as a Deployment
    /// and a Service (kubebuilder's deploy-image plugin) [default: true for kind Application]
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub deploy_image: Option<bool>,
    /// With --resource=false: another project's CRD (YAML) to make Rust types from, for a
    /// controller of its objects
    #[arg(long, value_name = "FILE")]
    pub external_api_crd: Option<std::path::PathBuf>,
    /// kubebuilder's plugins for this API: deploy-image (deploy-image/v1-alpha) is
    /// --deploy-image
    #[arg(long, value_delimiter = ',', value_name = "PLUGIN")]
    pub plugins: Vec<String>,
    /// Overwrite this kind's existing files
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Accepted for kubebuilder's scripts: opsdk runs no make after scaffolding
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    pub make: Option<bool>,
    /// kubebuilder's deploy-image settings, which opsdk's deploy-image kinds keep in their
    /// spec instead: refused with a hint
    #[arg(long, hide = true, value_name = "VALUE")]
    pub image: Option<String>,
    #[arg(long, hide = true, value_name = "VALUE")]
    pub image_container_command: Option<String>,
    #[arg(long, hide = true, value_name = "VALUE")]
    pub image_container_port: Option<String>,
    #[arg(long, hide = true, value_name = "VALUE")]
    pub run_as_user: Option<String>,
}

#[derive(Debug, Args)]
pub struct DeleteApiArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// Also remove this kind's files that you changed since opsdk wrote them, and rewrite a
    /// moved controller or suite where your lines conflict with the move
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be removed or rewritten, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `create webhook`'s flags, naming the webhooks to remove (every one of the version when
/// none is named).
#[derive(Debug, Args)]
pub struct DeleteWebhookArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// Remove the defaulting (mutating) webhook
    #[arg(long)]
    pub defaulting: bool,
    /// Remove the validating webhook
    #[arg(long)]
    pub programmatic_validation: bool,
    /// Remove the conversion webhook of which this version is the hub, with every spoke's
    /// conversion functions
    #[arg(long)]
    pub conversion: bool,
    /// Also remove webhook files that you changed since opsdk wrote them, and a conversion
    /// webhook whose hub is not the kind's first version (which becomes its storage version)
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be removed or rewritten, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// kubebuilder's `create webhook` flags.
#[derive(Debug, Args)]
pub struct CreateWebhookArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// Scaffold a defaulting (mutating) webhook
    #[arg(long)]
    pub defaulting: bool,
    /// Scaffold a validating webhook (create, update, delete)
    #[arg(long)]
    pub programmatic_validation: bool,
    /// Scaffold a conversion webhook: this version becomes the hub, the version stored, and
    /// every --spoke version converts through it
    #[arg(long)]
    pub conversion: bool,
    /// With --conversion: the other versions of the kind, which convert to and from the hub
    /// (repeat the flag or separate them with commas)
    #[arg(long, value_delimiter = ',', value_name = "VERSION")]
    pub spoke: Vec<String>,
    /// The kind's plural, as recorded by `create api` (checked, for kubebuilder's scripts)
    #[arg(long)]
    pub plural: Option<String>,
    /// kubebuilder's layout plugin (go/v4), accepted for its scripts: opsdk's layout is that one
    #[arg(long, value_delimiter = ',', value_name = "PLUGIN")]
    pub plugins: Vec<String>,
    /// Overwrite this version's webhook files and add webhooks it already has again
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
}
