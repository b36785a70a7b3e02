//! What hct checks in a node's finished config (its settings with the
//! user's `config_patches` applied) before any server is touched: the
//! settings hct relies on and Talos would take without complaint, only to
//! leave the node out of the cluster:
//!
//! - every key known to the release (Talos' strict decoder refuses others,
//!   and from user data the node does not start at all);
//! - kubelet's `nodeIP.validSubnets` and the pod and service ranges leave
//!   each planned node an IP (otherwise kubelet never starts); etcd's
//!   `advertisedSubnets` hold each control plane's IP;
//! - `cluster.controlPlane.endpoint` is the plan's endpoint (workers find
//!   trustd and the API server only through it);
//! - the default route is on the private interface, via the network
//!   gateway (the only way out of a private network);
//! - the hostname is the server name (Kubernetes node and etcd member
//!   names, and the cloud controller manager, go by it);
//! - the installer image installs the release the cluster runs.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use serde_json::Value;

use super::documents::{all_of as kind, kind_of, v1alpha1};
use super::input::{Node, Role};
use super::install;
use super::known_keys;
use super::multidoc_v1_14::{self, setting};
use crate::network_plan::NetworkPlan;

/// A setting hct cannot build a working node with: what is wrong and how
/// to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub setting: String,
    pub problem: String,
    pub fix: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}. {}", self.setting, self.problem, self.fix)
    }
}

fn violation(setting: &str, problem: String, fix: &str) -> Violation {
    Violation {
        setting: setting.to_string(),
        problem,
        fix: fix.to_string(),
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Talos' address filter: inside an included CIDR (any when none is
/// listed) and in no `!`-excluded one. Unparsable entries match nothing.
fn passes(filter: &[String], ip: IpAddr) -> bool {
    let parse = |text: &str| {
        text.parse::<IpNet>()
            .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
            .ok()
    };
    let (exclude, include): (Vec<&String>, Vec<&String>) =
        filter.iter().partition(|e| e.trim().starts_with('!'));
    let included = include.is_empty()
        || include
            .iter()
            .filter_map(|e| parse(e.trim()))
            .any(|n| n.contains(&ip));
    let excluded = exclude
        .iter()
        .filter_map(|e| parse(e.trim().trim_start_matches('!')))
        .any(|n| n.contains(&ip));
    included && !excluded
}

/// The addresses the node may have: its own when the input names it, else
/// every planned address of its role (a worker could be in any pool).
fn planned_ips(plan: &NetworkPlan, node: &Node) -> Vec<Ipv4Addr> {
    if let Some(ip) = node.ip {
        return vec![ip];
    }
    match node.role {
        Role::ControlPlane => plan.control_plane().ips.clone(),
        Role::Worker => plan
            .worker_pools()
            .values()
            .flat_map(|g| g.ips.iter().copied())
            .collect(),
    }
}

/// The first setting of the finished config hct cannot build a working
/// node with, if any.
pub(crate) fn check(documents: &[Value], node: &Node, plan: &NetworkPlan) -> Option<Violation> {
    for document in documents {
        if let Some(path) = known_keys::first_unknown(document, &node.talos) {
            let kind = kind_of(document);
            return Some(violation(
                &format!("{kind} document, key {path}"),
                format!(
                    "Talos {} does not know this key (its strict decoder refuses the whole config)",
                    node.talos
                ),
                "Check its spelling and place against the Talos configuration reference for this release.",
            ));
        }
    }
    if let Some((kind, field)) = multidoc_v1_14::conflict(documents) {
        return Some(violation(
            &format!("{kind} document and {field}"),
            format!(
                "Talos {} refuses a config that sets both: the {kind} document replaces {field}",
                node.talos
            ),
            &format!(
                "Write the setting in the {kind} document (Talos' v1.14 configuration reference) and drop {field} from config_patches."
            ),
        ));
    }
    let main = v1alpha1(documents)?;
    addresses(main, documents, node, plan)
        .or_else(|| endpoint(main, documents, plan))
        .or_else(|| default_route(main, documents, node, plan))
        .or_else(|| hostname(main, documents, node))
        .or_else(|| installer(main, documents, node))
}

fn addresses(
    main: &Value,
    documents: &[Value],
    node: &Node,
    plan: &NetworkPlan,
) -> Option<Violation> {
    let (valid, valid_name) = setting(
        documents,
        main,
        ("KubeNodeConfig", "/nodeIP/validSubnets"),
        "/machine/kubelet/nodeIP/validSubnets",
    );
    let valid = strings(valid);
    let (pods, pods_name) = setting(
        documents,
        main,
        ("KubeNetworkConfig", "/podSubnets"),
        "/cluster/network/podSubnets",
    );
    let (services, services_name) = setting(
        documents,
        main,
        ("KubeNetworkConfig", "/serviceSubnets"),
        "/cluster/network/serviceSubnets",
    );
    let mut ranges = strings(pods);
    ranges.extend(strings(services));
    let ips = planned_ips(plan, node);
    if let Some(ip) = ips.iter().find(|ip| !passes(&valid, IpAddr::V4(**ip))) {
        return Some(violation(
            &valid_name,
            format!(
                "{valid:?} holds no address of the node at {ip}, so kubelet finds no node IP and never starts"
            ),
            "Leave validSubnets to hct (the plan's node ranges) or list ranges that hold the nodes' IPs.",
        ));
    }
    let in_ranges = |ip: &Ipv4Addr| {
        ranges.iter().find(|r| {
            r.parse::<IpNet>()
                .is_ok_and(|n| n.contains(&IpAddr::V4(*ip)))
        })
    };
    if let Some((ip, range)) = ips.iter().find_map(|ip| in_ranges(ip).map(|r| (ip, r))) {
        return Some(violation(
            &format!("{pods_name}/{services_name}"),
            format!(
                "{range} holds the node address {ip}: Talos never takes a node IP from the pod or service ranges, so kubelet never starts and in-cluster routing to those addresses breaks"
            ),
            "Keep pod_cidr and service_cidr of hct_network_plan outside the node subnet, and do not patch the pod or service subnets.",
        ));
    }
    if node.role == Role::ControlPlane {
        let advertised = strings(main.pointer("/cluster/etcd/advertisedSubnets"));
        if let Some(ip) = ips.iter().find(|ip| !passes(&advertised, IpAddr::V4(**ip))) {
            return Some(violation(
                "cluster.etcd.advertisedSubnets",
                format!(
                    "{advertised:?} holds no address of the control plane at {ip}, so etcd has no address to advertise and never starts"
                ),
                "Leave advertisedSubnets to hct (the control-plane range) or list a range that holds the control planes' IPs.",
            ));
        }
    }
    None
}

fn endpoint(main: &Value, documents: &[Value], plan: &NetworkPlan) -> Option<Violation> {
    let (found, name) = setting(
        documents,
        main,
        ("KubeClusterConfig", "/endpoint"),
        "/cluster/controlPlane/endpoint",
    );
    let found = found.and_then(Value::as_str).unwrap_or_default();
    let wanted = plan.cluster_endpoint();
    (found != wanted).then(|| {
        violation(
            &name,
            format!("is {found:?}, but this cluster's control plane is at {wanted}: workers reach trustd and the API server only through it, so they would never join"),
            "Do not patch the endpoint; hct sets it from the network plan.",
        )
    })
}

/// Routes on `link` (v1alpha1 interfaces and `LinkConfig` documents), as
/// (destination, gateway); empty strings where a field is absent.
fn routes_on<'a>(
    main: &'a Value,
    documents: &'a [Value],
    link: &'a str,
) -> Vec<(&'a str, &'a str)> {
    let interfaces = main
        .pointer("/machine/network/interfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|i| (i, "interface", "network"));
    let links = kind(documents, "LinkConfig").map(|d| (d, "name", "destination"));
    let text = |value: &'a Value, key: &str| value.get(key).and_then(Value::as_str);
    interfaces
        .chain(links)
        .filter(|(holder, name, _)| text(holder, name) == Some(link))
        .flat_map(|(holder, _, destination)| {
            holder
                .get("routes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |route| {
                    (
                        text(route, destination).unwrap_or_default(),
                        text(route, "gateway").unwrap_or_default(),
                    )
                })
        })
        .collect()
}

fn default_route(
    main: &Value,
    documents: &[Value],
    node: &Node,
    plan: &NetworkPlan,
) -> Option<Violation> {
    let gateway = plan.gateway().to_string();
    let routes = routes_on(main, documents, &node.interface);
    let defaults: Vec<&str> = routes
        .iter()
        .filter(|(to, _)| to.is_empty() || *to == "0.0.0.0/0")
        .map(|(_, via)| *via)
        .collect();
    if defaults.contains(&gateway.as_str()) {
        return None;
    }
    let problem = match defaults.first() {
        Some(via) => format!(
            "the default route on {} goes via {via}, but only the network gateway {gateway} forwards traffic out of the private network",
            node.interface
        ),
        None => format!(
            "there is no default route on the private interface {} via the network gateway {gateway}, so the node cannot pull images",
            node.interface
        ),
    };
    Some(violation(
        "default route",
        problem,
        "Do not patch the routes or the interface hct configures; hct makes the default route from the network plan's gateway.",
    ))
}

fn hostname(main: &Value, documents: &[Value], node: &Node) -> Option<Violation> {
    let legacy = main
        .pointer("/machine/network/hostname")
        .and_then(Value::as_str);
    let document = kind(documents, "HostnameConfig").next();
    let named = document
        .and_then(|d| d.get("hostname"))
        .and_then(Value::as_str)
        .or(legacy);
    let auto = document.and_then(|d| d.get("auto")).and_then(Value::as_str);
    if named == Some(node.hostname.as_str()) && auto.is_none_or(|a| a == "off") {
        return None;
    }
    let problem = match (named, auto) {
        (_, Some(auto)) if auto != "off" => format!("is left to Talos (auto: {auto})"),
        (Some(other), _) => format!("is {other:?}"),
        (None, _) => "is not set".to_string(),
    };
    Some(violation(
        "hostname",
        format!(
            "{problem}, but the node must be named {:?} (the server name), which Kubernetes node names, etcd members and the Hetzner cloud controller manager go by",
            node.hostname
        ),
        "Do not patch the hostname; hct sets it to the server name.",
    ))
}

fn installer(main: &Value, documents: &[Value], node: &Node) -> Option<Violation> {
    let (image, setting_name) = setting(
        documents,
        main,
        ("UnattendedInstallConfig", "/installer/image"),
        "/machine/install/image",
    );
    let image = image.and_then(Value::as_str).unwrap_or_default();
    // `registry/path/installer:v1.12.6`, maybe pinned with `@sha256:…`.
    let name = image.split('@').next().unwrap_or_default();
    let last = name.rsplit('/').next().unwrap_or_default();
    let tag = last.rsplit_once(':').map(|(_, t)| t).unwrap_or_default();
    (tag != node.talos.to_string()).then(|| {
        violation(
            &setting_name,
            format!(
                "{image:?} is not an installer of Talos {} (hct's is {})",
                node.talos,
                install::installer_image(node)
            ),
            "Change talos_version to upgrade; do not patch the installer image.",
        )
    })
}
