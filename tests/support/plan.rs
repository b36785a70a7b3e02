//! The network plan the Talos tests make configs from: the seeded network
//! 10.0.0.0/16, nodes in 10.0.128.0/24, control planes 10.0.128.17-19 and
//! pool `general` from 10.0.128.65.

use std::collections::BTreeMap;

use hct::network_plan::{self, NetworkPlan, NetworkPlanInput, NodeGroupInput};

/// The plan with `general_nodes` workers in pool `general`.
pub fn reference(general_nodes: i64) -> NetworkPlan {
    with_endpoint(general_nodes, "first_control_plane")
}

/// The same with `api_endpoint` (`first_control_plane`, `load_balancer`).
pub fn with_endpoint(general_nodes: i64, api_endpoint: &str) -> NetworkPlan {
    let group = |cidr: &str, nodes| NodeGroupInput {
        cidr: Some(cidr.to_owned()),
        nodes: Some(nodes),
    };
    let input = NetworkPlanInput {
        network_cidr: Some("10.0.0.0/16".into()),
        node_subnet: Some("10.0.128.0/24".into()),
        control_plane: Some(group("10.0.128.16/28", 3)),
        worker_pools: Some(BTreeMap::from([(
            "general".to_owned(),
            group("10.0.128.64/27", general_nodes),
        )])),
        service_cidr: Some("10.0.192.0/21".into()),
        pod_cidr: Some("10.0.224.0/19".into()),
        pod_cidr_mask_size: Some(24),
        native_routing_cidr: Some("10.0.224.0/19".into()),
        multi_datacenter: Some(false),
        api_endpoint: Some(api_endpoint.to_owned()),
        load_balancer_ip: Some(None),
    };
    match network_plan::plan(&input) {
        Ok((plan, _)) => plan,
        Err(diagnostics) => panic!("network plan: {diagnostics:?}"),
    }
}
