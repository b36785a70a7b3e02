//! The address filters of a config: kubelet's node IP subnets
//! (`machine.kubelet.nodeIP.validSubnets`, or from v1.14 `KubeNodeConfig`)
//! and `cluster.etcd.advertisedSubnets` (CIDRs, `!` before one excludes
//! it), the pod and service ranges (`cluster.network`, or from v1.14
//! `KubeNetworkConfig`, checked in `kube_network`), which Talos never takes
//! a node IP from, and the size of each node's pod range.

use std::net::IpAddr;

use ipnet::IpNet;
use serde_yaml_ng::Value;

use super::ConfigError;
use super::documents::{Cluster, Machine};
use super::kube_network::NODE_MASK_IPV4;
use super::multidoc::Multidoc;

/// A list of CIDRs to pick addresses with, as Talos filters them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubnetFilter {
    pub include: Vec<IpNet>,
    pub exclude: Vec<IpNet>,
}

impl SubnetFilter {
    /// The filter of `entries`; Err names the entry that is no CIDR.
    fn parse(entries: &[String]) -> Result<Self, String> {
        let mut filter = Self::default();
        for entry in entries {
            let (list, text) = match entry.trim().strip_prefix('!') {
                Some(rest) => (&mut filter.exclude, rest),
                None => (&mut filter.include, entry.trim()),
            };
            let net = text
                .parse::<IpNet>()
                .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| entry.clone())?;
            list.push(net);
        }
        Ok(filter)
    }

    fn of(field: &str, entries: &[String]) -> Result<Self, ConfigError> {
        Self::parse(entries)
            .map_err(|entry| ConfigError::invalid(field, format!("{entry:?} is not a CIDR")))
    }

    /// The addresses that pass, in order: inside an included range (any,
    /// when none is listed) and in no excluded one.
    pub fn pick<'a>(&'a self, addresses: &'a [IpAddr]) -> impl Iterator<Item = IpAddr> + 'a {
        addresses.iter().copied().filter(|ip| {
            (self.include.is_empty() || self.include.iter().any(|n| n.contains(ip)))
                && !self.exclude.iter().any(|n| n.contains(ip))
        })
    }

    /// The filter as written, for messages.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.include.iter().map(ToString::to_string).collect();
        parts.extend(self.exclude.iter().map(|n| format!("!{n}")));
        format!("[{}]", parts.join(", "))
    }
}

/// What a config says about the node's addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subnets {
    pub kubelet: SubnetFilter,
    pub etcd_advertised: SubnetFilter,
    pub pods: Vec<IpNet>,
    pub services: Vec<IpNet>,
    /// The size of the IPv4 pod range each node gets: kube-controller-
    /// manager's `node-cidr-mask-size-ipv4` argument when given, else
    /// `KubeNetworkConfig.nodeCIDRMaskSizeIPv4`, else 24.
    pub node_cidr_mask_ipv4: u8,
}

impl Default for Subnets {
    fn default() -> Self {
        Self {
            kubelet: SubnetFilter::default(),
            etcd_advertised: SubnetFilter::default(),
            pods: Vec::new(),
            services: Vec::new(),
            node_cidr_mask_ipv4: NODE_MASK_IPV4,
        }
    }
}

fn cidrs(field: &str, entries: &[String]) -> Result<Vec<IpNet>, ConfigError> {
    entries
        .iter()
        .map(|e| {
            e.trim()
                .parse::<IpNet>()
                .map_err(|_| ConfigError::invalid(field, format!("{e:?} is not a CIDR")))
        })
        .collect()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// An argument of an `extraArgs` map: a string, or the first of a list.
fn argument<'v>(args: Option<&'v Value>, name: &str) -> Option<&'v str> {
    match args?.get(name)? {
        Value::Sequence(items) => items.first()?.as_str(),
        other => other.as_str(),
    }
}

pub(super) fn subnets(
    machine: &Machine,
    cluster: &Cluster,
    docs: &Multidoc,
) -> Result<Subnets, ConfigError> {
    let kubelet = match &docs.node {
        Some(node) => {
            let valid = node
                .node_ip
                .as_ref()
                .map(|n| n.valid_subnets.clone())
                .unwrap_or_default();
            SubnetFilter::parse(&valid).map_err(|entry| {
                let entry = entry.trim().trim_start_matches('!').to_string();
                ConfigError::invalid(
                    "KubeNodeConfig",
                    format!("nodeIP subnet is not valid: {entry:?}"),
                )
            })?
        }
        None => {
            let valid = machine
                .kubelet
                .as_ref()
                .and_then(|k| k.node_ip.as_ref())
                .map(|n| n.valid_subnets.clone())
                .unwrap_or_default();
            SubnetFilter::of("machine.kubelet.nodeIP.validSubnets", &valid)?
        }
    };
    let advertised = strings(
        cluster
            .etcd
            .as_ref()
            .and_then(|e| e.get("advertisedSubnets")),
    );
    let (pods, services) = match &docs.network {
        // Checked as the document was read.
        Some(network) => (
            cidrs("KubeNetworkConfig", &network.pod_subnets)?,
            cidrs("KubeNetworkConfig", &network.service_subnets)?,
        ),
        None => {
            let network = cluster.network.as_ref();
            (
                cidrs(
                    "cluster.network.podSubnets",
                    network
                        .map(|n| n.pod_subnets.as_slice())
                        .unwrap_or_default(),
                )?,
                cidrs(
                    "cluster.network.serviceSubnets",
                    network
                        .map(|n| n.service_subnets.as_slice())
                        .unwrap_or_default(),
                )?,
            )
        }
    };
    let controller_manager_args = match &docs.controller_manager {
        Some(doc) => doc.extra_args.as_ref(),
        None => cluster
            .controller_manager
            .as_ref()
            .and_then(|c| c.extra_args.as_ref()),
    };
    let node_cidr_mask_ipv4 = argument(controller_manager_args, "node-cidr-mask-size-ipv4")
        .and_then(|a| a.trim().parse::<u8>().ok())
        .or_else(|| {
            docs.network
                .as_ref()
                .and_then(|n| n.node_cidr_mask_size_ipv4)
                .filter(|m| *m != 0)
                .and_then(|m| u8::try_from(m).ok())
        })
        .unwrap_or(NODE_MASK_IPV4);
    Ok(Subnets {
        kubelet,
        etcd_advertised: SubnetFilter::of("cluster.etcd.advertisedSubnets", &advertised)?,
        pods,
        services,
        node_cidr_mask_ipv4,
    })
}

impl Subnets {
    /// The IP kubelet registers the node with: the first address that
    /// passes `validSubnets` and lies in no pod or service range.
    pub fn kubelet_node_ip(&self, addresses: &[IpAddr]) -> Option<IpAddr> {
        self.kubelet.pick(addresses).find(|ip| {
            !self
                .pods
                .iter()
                .chain(&self.services)
                .any(|n| n.contains(ip))
        })
    }

    /// The address etcd advertises to its peers: without
    /// `advertisedSubnets` the node's first address.
    pub fn etcd_address(&self, addresses: &[IpAddr]) -> Option<IpAddr> {
        self.etcd_advertised.pick(addresses).next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn picks_addresses_as_talos_filters_them() {
        let filter =
            SubnetFilter::of("f", &["10.0.128.0/24".into(), "!10.0.128.5".into()]).unwrap();
        let addresses = ips(&["10.0.128.5", "10.0.128.6"]);
        assert_eq!(
            filter.pick(&addresses).collect::<Vec<_>>(),
            ips(&["10.0.128.6"])
        );
        assert_eq!(filter.describe(), "[10.0.128.0/24, !10.0.128.5/32]");
        assert!(SubnetFilter::of("f", &["nope".into()]).is_err());
    }

    #[test]
    fn kubelet_never_takes_a_pod_or_service_address() {
        let subnets = Subnets {
            services: vec!["10.0.128.0/24".parse().unwrap()],
            ..Subnets::default()
        };
        assert_eq!(subnets.kubelet_node_ip(&ips(&["10.0.128.17"])), None);
        assert_eq!(
            subnets.kubelet_node_ip(&ips(&["10.0.128.17", "10.0.129.3"])),
            Some("10.0.129.3".parse().unwrap())
        );
        assert_eq!(
            subnets.etcd_address(&ips(&["10.0.128.17"])),
            Some("10.0.128.17".parse().unwrap())
        );
    }
}
