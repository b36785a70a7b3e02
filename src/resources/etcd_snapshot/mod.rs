//! `action "hct_etcd_snapshot"`: an etcd snapshot when a person asks for
//! one (`terraform apply -invoke=action.hct_etcd_snapshot.<name>`,
//! Terraform 1.14 or later; OpenTofu has no actions). It is taken like the
//! snapshot before a risky change (`cluster::etcd_snapshot`): over the
//! Talos API of the control planes the cluster's talosconfig names, with
//! its CA only, checked, age-encrypted and kept where `etcd_backup` says.
//! Here: the schema, the checks, and decoding the configuration into the
//! runbook's typed inputs. It changes no resource and leaves nothing in
//! state.

#[cfg(test)]
mod tests;

use std::time::Duration;

use async_trait::async_trait;

use super::s3_bucket::Keys;
use super::snapshot_destination;
use crate::backup::{Destination, Recipients, Why};
use crate::cluster::ClusterError;
use crate::cluster::etcd_snapshot::{self, Source};
use crate::cluster::settings::os_ca_fingerprint;
use crate::cluster::wait::Deadline;
use crate::provider::{Action, Context, Progress};
use crate::talos::api::{TalosError, Trust};
use crate::talos::client_config::{TalosconfigAccess, talosconfig_access};
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Mode, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_etcd_snapshot";
const TALOSCONFIG: &str = "talosconfig";
const TIMEOUT: &str = "timeout";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

pub struct EtcdSnapshotAction;

fn schema() -> Schema {
    Schema::new(
        0,
        "Takes an etcd snapshot of a cluster when invoked (`terraform apply \
             -invoke=action.hct_etcd_snapshot.<name>`, Terraform 1.14 or later): from the \
             first control plane whose etcd answers, checked against etcd's hash, encrypted to \
             the age recipients and kept as `<cluster>-<UTC time>-on-demand.etcd.age` (its \
             facts beside it) where `etcd_backup` says. Changes no resource. See \
         docs/guides/backup-and-restore.md.",
    )
    .attribute(
        Attribute::required(TALOSCONFIG, Type::String)
            .sensitive()
            .description(
                "The cluster's talosconfig (`hct_cluster.<name>.talosconfig`): the \
                     control planes it names are asked, in its order, with its CA and \
                     admin certificate; a node that answers with another CA is not.",
            ),
    )
    .attribute(
        snapshot_destination::attribute(Mode::Required, Keys::Action, Why::OnDemand).description(
            "Where the snapshot goes and to whom it is encrypted, as `hct_cluster`'s \
                 `etcd_backup` (a `local_directory`, relative to the directory Terraform runs \
                 in, or a `bucket`).",
        ),
    )
    .attribute(
        Attribute::optional(TIMEOUT, Type::String)
            .description("How long the snapshot may take, a Go duration. Default \"10m\"."),
    )
}

/// The configuration, typed.
struct Input {
    access: TalosconfigAccess,
    destination: Destination,
    recipients: Recipients,
    timeout: Duration,
}

fn timeout(config: &Value) -> Result<Duration, Diagnostic> {
    match config.get(TIMEOUT).as_str() {
        None => Ok(DEFAULT_TIMEOUT),
        Some(text) => crate::duration::parse(text).map_err(|why| {
            Diagnostic::error(
                "Invalid timeout",
                format!("{text:?}: {why}. Write e.g. \"10m\"."),
            )
            .at(AttrPath::attr(TIMEOUT))
        }),
    }
}

fn access(config: &Value) -> Result<TalosconfigAccess, Diagnostic> {
    let text = config.get(TALOSCONFIG).as_str().unwrap_or_default();
    talosconfig_access(text)
        .filter(|a| !a.nodes.is_empty())
        .ok_or_else(|| {
            Diagnostic::error(
                "Not a talosconfig of hct's",
                "talosconfig must be a cluster's talosconfig as hct_cluster gives it \
                 (hct_cluster.<name>.talosconfig): a current context whose nodes are the \
                 control planes' IPs, with its CA, certificate and key.",
            )
            .at(AttrPath::attr(TALOSCONFIG))
        })
}

fn decode(config: &Value) -> Result<Input, Diagnostic> {
    let access = access(config)?;
    let (destination, recipients) = snapshot_destination::destination(config, &access.cluster)?;
    Ok(Input {
        access,
        destination,
        recipients,
        timeout: timeout(config)?,
    })
}

#[async_trait]
impl Action for EtcdSnapshotAction {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let mut found = snapshot_destination::validate(config);
        if config.get(TALOSCONFIG).is_wholly_known()
            && let Err(d) = access(config)
        {
            found.push(d);
        }
        if let Err(d) = timeout(config) {
            found.push(d);
        }
        found
    }

    async fn invoke(&self, ctx: &Context, config: &Value, progress: &Progress) -> Diagnostics {
        let input = match decode(config) {
            Ok(input) => input,
            Err(d) => return d.into(),
        };
        let proxy = match ctx.talos_proxy().await {
            Ok(proxy) => proxy,
            Err(d) => return d.into(),
        };
        let credentials = input.access.credentials;
        let secrets_fingerprint = os_ca_fingerprint(&credentials.ca);
        let trust = Trust::Admin(credentials.into());
        let deadline = Deadline::new(input.timeout, ctx.cancel.clone(), ctx.pace());
        let source = Source {
            cluster: &input.access.cluster,
            secrets_fingerprint,
            kubernetes_version: None,
            nodes: input
                .access
                .nodes
                .iter()
                .map(|ip| (ip.to_string(), *ip))
                .collect(),
            proxy,
            trust: &trust,
            deadline: &deadline,
        };
        let say = |line: String| progress.say(line);
        let taken = etcd_snapshot::on_demand(&source, &input.destination, &input.recipients, &say);
        match taken.await {
            Ok(_) => Diagnostics::new(),
            Err(e) => failed(e, input.timeout).into(),
        }
    }
}

/// What went wrong, in the words of an action: it keeps nothing in state
/// and has no `timeouts` block, and a node with another CA is one the
/// talosconfig does not fit, not a server to recreate.
fn failed(e: ClusterError, limit: Duration) -> Diagnostic {
    let detail = match &e {
        ClusterError::Stopped { .. } => {
            format!("{e}. No snapshot was kept; invoke the action again to take one.")
        }
        ClusterError::Timeout { .. } => format!(
            "{e}. No snapshot was kept within {}. Check that talos_proxy reaches the private \
             network and that etcd runs on a control plane (talosctl service etcd), then invoke \
             again, with a longer `timeout` if the snapshot is large.",
            crate::duration::format(limit)
        ),
        ClusterError::Talos(TalosError::WrongCa { .. }) => format!(
            "{e}. No control plane of the talosconfig answered with its CA. Give the action the \
             talosconfig of this cluster (hct_cluster.<name>.talosconfig, current after the last \
             apply); no snapshot was taken."
        ),
        _ => return e.to_diagnostic(),
    };
    Diagnostic::error("No etcd snapshot taken", detail)
}
