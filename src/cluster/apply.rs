//! The apply of one group (the control plane, or a pool), and its removal:
//! the runbook's entry points for `hct_cluster` and `hct_worker_pool`.
//! The sequence lives here, once: preflight of new servers, the API load
//! balancer (control plane), what Hetzner holds that state does not
//! (`leftovers`), converge, bring-up (etcd bootstrapped once), retiring the
//! load balancer, a pool's Ready wait; then what state must keep, also
//! after a failure.

use crate::net::Proxy;

use super::ClusterError;
use super::bootstrap::EtcdRecord;
use super::bring_up;
use super::endpoint::{self, Endpoint};
use super::group::{Group, GroupSpec, SnapshotLog};
use super::preflight::{self, Paths, Target};
use super::ready;
use super::record::{NodeRecord, Recorder};
use super::settings::ClusterSettings;
use super::slots::NodeSlot;
use super::wait::Deadline;
use crate::hcloud::Client;
use crate::talos::Role;
use crate::talos::api::Trust;
use crate::tf::Diagnostics;

/// The clients an operation talks through.
pub struct Clients {
    pub hcloud: Client,
    /// SOCKS5 proxy into the private network, if hct runs outside it.
    pub proxy: Option<Proxy>,
    /// The cluster's CA and admin certificate: the only way hct talks to a
    /// configured node.
    pub trust: Trust,
}

impl Clients {
    fn group<'a>(
        &'a self,
        settings: &'a ClusterSettings,
        spec: &'a GroupSpec,
        deadline: &'a Deadline,
        recorder: &'a Recorder,
        snapshots: &'a SnapshotLog,
    ) -> Group<'a> {
        Group {
            settings,
            spec,
            client: &self.hcloud,
            proxy: self.proxy,
            trust: &self.trust,
            deadline,
            recorder,
            snapshots,
        }
    }
}

/// What [`apply`] works on.
pub struct Run<'a> {
    pub clients: &'a Clients,
    pub settings: &'a ClusterSettings,
    pub spec: &'a GroupSpec,
    pub slots: &'a [NodeSlot],
    pub prior_nodes: Vec<NodeRecord>,
    /// What state knows of etcd (control planes).
    pub etcd: EtcdRecord,
    pub deadline: Deadline,
    /// Where preflight findings point.
    pub paths: &'a Paths,
    /// Whether the caller records the group's placement groups.
    pub placement_group_ids: bool,
}

/// What an apply did, also when it failed half-way.
pub struct Outcome {
    /// Every node whose server exists.
    pub nodes: Vec<NodeRecord>,
    pub placement_group_ids: Vec<i64>,
    /// The control plane's API load balancer, once whole (`load_balancer`
    /// mode only).
    pub api_load_balancer_id: Option<i64>,
    /// Servers or placement groups of the group may exist (so state must
    /// keep the resource, or nothing would ever delete them).
    pub left_something: bool,
    /// What state records of etcd from now on.
    pub etcd: EtcdRecord,
    /// What the apply did with etcd snapshots.
    pub snapshots: SnapshotLog,
    pub diagnostics: Diagnostics,
    /// The operation's deadline, for what the resource still waits on.
    pub deadline: Deadline,
}

/// Makes the group's servers match `slots` and brings the nodes up: the
/// control plane bootstrapped (once in its life) and healthy, or workers
/// running kubelet. `Err` means nothing was touched (the prior state
/// stays): preflight's findings.
pub async fn apply(run: Run<'_>) -> Result<Outcome, Diagnostics> {
    let clients = run.clients;
    let new_servers = run
        .slots
        .iter()
        .filter(|s| !run.prior_nodes.iter().any(|n| n.name == s.name))
        .count();
    if new_servers > 0 {
        let target = Target::from(run.settings);
        let found =
            preflight::group(&clients.hcloud, &target, run.spec, new_servers, run.paths).await;
        if found.has_errors() {
            return Err(found);
        }
    }
    let recorder = Recorder::new(&run.settings.cluster_name, &run.spec.group, run.prior_nodes);
    let deadline = run.deadline;
    let snapshots = SnapshotLog::default();
    let group = clients.group(run.settings, run.spec, &deadline, &recorder, &snapshots);
    let mut api_load_balancer_id = None;
    let mut etcd = run.etcd;
    let outcome = async {
        if run.spec.role == Role::ControlPlane {
            // Before any server: a lost state is imported back with them.
            super::secrets_backup::keep(&group).await?;
            // Before the servers and their configs: nodes moving to the
            // load balancer need it, and a load balancer hct cannot use
            // stops the apply before anything else is touched.
            api_load_balancer_id = Endpoint {
                client: &clients.hcloud,
                cluster: &run.settings.cluster_name,
                network_id: run.settings.network_id,
                location: &run.spec.location,
                plan: &run.settings.plan,
                deadline: &deadline,
            }
            .ensure()
            .await?;
        }
        // Servers from before this run: etcd's data may be on their disks
        // (so a missing etcd is not a lost one).
        let may_survive = group.converge(run.slots).await?;
        let nodes = recorder.nodes();
        match run.spec.role {
            Role::ControlPlane => {
                bring_up::control_plane(&group, &nodes, may_survive, &mut etcd).await?
            }
            Role::Worker => bring_up::workers(&group, &nodes).await?,
        }
        // Back to `first_control_plane`: the load balancer goes once the
        // last of the cluster's nodes has moved off it.
        endpoint::retire(&group).await?;
        // A pool's nodes Ready once a CNI runs (the control plane's wait
        // follows its manifests: `kubernetes_sync`).
        if run.spec.role == Role::Worker {
            let rule = super::this_run::cni_rule(run.settings, &deadline).await?;
            let credentials = run.settings.kubernetes_trust()?;
            ready::wait_ready(
                run.settings,
                &credentials,
                clients.proxy,
                &nodes,
                rule,
                &deadline,
            )
            .await?;
        }
        Ok::<(), ClusterError>(())
    }
    .await;
    let mut diagnostics = Diagnostics::new();
    let failed = outcome.is_err();
    if let Err(e) = outcome {
        diagnostics.push(e.to_diagnostic());
    }
    let nodes = recorder.nodes();
    let mut left_something = !nodes.is_empty() || api_load_balancer_id.is_some();
    // A control plane's apply makes its load balancer first: one that failed
    // later may have left it (billed) with no server.
    if let Some(ip) = run.settings.plan.load_balancer_ip()
        && failed
        && !left_something
        && run.spec.role == Role::ControlPlane
    {
        let cluster = &run.settings.cluster_name;
        let seen = endpoint::look(&clients.hcloud, cluster, run.settings.network_id, ip).await;
        left_something = !matches!(seen, Ok(endpoint::Seen::Gone));
    }
    let mut placement_group_ids = Vec::new();
    // A failure before the first server may still have created the
    // group's placement groups: look, to keep them in state.
    if run.placement_group_ids || (failed && !left_something) {
        match group.placement_group_ids().await {
            Ok(ids) => {
                left_something |= !ids.is_empty();
                if run.placement_group_ids {
                    placement_group_ids = ids;
                }
            }
            Err(e) => {
                left_something = true; // unknown: keep what may exist
                if run.placement_group_ids {
                    diagnostics.push(e.to_diagnostic());
                }
            }
        }
    }
    Ok(Outcome {
        nodes,
        placement_group_ids,
        api_load_balancer_id,
        left_something,
        etcd,
        snapshots,
        diagnostics,
        deadline,
    })
}

/// Removes every node of the group (scale-down to nothing: graceful resets,
/// then the servers and placement groups). On failure, the nodes left.
pub async fn remove_all(
    clients: &Clients,
    settings: &ClusterSettings,
    spec: &GroupSpec,
    prior_nodes: Vec<NodeRecord>,
    deadline: &Deadline,
) -> Result<(), (Vec<NodeRecord>, ClusterError)> {
    let recorder = Recorder::new(&settings.cluster_name, &spec.group, prior_nodes);
    let snapshots = SnapshotLog::default();
    let group = clients.group(settings, spec, deadline, &recorder, &snapshots);
    group
        .converge(&[])
        .await
        .map(|_| ())
        .map_err(|e| (recorder.nodes(), e))
}
