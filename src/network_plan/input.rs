//! The resource's inputs as Terraform gives them, and where each lives in the
//! configuration (for diagnostics).

use std::collections::BTreeMap;

use crate::tf::diagnostics::AttrPath;

/// Inputs as Terraform gives them; `None` = not known yet at plan time
/// (the value comes from another resource).
///
/// The caller has already applied defaults: `pod_cidr_mask_size` 24,
/// `multi_datacenter` false, `native_routing_cidr` = `pod_cidr` when null,
/// `worker_pools` empty when null.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPlanInput {
    pub network_cidr: Option<String>,
    pub node_subnet: Option<String>,
    pub control_plane: Option<NodeGroupInput>,
    pub worker_pools: Option<BTreeMap<String, NodeGroupInput>>,
    pub service_cidr: Option<String>,
    pub pod_cidr: Option<String>,
    pub pod_cidr_mask_size: Option<i64>,
    pub native_routing_cidr: Option<String>,
    pub multi_datacenter: Option<bool>,
    /// `first_control_plane` or `load_balancer` (the caller defaults it to
    /// the former).
    pub api_endpoint: Option<String>,
    /// `Some(None)`: not set (the plan picks one in `load_balancer` mode).
    pub load_balancer_ip: Option<Option<String>>,
}

/// The control plane or one worker pool: a CIDR slice of the node subnet and
/// how many servers get an address from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeGroupInput {
    pub cidr: Option<String>,
    pub nodes: Option<i64>,
}

/// Attribute names, as users write them in the configuration.
pub(crate) mod attr {
    pub const NETWORK_CIDR: &str = "network_cidr";
    pub const NODE_SUBNET: &str = "node_subnet";
    pub const CONTROL_PLANE: &str = "control_plane";
    pub const WORKER_POOLS: &str = "worker_pools";
    pub const CIDR: &str = "cidr";
    pub const NODES: &str = "nodes";
    pub const SERVICE_CIDR: &str = "service_cidr";
    pub const POD_CIDR: &str = "pod_cidr";
    pub const POD_CIDR_MASK_SIZE: &str = "pod_cidr_mask_size";
    pub const NATIVE_ROUTING_CIDR: &str = "native_routing_cidr";
    pub const MULTI_DATACENTER: &str = "multi_datacenter";
    pub const API_ENDPOINT: &str = "api_endpoint";
    pub const LOAD_BALANCER_IP: &str = "load_balancer_ip";
}

/// Names one node group, for paths and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupRef<'a> {
    ControlPlane,
    Pool(&'a str),
}

impl GroupRef<'_> {
    /// `control_plane` or `worker_pools["name"]`.
    pub fn path(self) -> AttrPath {
        match self {
            GroupRef::ControlPlane => AttrPath::attr(attr::CONTROL_PLANE),
            GroupRef::Pool(name) => AttrPath::attr(attr::WORKER_POOLS).key(name),
        }
    }

    pub fn cidr_path(self) -> AttrPath {
        self.path().attr_of(attr::CIDR)
    }

    pub fn nodes_path(self) -> AttrPath {
        self.path().attr_of(attr::NODES)
    }
}

impl NetworkPlanInput {
    /// Whether every input is known, so a plan can be computed.
    pub fn is_known(&self) -> bool {
        self.first_unknown().is_none()
    }

    /// The first input that is not known yet, in declaration order.
    pub(crate) fn first_unknown(&self) -> Option<AttrPath> {
        let top = |name: &str, known: bool| (!known).then(|| AttrPath::attr(name));
        let group = |group: GroupRef<'_>, input: &NodeGroupInput| {
            if input.cidr.is_none() {
                Some(group.cidr_path())
            } else if input.nodes.is_none() {
                Some(group.nodes_path())
            } else {
                None
            }
        };
        top(attr::NETWORK_CIDR, self.network_cidr.is_some())
            .or_else(|| top(attr::NODE_SUBNET, self.node_subnet.is_some()))
            .or_else(|| match &self.control_plane {
                None => Some(AttrPath::attr(attr::CONTROL_PLANE)),
                Some(input) => group(GroupRef::ControlPlane, input),
            })
            .or_else(|| match &self.worker_pools {
                None => Some(AttrPath::attr(attr::WORKER_POOLS)),
                Some(pools) => pools
                    .iter()
                    .find_map(|(name, input)| group(GroupRef::Pool(name), input)),
            })
            .or_else(|| top(attr::SERVICE_CIDR, self.service_cidr.is_some()))
            .or_else(|| top(attr::POD_CIDR, self.pod_cidr.is_some()))
            .or_else(|| top(attr::POD_CIDR_MASK_SIZE, self.pod_cidr_mask_size.is_some()))
            .or_else(|| {
                top(
                    attr::NATIVE_ROUTING_CIDR,
                    self.native_routing_cidr.is_some(),
                )
            })
            .or_else(|| top(attr::MULTI_DATACENTER, self.multi_datacenter.is_some()))
            .or_else(|| top(attr::API_ENDPOINT, self.api_endpoint.is_some()))
            .or_else(|| top(attr::LOAD_BALANCER_IP, self.load_balancer_ip.is_some()))
    }
}
