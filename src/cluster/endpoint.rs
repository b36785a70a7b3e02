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
//! when the first node needs it. With `first_control_plane`, [`retire`]
//! deletes a load balancer left from the other mode once no node uses it.
//! Teardown deletes it with the cluster ([`delete`]).

use futures_util::StreamExt;
use tracing::{info, warn};

use super::ClusterError;
use super::group::Group;
use super::naming;
use super::wait::Deadline;
use crate::hcloud::models::{Labels, LoadBalancer};
use crate::hcloud::{Client, LabelSelector};
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

    /// Makes the load balancer complete in `load_balancer` mode; nothing in
    /// `first_control_plane` mode (a load balancer left from the other mode
    /// goes once no node uses it: [`retire`]).
    pub async fn ensure(&self) -> Result<(), ClusterError> {
        let Some(ip) = self.plan.load_balancer_ip() else {
            return Ok(());
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
        self.complete(&lb, ip).await
    }

    /// The steps a load balancer of ours may still lack, in order.
    async fn complete(
        &self,
        lb: &LoadBalancer,
        ip: std::net::Ipv4Addr,
    ) -> Result<(), ClusterError> {
        let name = &lb.name;
        match lb.private_ip(self.network_id) {
            Some(at) if at == ip => {}
            Some(at) => {
                return Err(ClusterError::Refused {
                    summary: "Load balancer at another IP",
                    detail: format!(
                        "Load balancer {name} (id {}) is on the network at {at}, but the network \
                         plan's load_balancer_ip is {ip}. Set load_balancer_ip = \"{at}\", or \
                         delete the load balancer so hct makes it again at {ip}.",
                        lb.id
                    ),
                });
            }
            None if !lb.private_net.is_empty() => {
                return Err(ClusterError::Refused {
                    summary: "Load balancer on another network",
                    detail: format!(
                        "Load balancer {name} (id {}) is attached to another network than \
                         network {}; Hetzner load balancers join one network. Delete it so hct \
                         makes it again on the cluster's network.",
                        lb.id, self.network_id
                    ),
                });
            }
            None => {
                info!(load_balancer = %name, %ip, "attaching the API load balancer to the network");
                let doing = format!(
                    "attaching load balancer {name} to network {} at {ip}",
                    self.network_id
                );
                let action = self
                    .client
                    .attach_load_balancer(lb.id, self.network_id, ip)
                    .await
                    .map_err(ClusterError::hcloud(doing.clone()))?;
                self.wait(action, doing).await?;
            }
        }
        if lb.public_net.enabled {
            let doing = format!("turning off the public interface of load balancer {name}");
            let action = self
                .client
                .disable_load_balancer_public_interface(lb.id)
                .await
                .map_err(ClusterError::hcloud(doing.clone()))?;
            self.wait(action, doing).await?;
        }
        let targets = control_plane_selector(self.cluster);
        let has_target = lb.targets.iter().any(|t| {
            t.kind == "label_selector"
                && t.use_private_ip
                && t.label_selector
                    .as_ref()
                    .is_some_and(|s| s.selector == targets.to_string())
        });
        if !has_target {
            let doing = format!("adding the control planes to load balancer {name}");
            let action = self
                .client
                .add_load_balancer_selector_target(lb.id, &targets)
                .await
                .map_err(ClusterError::hcloud(doing.clone()))?;
            self.wait(action, doing).await?;
        }
        for port in PORTS {
            if lb.services.iter().any(|s| s.listen_port == port) {
                continue;
            }
            let doing = format!("adding service {port} to load balancer {name}");
            let action = self
                .client
                .add_load_balancer_tcp_service(lb.id, port)
                .await
                .map_err(ClusterError::hcloud(doing.clone()))?;
            self.wait(action, doing).await?;
        }
        Ok(())
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

/// Whether a running config's `cluster.controlPlane.endpoint` starts with
/// `endpoint` (`https://<ip>:`); an unreadable config counts as naming it.
fn names_endpoint(config: &str, endpoint: &str) -> bool {
    let Ok(documents) = crate::talos::yaml::parse_documents(config) else {
        return true;
    };
    documents.iter().any(|d| {
        d.pointer("/cluster/controlPlane/endpoint")
            .and_then(|e| e.as_str())
            .is_some_and(|e| e.starts_with(endpoint))
    })
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
mod tests {
    use super::*;

    #[test]
    fn a_config_names_the_endpoint_only_in_its_control_plane_endpoint() {
        let on = "version: v1alpha1\ncluster:\n  controlPlane:\n    endpoint: https://10.0.128.254:6443\n  apiServer:\n    certSANs: [10.0.128.254]\n";
        let off = "version: v1alpha1\ncluster:\n  controlPlane:\n    endpoint: https://10.0.128.17:6443\n  apiServer:\n    certSANs: [10.0.128.254]\n";
        assert!(names_endpoint(on, "https://10.0.128.254:"));
        assert!(!names_endpoint(off, "https://10.0.128.254:"));
        assert!(names_endpoint("a: [", "https://10.0.128.254:"));
    }

    #[test]
    fn names_labels_and_selectors() {
        assert_eq!(load_balancer_name("noreturn"), "noreturn-api");
        let labels = load_balancer_labels("noreturn");
        assert_eq!(labels["role"], "api-endpoint");
        assert_eq!(labels["cluster"], "noreturn");
        assert_eq!(
            control_plane_selector("noreturn").to_string(),
            "managed-by=hct,cluster=noreturn,pool=cp"
        );
        assert_eq!(PORTS, [6443, 50000, 50001]);
    }
}
