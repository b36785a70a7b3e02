//! Planning the cluster-wide settings, the same way in `hct_cluster`
//! (serial form) and `hct_cluster_secrets`: their defaults and the changes
//! that cannot be made in place; and, for `hct_cluster`'s parallel form,
//! copying them from `worker_join`.

use super::model::{self, attr};
use super::settings_schema::SETTINGS;
use crate::cluster::settings::{ConfigDelivery, WorkerJoin};
use crate::provider::Plan;
use crate::resources::values::set;
use crate::talos::Secrets;
use crate::talos::release::TalosVersion;
use crate::tf::{AttrPath, Diagnostic, Value};

/// Defaults of the optional-computed settings.
pub fn fill_defaults(planned: &mut Value, prior: &Value) {
    let default = |name: &str, value: Option<String>, planned: &mut Value| {
        if planned.get(name).is_null() {
            set(planned, name, value.map_or(Value::Unknown, Value::from));
        }
    };
    let talos = planned.get("talos_version").as_str().map(str::to_string);
    default(
        "kubernetes_version",
        talos.as_deref().and_then(model::default_kubernetes_version),
        planned,
    );
    default("schematic_id", Some(model::default_schematic()), planned);
    default(
        "install_disk",
        Some(crate::talos::config::DEFAULT_INSTALL_DISK.into()),
        planned,
    );
    default(
        "config_delivery",
        Some(ConfigDelivery::DEFAULT.as_str().into()),
        planned,
    );
    default(
        "machine_secrets",
        prior.get("machine_secrets").as_str().map(str::to_string),
        planned,
    );
}

/// Whether every setting is known (so the configs, and `worker_join`, can
/// be made at plan time).
pub fn settings_known(planned: &Value) -> bool {
    SETTINGS
        .iter()
        .all(|name| planned.get(name).is_wholly_known())
}

/// Copies the settings from the planned `worker_join` (the parallel form of
/// `hct_cluster`); all unknown while the bundle is. An invalid bundle is an
/// error at `worker_join` (its text is never quoted: it holds secrets).
pub fn copy_from_join(planned: &mut Value) -> Result<(), Diagnostic> {
    let join = match planned.get("worker_join") {
        Value::String(text) => WorkerJoin::decode(text)
            .map_err(|why| Diagnostic::error("Invalid worker_join", why).at(attr("worker_join")))?,
        _ => {
            for name in SETTINGS {
                set(planned, name, Value::Unknown);
            }
            return Ok(());
        }
    };
    let plan_text = serde_json::to_string(&join.network_plan).expect("plain JSON");
    let values = [
        ("name", Value::from(join.cluster_name.as_str())),
        ("network_id", Value::from(join.network_id)),
        ("network_plan", Value::from(plan_text)),
        ("talos_version", Value::from(join.talos_version.as_str())),
        (
            "kubernetes_version",
            Value::from(join.kubernetes_version.clone()),
        ),
        ("image_id", Value::from(join.image_id.as_str())),
        ("schematic_id", Value::from(join.schematic_id.as_str())),
        ("install_disk", Value::from(join.install_disk.as_str())),
        (
            "config_delivery",
            Value::from(join.config_delivery.as_str()),
        ),
        (
            "ssh_key_ids",
            if join.ssh_key_ids.is_empty() {
                Value::Null
            } else {
                Value::List(join.ssh_key_ids.iter().copied().map(Value::from).collect())
            },
        ),
        (
            "machine_secrets",
            Value::from(join.machine_secrets.as_str()),
        ),
    ];
    for (name, value) in values {
        set(planned, name, value);
    }
    Ok(())
}

/// Whether two `secrets.yaml` texts hold the same secrets.
fn same_secrets(a: &str, b: &str) -> bool {
    a == b
        || match (Secrets::from_yaml(a), Secrets::from_yaml(b)) {
            (Ok(a), Ok(b)) => a.to_yaml() == b.to_yaml(),
            _ => false,
        }
}

/// Changes of the settings that cannot be made in place: a new name or
/// network replaces the cluster; an older Talos release and new secrets are
/// refused. `source` is where the planned settings were set (the attribute
/// itself, or `worker_join` in the parallel form).
pub fn settings_changes(
    prior: &Value,
    proposed: &Value,
    source: Option<&AttrPath>,
    plan: &mut Plan,
) {
    let at = |name: &str| source.cloned().unwrap_or_else(|| attr(name));
    let changed = |a: &Value, b: &Value| !b.is_unknown() && a != b;
    for name in ["name", "network_id"] {
        if changed(prior.get(name), proposed.get(name)) {
            plan.requires_replace.push(at(name));
        }
    }
    // A newer talos_version is an upgrade, node by node; an older one is not.
    let releases = (
        prior
            .get("talos_version")
            .as_str()
            .map(str::parse::<TalosVersion>),
        proposed
            .get("talos_version")
            .as_str()
            .map(str::parse::<TalosVersion>),
    );
    if let (Some(Ok(running)), Some(Ok(wanted))) = releases
        && running > wanted
    {
        plan.diagnostics.push(
            Diagnostic::error(
                "talos_version cannot go back",
                format!(
                    "The nodes run Talos {running}. hct upgrades nodes in place but does not \
                     downgrade them (Talos does not support it for etcd's data). Set talos_version \
                     to {running} or newer, or replace the cluster with `terraform apply -replace`."
                ),
            )
            .at(at("talos_version")),
        );
    }
    let before = prior.get("machine_secrets");
    let after = proposed.get("machine_secrets");
    if before.is_null() && after.is_null() {
        plan.diagnostics.push(
            Diagnostic::error(
                "machine_secrets needed",
                "This cluster was imported: hct cannot read its secrets from the nodes. Set \
                 machine_secrets to the cluster's talosctl secrets.yaml (e.g. \
                 file(\"secrets.yaml\")).",
            )
            .at(at("machine_secrets")),
        );
    } else if let (Some(before), Some(after)) = (before.as_str(), after.as_str())
        && !same_secrets(before, after)
    {
        plan.diagnostics.push(
            Diagnostic::error(
                "machine_secrets cannot change",
                "The nodes trust the cluster's CAs and tokens; new secrets would lock hct (and \
                 you) out. Remove machine_secrets from the configuration, or set it back (when \
                 moving a cluster to hct_cluster_secrets, set its machine_secrets to the \
                 cluster's secrets.yaml from state: see docs/guides/private-cluster.md).",
            )
            .at(at("machine_secrets")),
        );
    }
}
