//! Why building or changing a cluster failed, with what to do about it.

use std::time::Duration;

use crate::backup::BackupError;
use crate::duration;
use crate::hcloud::HcloudError;
use crate::talos::api::TalosError;
use crate::talos::config::ConfigError;
use crate::tf::{AttrPath, Diagnostic};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{doing}: {source}")]
    Hcloud {
        doing: String,
        #[source]
        source: Box<HcloudError>,
    },
    #[error("{0}")]
    Talos(#[from] TalosError),
    #[error(
        "{node}: {step}: gave up after {} (timeout {}); last: {last}",
        duration::format(*.waited),
        duration::format(*.timeout)
    )]
    Timeout {
        node: String,
        step: String,
        waited: Duration,
        timeout: Duration,
        last: String,
        /// The wait for a node's first answer (see [`wait::first_answer`]).
        ///
        /// [`wait::first_answer`]: super::wait::first_answer
        first_answer: bool,
    },
    #[error("stopped by Terraform (Ctrl-C) while {step}")]
    Stopped { step: String },
    #[error("{node}: machine config: {source}")]
    Config {
        node: String,
        #[source]
        source: Box<ConfigError>,
    },
    #[error("Talos API credentials: {0}")]
    Credentials(String),
    #[error("{0}")]
    Conflict(String),
    /// A pool's `worker_join` does not match its cluster as it runs.
    #[error("{detail}")]
    ForeignJoin { detail: String },
    /// The cluster's control plane failed in this run, so a pool stopped
    /// waiting for it.
    #[error("{detail}")]
    ControlPlaneFailed { detail: String },
    /// The Kubernetes API refused what hct applied.
    #[error("{node}: {reason}")]
    Kubernetes { node: String, reason: String },
    /// The bootstrap manifests (or hct's add-ons) could not be applied.
    #[error("{why}")]
    ManifestsNotApplied { why: String },
    /// State records a bootstrap, but every control plane is gone or new
    /// and none has etcd: the cluster's data is gone.
    #[error(
        "etcd is lost: no control plane ({}) has etcd data, none is left from before this \
         apply, yet the cluster was bootstrapped before",
        .nodes.join(", ")
    )]
    EtcdLost { nodes: Vec<String> },
    /// Servers of the cluster (of one group, or of any) that state does
    /// not know and that may be live.
    #[error(
        "{} of cluster {cluster} include servers this state does not know and that may run a \
         live cluster: {}",
        .group.as_ref().map_or("the servers".to_string(), |g| format!("the {g} servers")),
        .servers.iter().map(|(name, why)| format!("{name} ({why})")).collect::<Vec<_>>().join(", ")
    )]
    Strangers {
        cluster: String,
        /// None: the whole cluster's servers.
        group: Option<String>,
        /// Each server's name, and why it may be live.
        servers: Vec<(String, String)>,
    },
    /// A node state knows as configured answers without the cluster's CA.
    #[error("{node} is in state as configured, but {answer}; hct sent it nothing")]
    Untrusted { node: String, answer: String },
    /// A change hct will not make, found before anything was touched.
    #[error("{detail}")]
    Refused {
        summary: &'static str,
        detail: String,
    },
    /// The etcd snapshot before a change could not be written.
    #[error("{0}")]
    Backup(BackupError),
    /// The snapshot of `restore_from` could not be read.
    #[error("{0}")]
    Restore(BackupError),
    /// The machine secrets could not be kept beside the snapshots.
    #[error("{0}")]
    SecretsBackup(BackupError),
}

impl ClusterError {
    pub fn hcloud(doing: impl Into<String>) -> impl FnOnce(HcloudError) -> ClusterError {
        let doing = doing.into();
        move |source| ClusterError::Hcloud {
            doing,
            source: Box::new(source),
        }
    }

    pub fn config(node: &str) -> impl FnOnce(ConfigError) -> ClusterError {
        let node = node.to_string();
        move |source| ClusterError::Config {
            node,
            source: Box::new(source),
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            ClusterError::Hcloud { doing, source } => source.to_diagnostic(doing),
            ClusterError::Talos(error) => error.to_diagnostic("talking to a node"),
            ClusterError::Timeout {
                node,
                first_answer: true,
                ..
            } => Diagnostic::error(
                format!("Timed out waiting for {node}"),
                format!(
                    "{self}.\n\nThe node's server exists and is recorded in state. A new \
                     private-only node that never answers has one of two likely causes:\n\
                     1. Talos cannot reach Hetzner's metadata service ({metadata}) over the \
                     private network. Talos then neither configures itself nor enters \
                     maintenance mode: it retries for ever, as the server's console in the \
                     Hetzner Console shows. Check that the server is attached to the network \
                     and that nothing (a firewall, a route of your own) diverts {metadata}.\n\
                     2. No egress: Talos pulls its installer and images from the internet, \
                     through the network's route 0.0.0.0/0. Check that the route exists \
                     (`hcloud network describe`) and that its gateway, the NAT box, forwards \
                     and masquerades (`sysctl net.ipv4.ip_forward` is 1, an iptables \
                     MASQUERADE rule for the network's range).\n\
                     Also check that talos_proxy reaches the private network. Raise the \
                     timeout with a `timeouts` block if the nodes are just slow; rerun apply \
                     to continue.",
                    metadata = crate::network_plan::HETZNER_METADATA,
                ),
            ),
            ClusterError::Timeout { node, .. } => Diagnostic::error(
                format!("Timed out waiting for {node}"),
                format!(
                    "{self}.\n\nThe node's server exists and is recorded in state. Check that \
                     the network has a route 0.0.0.0/0 to a working NAT gateway (nodes pull \
                     their images through it), that talos_proxy reaches the private network, \
                     and the server's console in the Hetzner Console. Raise the timeout with a \
                     `timeouts` block if the nodes are just slow; rerun apply to continue."
                ),
            ),
            ClusterError::Stopped { .. } => Diagnostic::error(
                "Stopped",
                format!(
                    "{self}. Everything created so far is in state; run apply again to continue."
                ),
            ),
            ClusterError::Config { .. } => Diagnostic::error(
                "Invalid machine config",
                format!("{self}. Fix config_patches or the cluster's inputs."),
            ),
            ClusterError::Credentials(_) => Diagnostic::error(
                "Invalid machine secrets",
                format!("{self}. machine_secrets must be a talosctl secrets.yaml."),
            ),
            ClusterError::Conflict(_) => {
                Diagnostic::error("Conflicting object on Hetzner", self.to_string())
            }
            ClusterError::Kubernetes { .. } => Diagnostic::error(
                "The Kubernetes API refused an object",
                format!(
                    "{self}. The nodes run; apply again to retry (the apply is recorded as \
                     not finished)."
                ),
            ),
            ClusterError::ManifestsNotApplied { why } => Diagnostic::error(
                "Could not apply the bootstrap manifests",
                format!(
                    "{why}. The control plane runs; apply again to retry (the manifests stay \
                     planned as changes)."
                ),
            )
            .at(AttrPath::attr("bootstrap_manifests")),
            ClusterError::Refused { summary, detail } => Diagnostic::error(*summary, detail),
            ClusterError::Strangers {
                cluster,
                group,
                servers,
            } => {
                let names: Vec<&str> = servers.iter().map(|(name, _)| name.as_str()).collect();
                let cluster_import = format!(
                    "`terraform import hct_cluster.<name> {cluster}` after setting \
                     machine_secrets to its secrets.yaml"
                );
                let import = match group.as_deref() {
                    Some(crate::network_plan::CONTROL_PLANE_GROUP) => cluster_import,
                    Some(pool) => {
                        format!("`terraform import 'hct_worker_pool.<name>' {cluster}/{pool}`")
                    }
                    None => format!(
                        "{cluster_import}, and each pool with `terraform import \
                         'hct_worker_pool.<name>' {cluster}/<pool>`"
                    ),
                };
                Diagnostic::error(
                    "Servers of this cluster that state does not know",
                    format!(
                        "{self}.\n\nhct never deletes or configures a server it cannot prove is \
                         a leftover of its own. One of these is the case:\n\
                         - This cluster's state was lost: import it, {import}; the plan after \
                         is empty and nothing is replaced (docs/guides/recovery.md).\n\
                         - Another workspace manages a cluster named {cluster} in this Hetzner \
                         project: give this one another name.\n\
                         - A first apply of this workspace was killed and lost the secrets it \
                         made (the serial form makes them during the apply; \
                         hct_cluster_secrets keeps them in state first): delete these servers \
                         (`hcloud server delete {}`) and apply again.",
                        names.join(" ")
                    ),
                )
            }
            ClusterError::Untrusted { node, .. } => Diagnostic::error(
                format!("{node} does not answer with this cluster's CA"),
                format!(
                    "{self}.\n\nAfter a node is configured, hct talks to it only with the \
                     cluster's CA: a node in maintenance mode takes a config from anyone, and \
                     a control plane's config holds every CA key. The server was reinstalled, \
                     wiped, or replaced by someone else's. Ways out: if it is yours to rebuild, \
                     delete it (`hcloud server delete {node}`) and apply: hct creates it anew \
                     and it joins the cluster. If it runs another cluster whose secrets are \
                     yours, import that cluster with its secrets (docs/guides/recovery.md)."
                ),
            ),
            ClusterError::EtcdLost { .. } => Diagnostic::error(
                "The cluster's etcd is lost",
                format!(
                    "{self}.\n\nhct bootstraps etcd once in a cluster's life and never starts a \
                     new, empty etcd under the same secrets: that would look like the old \
                     cluster with all its objects gone. The control planes run and wait, in \
                     state. To recover, set restore_from to a snapshot hct wrote (etcd_backup) \
                     and apply, or restore etcd by hand on one of them (`talosctl -n <node> \
                     bootstrap --recover-from=<db.snapshot>`, docs/guides/recovery.md); the \
                     others join it, and the next apply finds etcd running. To start over \
                     with an empty cluster instead: `terraform apply -replace=hct_cluster.<name>` \
                     (or destroy it and apply again)."
                ),
            ),
            ClusterError::Backup(_) => Diagnostic::error(
                "Could not write the etcd snapshot before this change",
                format!(
                    "{self}.\n\nNo running control plane was changed (new ones may have been \
                     created, stopped ones started). Fix etcd_backup (a local_directory must be \
                     writable; a bucket must exist and take its keys), or set \
                     skip_pre_change_snapshot = true to go on without a snapshot."
                ),
            )
            .at(AttrPath::attr("etcd_backup")),
            ClusterError::SecretsBackup(_) => Diagnostic::error(
                "Could not keep the machine secrets beside the etcd snapshots",
                format!(
                    "{self}.\n\nNothing was changed: hct keeps the secrets (encrypted to \
                     etcd_backup.age_recipients) before it creates or changes a control plane. \
                     Fix etcd_backup (a local_directory must be writable; a bucket must exist \
                     and take its keys), or remove etcd_backup."
                ),
            )
            .at(AttrPath::attr("etcd_backup")),
            ClusterError::Restore(_) => Diagnostic::error(
                "Could not read the snapshot to restore etcd from",
                format!(
                    "{self}.\n\nNothing was sent to the control planes; they wait, in state. \
                     Fix restore_from (the snapshot hct wrote, and the age identity file of one \
                     of its recipients), then apply again."
                ),
            )
            .at(AttrPath::attr("restore_from")),
            ClusterError::ControlPlaneFailed { detail } => {
                Diagnostic::error("The cluster's control plane failed in this apply", detail)
            }
            ClusterError::ForeignJoin { detail } => {
                Diagnostic::error("worker_join is not this cluster's", detail)
                    .at(AttrPath::attr("worker_join"))
            }
        }
    }
}
