// TEMPORARY SHIM until the planner lands (helper-1). Will be overwritten.
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use ipnet::Ipv4Net;
use crate::tf::Diagnostics;
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
}
pub struct NodeGroupInput { pub cidr: Option<String>, pub nodes: Option<i64> }
pub struct NodeGroup { pub cidr: Ipv4Net, pub nodes: u32, pub ips: Vec<Ipv4Addr>, pub placement_groups: u32 }
pub struct NetworkPlan;
pub fn validate(_input: &NetworkPlanInput) -> Diagnostics { todo!() }
pub fn plan(_input: &NetworkPlanInput) -> Result<(NetworkPlan, Diagnostics), Diagnostics> { todo!() }
impl NetworkPlan {
    pub fn gateway(&self) -> Ipv4Addr { todo!() }
    pub fn control_plane(&self) -> &NodeGroup { todo!() }
    pub fn worker_pools(&self) -> &BTreeMap<String, NodeGroup> { todo!() }
    pub fn node_cidrs(&self) -> Vec<Ipv4Net> { todo!() }
    pub fn cluster_endpoint(&self) -> String { todo!() }
    pub fn etcd_advertised_subnets(&self) -> Vec<Ipv4Net> { todo!() }
    pub fn max_nodes(&self) -> u32 { todo!() }
    pub fn placement_groups(&self) -> BTreeMap<String, u32> { todo!() }
    pub fn cilium_values(&self) -> serde_json::Value { todo!() }
    pub fn hccm_values(&self) -> serde_json::Value { todo!() }
    pub fn to_json(&self) -> serde_json::Value { todo!() }
    pub fn id(&self) -> String { todo!() }
    pub fn pod_cidr_mask_size(&self) -> u8 { todo!() }
    pub fn native_routing_cidr(&self) -> Ipv4Net { todo!() }
    pub fn multi_datacenter(&self) -> bool { todo!() }
}
