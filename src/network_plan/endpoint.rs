//! Where clients and nodes reach the Kubernetes API (`api_endpoint`):
//!
//! - `first_control_plane` (the default): the first control plane's
//!   private IP. Free; the endpoint dies with that server.
//! - `load_balancer`: a private Hetzner Load Balancer at
//!   `load_balancer_ip`, forwarding 6443, 50000 and 50001 (trustd) to every healthy control
//!   plane. Its IP must be a host of the node subnet outside every node
//!   CIDR, not the gateway nor the subnet's first or last address. Left out,
//!   it is the node subnet's last usable host (`10.0.128.254` in
//!   `10.0.128.0/24`), which the reference layout keeps free; the plan
//!   fails when a node CIDR covers that host and asks for an explicit IP.
//!
//! The IP is checked against the plan only: an address Hetzner has given a
//! server outside the plan (a NAT box) is found when the load balancer is
//! attached, which then fails with the address named.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::hetzner;
use super::input::attr;
use crate::tf::diagnostics::{AttrPath, Diagnostic, Diagnostics};

pub const FIRST_CONTROL_PLANE: &str = "first_control_plane";
pub const LOAD_BALANCER: &str = "load_balancer";

/// Where the Kubernetes API is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiEndpoint {
    FirstControlPlane,
    LoadBalancer { ip: Ipv4Addr },
}

/// `api_endpoint` as written, before the load balancer's IP is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndpointMode {
    FirstControlPlane,
    LoadBalancer { ip: Option<Ipv4Addr> },
}

/// Checks `api_endpoint` and `load_balancer_ip` on their own. `None` when
/// either is unknown or wrong (reported).
pub(crate) fn check_attributes(
    mode: Option<&str>,
    load_balancer_ip: Option<Option<&str>>,
    diags: &mut Diagnostics,
) -> Option<EndpointMode> {
    let ip = match load_balancer_ip? {
        None => None,
        Some(text) => match text.trim().parse::<Ipv4Addr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                diags.push(
                    Diagnostic::error(
                        "Load balancer IP is not an IPv4 address",
                        format!(
                            "load_balancer_ip = \"{text}\" is not an IPv4 address. Give a host \
                             of node_subnet outside every node CIDR, e.g. \"10.0.128.254\"."
                        ),
                    )
                    .at(AttrPath::attr(attr::LOAD_BALANCER_IP)),
                );
                return None;
            }
        },
    };
    match mode? {
        FIRST_CONTROL_PLANE => {
            if ip.is_some() {
                diags.push(
                    Diagnostic::error(
                        "Load balancer IP without a load balancer",
                        format!(
                            "load_balancer_ip is set but api_endpoint is \
                             \"{FIRST_CONTROL_PLANE}\", which uses no load balancer. Set \
                             api_endpoint = \"{LOAD_BALANCER}\" or remove load_balancer_ip."
                        ),
                    )
                    .at(AttrPath::attr(attr::LOAD_BALANCER_IP)),
                );
                return None;
            }
            Some(EndpointMode::FirstControlPlane)
        }
        LOAD_BALANCER => Some(EndpointMode::LoadBalancer { ip }),
        other => {
            diags.push(
                Diagnostic::error(
                    "Unknown API endpoint mode",
                    format!(
                        "api_endpoint = \"{other}\" is not a mode hct knows. Use \
                         \"{FIRST_CONTROL_PLANE}\" (the first control plane's IP, the default) \
                         or \"{LOAD_BALANCER}\" (a private Hetzner Load Balancer). Talos' \
                         Hetzner VIP is not offered: see the private-cluster guide."
                    ),
                )
                .at(AttrPath::attr(attr::API_ENDPOINT)),
            );
            None
        }
    }
}

/// The default load balancer IP: the node subnet's last usable host.
pub(crate) fn default_load_balancer_ip(node_subnet: Ipv4Net) -> Option<Ipv4Addr> {
    let last = u32::from(node_subnet.broadcast()).checked_sub(1)?;
    let ip = Ipv4Addr::from(last);
    (node_subnet.contains(&ip) && ip != node_subnet.network()).then_some(ip)
}

/// What the load balancer's IP is checked against: the checked ranges.
pub(crate) struct Layout {
    pub network_cidr: Option<Ipv4Net>,
    pub node_subnet: Option<Ipv4Net>,
    /// Each node group's CIDR path and CIDR, where known.
    pub groups: Vec<(AttrPath, Ipv4Net)>,
}

/// Checks the load balancer's IP against the layout and settles it
/// (default included). `None` when something it needs is unknown or wrong
/// (reported).
pub(crate) fn resolve(
    mode: Option<EndpointMode>,
    c: &Layout,
    diags: &mut Diagnostics,
) -> Option<ApiEndpoint> {
    let EndpointMode::LoadBalancer { ip } = mode? else {
        return Some(ApiEndpoint::FirstControlPlane);
    };
    let subnet = c.node_subnet?;
    let path = AttrPath::attr(attr::LOAD_BALANCER_IP);
    let explicit = ip.is_some();
    let Some(ip) = ip.or_else(|| default_load_balancer_ip(subnet)) else {
        diags.push(
            Diagnostic::error(
                "No room for the load balancer",
                format!(
                    "node_subnet = \"{subnet}\" has no host address for the load balancer. \
                     Set load_balancer_ip to a free host of a larger node subnet."
                ),
            )
            .at(path),
        );
        return None;
    };
    let fail = |diags: &mut Diagnostics, why: String| {
        let fix = if explicit {
            "Pick another host of node_subnet outside every node CIDR."
        } else {
            "The default is node_subnet's last usable host; set load_balancer_ip to a free \
             host of node_subnet outside every node CIDR."
        };
        diags.push(
            Diagnostic::error(
                "Load balancer IP not usable",
                format!("load_balancer_ip = \"{ip}\" {why}. {fix}"),
            )
            .at(path.clone()),
        );
    };
    if !subnet.contains(&ip) || ip == subnet.network() || ip == subnet.broadcast() {
        fail(
            diags,
            format!("is not a host of node_subnet = \"{subnet}\""),
        );
        return None;
    }
    if c.network_cidr.and_then(hetzner::gateway) == Some(ip) {
        fail(diags, "is the network's gateway".to_owned());
        return None;
    }
    for (path, cidr) in &c.groups {
        if cidr.contains(&ip) {
            fail(
                diags,
                format!("lies in {path} = \"{cidr}\", whose addresses belong to nodes"),
            );
            return None;
        }
    }
    Some(ApiEndpoint::LoadBalancer { ip })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::network_plan::{NetworkPlanInput, NodeGroupInput, plan};

    fn input(mode: &str, ip: Option<&str>) -> NetworkPlanInput {
        let group = |cidr: &str, nodes| NodeGroupInput {
            cidr: Some(cidr.to_owned()),
            nodes: Some(nodes),
        };
        NetworkPlanInput {
            network_cidr: Some("10.0.0.0/16".to_owned()),
            node_subnet: Some("10.0.128.0/24".to_owned()),
            control_plane: Some(group("10.0.128.16/28", 3)),
            worker_pools: Some(BTreeMap::from([(
                "general".to_owned(),
                group("10.0.128.64/27", 3),
            )])),
            service_cidr: Some("10.0.192.0/21".to_owned()),
            pod_cidr: Some("10.0.224.0/19".to_owned()),
            pod_cidr_mask_size: Some(24),
            native_routing_cidr: Some("10.0.224.0/19".to_owned()),
            multi_datacenter: Some(false),
            api_endpoint: Some(mode.to_owned()),
            load_balancer_ip: Some(ip.map(str::to_owned)),
        }
    }

    fn error_of(input: &NetworkPlanInput) -> String {
        let diagnostics = plan(input).expect_err("a plan error");
        let error = diagnostics.iter().find(|d| d.is_error()).expect("an error");
        format!("{error}")
    }

    #[test]
    fn first_control_plane_is_the_default_and_unchanged() {
        let (plan, _) = plan(&input("first_control_plane", None)).unwrap();
        assert_eq!(plan.cluster_endpoint(), "https://10.0.128.17:6443");
        assert_eq!(plan.load_balancer_ip(), None);
        let doc = plan.to_json();
        assert!(doc.get("api_endpoint").is_none() && doc.get("load_balancer_ip").is_none());
    }

    #[test]
    fn load_balancer_defaults_to_the_last_host_of_the_node_subnet() {
        let (plan, _) = plan(&input("load_balancer", None)).unwrap();
        assert_eq!(plan.cluster_endpoint(), "https://10.0.128.254:6443");
        let doc = plan.to_json();
        assert_eq!(doc["api_endpoint"], "load_balancer");
        assert_eq!(doc["load_balancer_ip"], "10.0.128.254");
        // The document reads back, and its id differs from the other mode's.
        let back = crate::network_plan::NetworkPlan::from_json(&doc).unwrap();
        assert_eq!(back, plan);
        let (other, _) = super::super::plan(&input("first_control_plane", None)).unwrap();
        assert_ne!(plan.id(), other.id());
    }

    #[test]
    fn an_explicit_ip_is_checked_against_the_layout() {
        let (plan, _) = plan(&input("load_balancer", Some("10.0.128.200"))).unwrap();
        assert_eq!(plan.cluster_endpoint(), "https://10.0.128.200:6443");
        for (ip, why) in [
            ("10.0.128.18", "control_plane.cidr"),
            ("10.0.128.70", "worker_pools[\"general\"].cidr"),
            ("10.0.129.5", "not a host of node_subnet"),
            ("10.0.128.255", "not a host of node_subnet"),
            ("not-an-ip", "not an IPv4 address"),
        ] {
            let error = error_of(&input("load_balancer", Some(ip)));
            assert!(error.contains(why), "{ip}: {error}");
            assert!(error.contains("load_balancer_ip"), "{ip}: {error}");
        }
    }

    #[test]
    fn the_gateway_and_unknown_modes_are_refused() {
        let mut gateway = input("load_balancer", Some("10.0.0.1"));
        gateway.node_subnet = Some("10.0.0.0/24".to_owned());
        gateway.control_plane = Some(NodeGroupInput {
            cidr: Some("10.0.0.16/28".to_owned()),
            nodes: Some(3),
        });
        gateway.worker_pools = Some(BTreeMap::new());
        let error = error_of(&gateway);
        assert!(error.contains("gateway"), "{error}");
        let error = error_of(&input("vip", None));
        assert!(error.contains("api_endpoint"), "{error}");
        let error = error_of(&input("first_control_plane", Some("10.0.128.254")));
        assert!(error.contains("without a load balancer"), "{error}");
    }
}
