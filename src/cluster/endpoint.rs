//! The private API endpoint of `api_endpoint = "load_balancer"`: a Hetzner
//! Load Balancer named `<cluster>-api`, labelled like everything hct makes
//! (`managed-by`, `cluster`, `role=api-endpoint`), on the cluster's network
//! at the plan's IP, public interface off, one label-selector target (the
//! cluster's control planes, at their private IPs) and TCP services 6443
//! (Kubernetes), 50000 (Talos) and 50001 (trustd) with TCP health checks.
//!
//! [`ensure`] makes it so step by step, adopting what an earlier run made
//! (found by its labels) and doing only the steps still missing; it runs
//! before the control plane's servers and configs, so the endpoint exists
//! when the first node needs it. A refresh [`look`]s whether it is still
//! whole ([`gaps`]: what those steps would do), so a load balancer deleted
//! or changed outside hct shows in the plan. With `first_control_plane`, [`retire`]
//! deletes a load balancer left from the other mode once no node uses it.
//! Teardown deletes it with the cluster ([`delete`]).

use std::net::Ipv4Addr;

use futures_util::StreamExt;
use tracing::{info, warn};

use super::ClusterError;
use super::group::Group;
use super::naming;
use super::wait::Deadline;
use crate::hcloud::models::{Labels, LoadBalancer};
use crate::hcloud::{Client, HcloudError, LabelSelector};
use crate::network_plan::{CONTROL_PLANE_GROUP, KUBE_API_PORT, NetworkPlan};
use crate::talos::api::{APID_PORT, TalosClient};

/// The type hct creates: the smallest, ample for two services.
pub const LOAD_BALANCER_TYPE: &str = "lb11";
/// The `role` label of the endpoint's load balancer.
pub const ROLE_API_ENDPOINT: &str = "api-endpoint";
/// trustd on control planes: workers fetch their certificates from it at
/// the control-plane endpoints Talos knows, the cluster endpoint among them.
pub const TRUSTD_PORT: u16 = 50001;
/// The ports the load balancer forwards to every control plane: the
/// Kubernetes API, Talos' API (talosctl) and trustd.
pub const PORTS: [u16; 3] = [KUBE_API_PORT, APID_PORT, TRUSTD_PORT];

pub fn load_balancer_name(cluster: &str) -> String {
    format!("{cluster}-api")
}

pub fn load_balancer_labels(cluster: &str) -> Labels {
    Labels::from([
        (naming::MANAGED_BY.into(), naming::MANAGED_BY_HCT.into()),
        (naming::CLUSTER.into(), cluster.into()),
        (naming::ROLE.into(), ROLE_API_ENDPOINT.into()),
    ])
}

fn selector(cluster: &str) -> LabelSelector {
    LabelSelector::new()
        .eq(naming::MANAGED_BY, naming::MANAGED_BY_HCT)
        .eq(naming::CLUSTER, cluster)
        .eq(naming::ROLE, ROLE_API_ENDPOINT)
}

/// The cluster's control planes, as the load balancer's target selects them.
pub fn control_plane_selector(cluster: &str) -> LabelSelector {
    naming::group_selector(cluster, CONTROL_PLANE_GROUP)
}

/// What a load balancer of ours lacks to be the endpoint, in the order
/// [`Endpoint::ensure`] takes its steps ([`gaps`]). The first two it cannot
/// put right: the apply stops and says what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Gap {
    /// On the cluster's network at another IP than the plan's.
    OtherIp(Ipv4Addr),
    /// On another network (a load balancer joins one).
    OtherNetwork,
    /// On no network.
    NotAttached,
    PublicInterfaceOn,
    /// No label-selector target for the control planes at private IPs.
    NoTarget,
    NoService(u16),
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gap::OtherIp(at) => write!(f, "on the network at {at}, not the plan's IP"),
            Gap::OtherNetwork => write!(f, "attached to another network"),
            Gap::NotAttached => write!(f, "on no network"),
            Gap::PublicInterfaceOn => write!(f, "public interface on"),
            Gap::NoTarget => write!(f, "no control-plane target"),
            Gap::NoService(port) => write!(f, "no service on port {port}"),
        }
    }
}

/// What `lb` lacks to be the endpoint at `ip` on `network_id`; empty when
/// it is whole.
pub fn gaps(lb: &LoadBalancer, cluster: &str, network_id: i64, ip: Ipv4Addr) -> Vec<Gap> {
    let mut gaps = Vec::new();
    match lb.private_ip(network_id) {
        Some(at) if at == ip => {}
        Some(at) => gaps.push(Gap::OtherIp(at)),
        None if !lb.private_net.is_empty() => gaps.push(Gap::OtherNetwork),
        None => gaps.push(Gap::NotAttached),
    }
    if lb.public_net.enabled {
        gaps.push(Gap::PublicInterfaceOn);
    }
    let targets = control_plane_selector(cluster).to_string();
    let has_target = lb.targets.iter().any(|t| {
        t.kind == "label_selector"
            && t.use_private_ip
            && t.label_selector
                .as_ref()
                .is_some_and(|s| s.selector == targets)
    });
    if !has_target {
        gaps.push(Gap::NoTarget);
    }
    gaps.extend(
        PORTS
            .into_iter()
            .filter(|port| !lb.services.iter().any(|s| s.listen_port == *port))
            .map(Gap::NoService),
    );
    gaps
}

/// The cluster's load balancer as a refresh sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// Whole: its id.
    Whole(i64),
    /// It exists but lacks something (the plan shows an update; the apply
    /// completes it, or stops on a [`Gap`] it cannot put right).
    Lacking(i64),
    Gone,
}

/// Looks at the cluster's load balancer (the one [`Endpoint::ensure`] would
/// adopt), logging what it lacks. One request.
pub async fn look(
    client: &Client,
    cluster: &str,
    network_id: i64,
    ip: Ipv4Addr,
) -> Result<Seen, HcloudError> {
    let found = client.load_balancers(&selector(cluster)).await?;
    let Some(lb) = found.first() else {
        info!(load_balancer = %load_balancer_name(cluster), "the API load balancer is gone");
        return Ok(Seen::Gone);
    };
    let gaps = gaps(lb, cluster, network_id, ip);
    if gaps.is_empty() {
        return Ok(Seen::Whole(lb.id));
    }
    let lacks: Vec<String> = gaps.iter().map(Gap::to_string).collect();
    info!(
        load_balancer = %lb.name,
        id = lb.id,
        lacks = lacks.join(", "),
        "the API load balancer changed outside hct"
    );
    Ok(Seen::Lacking(lb.id))
}

/// What one cluster's endpoint needs.
pub struct Endpoint<'a> {
    pub client: &'a Client,
    pub cluster: &'a str,
    pub network_id: i64,
    pub location: &'a str,
    pub plan: &'a NetworkPlan,
    pub deadline: &'a Deadline,
}

impl Endpoint<'_> {
    async fn wait(
        &self,
        action: crate::hcloud::models::Action,
        doing: String,
    ) -> Result<(), ClusterError> {
        self.client
            .wait_for_actions(vec![action], &doing, self.deadline.left())
            .await
            .map_err(ClusterError::hcloud(doing))?;
        Ok(())
    }

    async fn found(&self) -> Result<Vec<LoadBalancer>, ClusterError> {
        self.client
            .load_balancers(&selector(self.cluster))
            .await
            .map_err(ClusterError::hcloud("listing the cluster's load balancers"))
    }

    /// Makes the load balancer complete in `load_balancer` mode and returns
    /// its id; nothing in `first_control_plane` mode (a load balancer left
    /// from the other mode goes once no node uses it: [`retire`]).
    pub async fn ensure(&self) -> Result<Option<i64>, ClusterError> {
        let Some(ip) = self.plan.load_balancer_ip() else {
            return Ok(None);
        };
        let name = load_balancer_name(self.cluster);
        let mut found = self.found().await?;
        let lb = if found.is_empty() {
            info!(load_balancer = %name, "creating the API load balancer");
            let doing = format!("creating load balancer {name}");
            let (lb, action) = self
                .client
                .create_load_balancer(
                    &name,
                    LOAD_BALANCER_TYPE,
                    self.location,
                    &load_balancer_labels(self.cluster),
                )
                .await
                .map_err(ClusterError::hcloud(doing.clone()))?;
            if let Some(action) = action {
                self.wait(action, doing).await?;
            }
            lb
        } else {
            if found.len() > 1 {
                warn!(
                    load_balancer = %name,
                    count = found.len(),
                    "several load balancers carry this cluster's labels; using the first"
                );
            }
            info!(load_balancer = %found[0].name, id = found[0].id, "adopting the API load balancer");
            found.swap_remove(0)
        };
        self.complete(&lb, ip).await?;
        Ok(Some(lb.id))
    }

    /// Takes the steps a load balancer of ours still lacks, in order.
    async fn complete(&self, lb: &LoadBalancer, ip: Ipv4Addr) -> Result<(), ClusterError> {
        let name = &lb.name;
        for gap in gaps(lb, self.cluster, self.network_id, ip) {
            let (doing, action) = match gap {
                Gap::OtherIp(at) => {
                    return Err(ClusterError::Refused {
                        summary: "Load balancer at another IP",
                        detail: format!(
                            "Load balancer {name} (id {}) is on the network at {at}, but the \
                             network plan's load_balancer_ip is {ip}. Set load_balancer_ip = \
                             \"{at}\", or delete the load balancer so hct makes it again at {ip}.",
                            lb.id
                        ),
                    });
                }
                Gap::OtherNetwork => {
                    return Err(ClusterError::Refused {
                        summary: "Load balancer on another network",
                        detail: format!(
                            "Load balancer {name} (id {}) is attached to another network than \
                             network {}; Hetzner load balancers join one network. Delete it so \
                             hct makes it again on the cluster's network.",
                            lb.id, self.network_id
                        ),
                    });
                }
                Gap::NotAttached => {
                    info!(load_balancer = %name, %ip, "attaching the API load balancer to the network");
                    let doing = format!(
                        "attaching load balancer {name} to network {} at {ip}",
                        self.network_id
                    );
                    let action = self
                        .client
                        .attach_load_balancer(lb.id, self.network_id, ip)
                        .await;
                    (doing, action)
                }
                Gap::PublicInterfaceOn => {
                    let doing = format!("turning off the public interface of load balancer {name}");
                    let action = self
                        .client
                        .disable_load_balancer_public_interface(lb.id)
                        .await;
                    (doing, action)
                }
                Gap::NoTarget => {
                    let doing = format!("adding the control planes to load balancer {name}");
                    let targets = control_plane_selector(self.cluster);
                    let action = self
                        .client
                        .add_load_balancer_selector_target(lb.id, &targets)
                        .await;
                    (doing, action)
                }
                Gap::NoService(port) => {
                    let doing = format!("adding service {port} to load balancer {name}");
                    let action = self.client.add_load_balancer_tcp_service(lb.id, port).await;
                    (doing, action)
                }
            };
            let action = match action {
                Ok(action) => action,
                // Refused as done already (`target_already_defined`,
                // `source_port_already_used`, …: the answer to an earlier
                // attempt was lost): done if a fresh look agrees.
                Err(e)
                    if e.code().is_some_and(|c| c.contains("already"))
                        && self.closed(lb.id, &gap, ip).await =>
                {
                    info!(load_balancer = %name, step = %doing, "done already");
                    continue;
                }
                Err(e) => return Err(ClusterError::hcloud(doing)(e)),
            };
            self.wait(action, doing).await?;
        }
        Ok(())
    }

    /// Whether a fresh look at load balancer `id` no longer shows `gap`.
    async fn closed(&self, id: i64, gap: &Gap, ip: Ipv4Addr) -> bool {
        let Ok(found) = self.found().await else {
            return false;
        };
        found
            .iter()
            .find(|lb| lb.id == id)
            .is_some_and(|lb| !gaps(lb, self.cluster, self.network_id, ip).contains(gap))
    }
}

/// With `first_control_plane`: deletes a load balancer left from
/// `load_balancer` mode once no node of the cluster may still use it: every
/// server hct made for the cluster answers over the Talos API with a
/// config whose `cluster.controlPlane.endpoint` is not the load balancer's
/// (a node still on it, or rebooting with such a config, would lose its
/// API server and trustd). The control plane and each pool call this at
/// the end of their applies, so whichever moves its nodes last deletes
/// it. Nothing in `load_balancer` mode, and one Hetzner request when there
/// is no load balancer.
pub async fn retire(group: &Group<'_>) -> Result<(), ClusterError> {
    if group.settings.plan.load_balancer_ip().is_some() {
        return Ok(());
    }
    let cluster = group.cluster();
    let found = group
        .client
        .load_balancers(&selector(cluster))
        .await
        .map_err(ClusterError::hcloud("listing the cluster's load balancers"))?;
    if found.is_empty() {
        return Ok(());
    }
    let Some(ip) = found
        .iter()
        .find_map(|lb| lb.private_ip(group.settings.network_id))
    else {
        return delete(group.client, cluster).await; // on no network: unused
    };
    let servers = group
        .client
        .servers(&naming::cluster_selector(cluster))
        .await
        .map_err(ClusterError::hcloud("listing the cluster's servers"))?;
    let endpoint = format!("https://{ip}:");
    let endpoint = endpoint.as_str();
    let reads = servers.into_iter().map(|server| async move {
        let Some(private) = server.private_ip(group.settings.network_id) else {
            return None; // off the network: it reaches no endpoint
        };
        let address = group.address(private);
        let moved = async {
            let mut client = TalosClient::connect(&address, group.trust).await.ok()?;
            let config = client.machine_config().await.ok()?;
            Some(!names_endpoint(&config, endpoint))
        };
        match moved.await {
            Some(true) => None,
            Some(false) => Some(format!("{} (on it)", server.name)),
            None => Some(format!("{} (not answering)", server.name)),
        }
    });
    let still: Vec<String> = futures_util::stream::iter(reads)
        .buffer_unordered(READS_AT_ONCE)
        .filter_map(|n| async { n })
        .collect()
        .await;
    if still.is_empty() {
        return delete(group.client, cluster).await;
    }
    info!(
        nodes = still.join(", "),
        "keeping the API load balancer until every node runs its new endpoint"
    );
    Ok(())
}

/// How many nodes' configs [`retire`] reads at once.
const READS_AT_ONCE: usize = 16;

/// Whether a running config's control-plane endpoint starts with
/// `endpoint` (`https://<ip>:`); an unreadable config counts as naming it.
fn names_endpoint(config: &str, endpoint: &str) -> bool {
    match crate::talos::config::running_endpoint(config) {
        Ok(found) => found.is_some_and(|e| e.starts_with(endpoint)),
        Err(_) => true,
    }
}

/// Deletes every load balancer hct made for `cluster`.
pub async fn delete(client: &Client, cluster: &str) -> Result<(), ClusterError> {
    let found = client
        .load_balancers(&selector(cluster))
        .await
        .map_err(ClusterError::hcloud("listing the cluster's load balancers"))?;
    for lb in found {
        info!(load_balancer = %lb.name, id = lb.id, "deleting load balancer");
        client
            .delete_load_balancer(lb.id)
            .await
            .map_err(ClusterError::hcloud(format!(
                "deleting load balancer {}",
                lb.name
            )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
