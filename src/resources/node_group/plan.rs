//! A node group's plan: its spec from the resource's values, its node list
//! with each node's server and config hash; and the clients an apply runs
//! with (the apply itself is the runbook's: `cluster::apply`).

use crate::cluster::apply::Clients;
use crate::cluster::budget::Budget;
use crate::cluster::group::SnapshotRule;
use crate::cluster::leftovers::{self, Found};
use crate::cluster::settings::{ClusterSettings, Keys, NodeTraits, config_sha256};
use crate::cluster::{ClusterError, GroupSpec, NodeRecord, NodeSlot, naming, preflight};
use crate::provider::Context;
use crate::resources::values::string_map;
use crate::talos::Role;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// A group's spec from the object that holds its `server_type`, `location`
/// (at `location_path`) and `server_labels`.
pub fn group_spec(
    group: &str,
    role: Role,
    servers: &Value,
    location_path: AttrPath,
    traits: NodeTraits,
) -> GroupSpec {
    let (location, _) = preflight::location(
        servers.get("location").as_str().unwrap_or_default(),
        location_path,
    );
    GroupSpec {
        group: group.to_string(),
        role,
        server_type: servers
            .get("server_type")
            .as_str()
            .unwrap_or_default()
            .to_string(),
        location,
        server_labels: string_map(servers.get("server_labels")),
        traits,
        budget: Budget::ONE,
        // A control plane refuses risky changes until its resource says
        // otherwise (`etcd_backup`, `skip_pre_change_snapshot`).
        snapshots: match role {
            Role::ControlPlane => SnapshotRule::Refuse,
            Role::Worker => SnapshotRule::NotNeeded,
        },
        restore_from: None,
    }
}

/// The planned node list, and how many of its nodes need a new server.
/// With `configs` (everything known), each node's config hash is planned;
/// a config that cannot be made is an error at `patches`.
pub fn plan_nodes(
    slots: &[NodeSlot],
    prior: &[NodeRecord],
    configs: Option<(&ClusterSettings, &GroupSpec)>,
    patches: &AttrPath,
    diagnostics: &mut Diagnostics,
) -> (Value, usize) {
    let mut new_servers = 0;
    // A configured node answering without the cluster's CA that is to stay:
    // the plan says so (the apply refuses it; an error here would also stop
    // `terraform destroy`, whose refresh plans too). One that goes
    // (scale-down) needs no config.
    for node in prior
        .iter()
        .filter(|n| slots.iter().any(|s| s.name == n.name))
    {
        if let Some(answer) = node.untrusted() {
            let error = ClusterError::Untrusted {
                node: node.name.clone(),
                answer: answer.to_string(),
            };
            diagnostics.push(error.to_diagnostic().into_warning());
        }
    }
    let nodes = slots
        .iter()
        .map(|slot| {
            let sha = match configs {
                Some((settings, spec)) => {
                    match settings.node_config(&slot.name, slot.ip, spec.role, &spec.traits) {
                        Ok(config) => Value::from(config_sha256(&config)),
                        Err(e) => {
                            diagnostics.push(
                                Diagnostic::error(
                                    "Invalid machine config",
                                    format!("{}: {e}", slot.name),
                                )
                                .at(patches.clone()),
                            );
                            Value::Unknown
                        }
                    }
                }
                None => Value::Unknown,
            };
            let server_id = match prior.iter().find(|n| n.name == slot.name) {
                Some(node) => Value::from(node.server_id),
                None => {
                    new_servers += 1;
                    Value::Unknown
                }
            };
            Value::object([
                ("name", Value::from(slot.name.as_str())),
                ("server_id", server_id),
                ("ip", Value::from(slot.ip.to_string())),
                ("config_sha256", sha),
            ])
        })
        .collect();
    (Value::List(nodes), new_servers)
}

/// The plan's look for servers of the group (of the whole cluster when
/// `group` is None) that state does not know (`cluster::leftovers`), when
/// it would create servers: those that may be live make it fail with their
/// names and the ways out; those that hold nothing are announced for
/// deletion. `keys` (None while unknown, for a new cluster) recognise
/// this cluster's own.
pub async fn strangers(
    ctx: &Context,
    cluster: &str,
    group: Option<&str>,
    network: i64,
    prior: &[NodeRecord],
    keys: Option<&Keys>,
) -> Diagnostics {
    let mut diagnostics = Diagnostics::new();
    let client = match ctx.hcloud() {
        Ok(c) => c,
        Err(d) => return d.into(),
    };
    let selector = match group {
        Some(group) => naming::group_selector(cluster, group),
        None => naming::cluster_selector(cluster),
    };
    let servers = match client.servers(&selector).await {
        Ok(s) => s,
        Err(e) => {
            return e
                .to_diagnostic(&format!("listing the servers of {cluster}"))
                .into();
        }
    };
    if servers
        .iter()
        .all(|s| prior.iter().any(|n| n.server_id == s.id))
    {
        return diagnostics;
    }
    let proxy = match ctx.talos_proxy().await {
        Ok(p) => p,
        Err(d) => return d.into(),
    };
    let fingerprint = keys.map(Keys::fingerprint);
    let trust = keys.and_then(|k| k.api_trust().ok());
    let found = leftovers::strangers(
        &servers,
        prior,
        fingerprint.as_deref(),
        network,
        proxy,
        trust.as_ref(),
    )
    .await;
    if let Some(refusal) = leftovers::refusal(cluster, group, &found) {
        diagnostics.push(refusal.to_diagnostic());
    }
    let empty: Vec<&str> = found
        .iter()
        .filter(|s| s.found == Found::Empty)
        .map(|s| s.name.as_str())
        .collect();
    if !empty.is_empty() {
        diagnostics.push(Diagnostic::warning(
            "Leftover servers will be deleted",
            format!(
                "{} carry this cluster's labels, are not in state and run no config (Talos \
                 answers in maintenance mode): left by an interrupted create. The apply \
                 deletes them before it creates the group's servers.",
                empty.join(", ")
            ),
        ));
    }
    diagnostics
}

/// This provider instance's clients for an operation on a group of
/// `settings`' cluster.
pub async fn clients(ctx: &Context, settings: &ClusterSettings) -> Result<Clients, Diagnostic> {
    Ok(Clients {
        hcloud: ctx.hcloud()?,
        proxy: ctx.talos_proxy().await?,
        trust: settings.api_trust().map_err(|e| e.to_diagnostic())?,
    })
}
