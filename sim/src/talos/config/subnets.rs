//! The address filters of a config: `machine.kubelet.nodeIP.validSubnets`
//! and `cluster.etcd.advertisedSubnets` (CIDRs, `!` before one excludes
//! it), and the pod and service ranges of `cluster.network`, which Talos
//! never takes a node IP from.

use std::net::IpAddr;

use ipnet::IpNet;
use serde_yaml_ng::Value;

use super::ConfigError;
use super::documents::{Cluster, Machine};

/// A list of CIDRs to pick addresses with, as Talos filters them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubnetFilter {
    pub include: Vec<IpNet>,
    pub exclude: Vec<IpNet>,
}

impl SubnetFilter {
    fn parse(field: &str, entries: &[String]) -> Result<Self, ConfigError> {
        let mut filter = Self::default();
        for entry in entries {
            let (list, text) = match entry.trim().strip_prefix('!') {
                Some(rest) => (&mut filter.exclude, rest),
                None => (&mut filter.include, entry.trim()),
            };
            let net = text
                .parse::<IpNet>()
                .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| ConfigError::invalid(field, format!("{entry:?} is not a CIDR")))?;
            list.push(net);
        }
        Ok(filter)
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subnets {
    pub kubelet: SubnetFilter,
    pub etcd_advertised: SubnetFilter,
    pub pods: Vec<IpNet>,
    pub services: Vec<IpNet>,
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

pub(super) fn subnets(machine: &Machine, cluster: &Cluster) -> Result<Subnets, ConfigError> {
    let valid = machine
        .kubelet
        .as_ref()
        .and_then(|k| k.node_ip.as_ref())
        .map(|n| n.valid_subnets.clone())
        .unwrap_or_default();
    let advertised = strings(
        cluster
            .etcd
            .as_ref()
            .and_then(|e| e.get("advertisedSubnets")),
    );
    let network = cluster.network.as_ref();
    Ok(Subnets {
        kubelet: SubnetFilter::parse("machine.kubelet.nodeIP.validSubnets", &valid)?,
        etcd_advertised: SubnetFilter::parse("cluster.etcd.advertisedSubnets", &advertised)?,
        pods: cidrs(
            "cluster.network.podSubnets",
            network
                .map(|n| n.pod_subnets.as_slice())
                .unwrap_or_default(),
        )?,
        services: cidrs(
            "cluster.network.serviceSubnets",
            network
                .map(|n| n.service_subnets.as_slice())
                .unwrap_or_default(),
        )?,
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
            SubnetFilter::parse("f", &["10.0.128.0/24".into(), "!10.0.128.5".into()]).unwrap();
        let addresses = ips(&["10.0.128.5", "10.0.128.6"]);
        assert_eq!(
            filter.pick(&addresses).collect::<Vec<_>>(),
            ips(&["10.0.128.6"])
        );
        assert_eq!(filter.describe(), "[10.0.128.0/24, !10.0.128.5/32]");
        assert!(SubnetFilter::parse("f", &["nope".into()]).is_err());
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
