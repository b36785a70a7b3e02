//! The planned network: every address and range the cluster uses, derived
//! from inputs that passed validation.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::attributes::Checked;
use super::endpoint::ApiEndpoint;
use super::names::{CONTROL_PLANE_GROUP, KUBE_API_PORT};
use super::{capacity, hetzner, nodes};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPlan {
    network_cidr: Ipv4Net,
    node_subnet: Ipv4Net,
    gateway: Ipv4Addr,
    /// The first control-plane node.
    api_host: Ipv4Addr,
    /// Where the Kubernetes API is reached.
    api_endpoint: ApiEndpoint,
    control_plane: NodeGroup,
    worker_pools: BTreeMap<String, NodeGroup>,
    service_cidr: Ipv4Net,
    pod_cidr: Ipv4Net,
    pod_cidr_mask_size: u8,
    native_routing_cidr: Ipv4Net,
    multi_datacenter: bool,
    max_nodes: u32,
}

/// The control plane or one worker pool, with its nodes' addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroup {
    pub cidr: Ipv4Net,
    pub nodes: u32,
    /// Node `i` gets `ips[i]`, host `i + 1` of `cidr`.
    pub ips: Vec<Ipv4Addr>,
    /// Spread placement groups needed (at most 10 servers each).
    pub placement_groups: u32,
}

impl NodeGroup {
    fn new(cidr: Ipv4Net, nodes: u32) -> Option<Self> {
        Some(Self {
            cidr,
            nodes,
            ips: nodes::node_ips(cidr, nodes)?,
            placement_groups: hetzner::placement_groups_for(nodes),
        })
    }
}

impl NetworkPlan {
    /// Builds the plan from validated inputs; `None` if any is missing or
    /// the values do not form a plan (validation reports why).
    pub(crate) fn from_checked(c: &Checked) -> Option<Self> {
        let network_cidr = c.network_cidr?;
        let pod_cidr = c.pod_cidr?;
        let pod_cidr_mask_size = c.pod_cidr_mask_size?;
        let control_plane = NodeGroup::new(c.control_plane.cidr?, c.control_plane.nodes?)?;
        let api_host = *control_plane.ips.first()?;
        let worker_pools = c
            .worker_pools
            .as_ref()?
            .iter()
            .map(|(name, group)| Some((name.clone(), NodeGroup::new(group.cidr?, group.nodes?)?)))
            .collect::<Option<_>>()?;
        Some(Self {
            network_cidr,
            node_subnet: c.node_subnet?,
            gateway: hetzner::gateway(network_cidr)?,
            api_host,
            api_endpoint: c.endpoint?,
            control_plane,
            worker_pools,
            service_cidr: c.service_cidr?,
            pod_cidr,
            pod_cidr_mask_size,
            native_routing_cidr: c.native_routing_cidr?,
            multi_datacenter: c.multi_datacenter?,
            max_nodes: capacity::max_nodes(pod_cidr, pod_cidr_mask_size)?,
        })
    }

    pub fn network_cidr(&self) -> Ipv4Net {
        self.network_cidr
    }

    pub fn node_subnet(&self) -> Ipv4Net {
        self.node_subnet
    }

    /// The network's first host (10.0.0.0/16 -> 10.0.0.1); nodes route their
    /// default traffic through it. Computed by `hetzner::gateway`.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    pub fn control_plane(&self) -> &NodeGroup {
        &self.control_plane
    }

    pub fn worker_pools(&self) -> &BTreeMap<String, NodeGroup> {
        &self.worker_pools
    }

    /// The control-plane CIDR, then the pool CIDRs in pool-name order: the
    /// only ranges kubelet may pick a node IP from (`kubelet.nodeIP.validSubnets`).
    pub fn node_cidrs(&self) -> Vec<Ipv4Net> {
        std::iter::once(self.control_plane.cidr)
            .chain(self.worker_pools.values().map(|pool| pool.cidr))
            .collect()
    }

    /// `https://<first control-plane IP>:6443`, or the load balancer's IP.
    pub fn cluster_endpoint(&self) -> String {
        format!("https://{}:{KUBE_API_PORT}", self.api_ip())
    }

    /// The address in [`Self::cluster_endpoint`].
    pub fn api_ip(&self) -> Ipv4Addr {
        match self.api_endpoint {
            ApiEndpoint::FirstControlPlane => self.api_host,
            ApiEndpoint::LoadBalancer { ip } => ip,
        }
    }

    pub fn api_endpoint(&self) -> ApiEndpoint {
        self.api_endpoint
    }

    /// The load balancer's private IP, in `load_balancer` mode.
    pub fn load_balancer_ip(&self) -> Option<Ipv4Addr> {
        match self.api_endpoint {
            ApiEndpoint::FirstControlPlane => None,
            ApiEndpoint::LoadBalancer { ip } => Some(ip),
        }
    }

    /// etcd peers talk over the control-plane range only.
    pub fn etcd_advertised_subnets(&self) -> Vec<Ipv4Net> {
        vec![self.control_plane.cidr]
    }

    pub fn service_cidr(&self) -> Ipv4Net {
        self.service_cidr
    }

    pub fn pod_cidr(&self) -> Ipv4Net {
        self.pod_cidr
    }

    pub fn pod_cidr_mask_size(&self) -> u8 {
        self.pod_cidr_mask_size
    }

    /// How many nodes the pod CIDR serves: 2^(mask size - pod prefix),
    /// e.g. a /19 split into /24s serves 32.
    pub fn max_nodes(&self) -> u32 {
        self.max_nodes
    }

    pub fn native_routing_cidr(&self) -> Ipv4Net {
        self.native_routing_cidr
    }

    pub fn multi_datacenter(&self) -> bool {
        self.multi_datacenter
    }

    /// Spread placement groups per group: `cp` for the control plane, then
    /// each pool by name.
    pub fn placement_groups(&self) -> BTreeMap<String, u32> {
        std::iter::once((
            CONTROL_PLANE_GROUP.to_owned(),
            self.control_plane.placement_groups,
        ))
        .chain(
            self.worker_pools
                .iter()
                .map(|(name, pool)| (name.clone(), pool.placement_groups)),
        )
        .collect()
    }
}
