//! The plan as a picture: a Mermaid flowchart of the network, its node
//! subnet, the API endpoint (the first control plane, or the private load
//! balancer in front of them all), the control plane and each pool with their
//! CIDRs and node IPs, and the way out (network gateway, then the NAT box
//! the network's `0.0.0.0/0` route points at). The plan does not take the
//! NAT box's address, so the diagram names it by its role only.
//!
//! Node names are the group and the node's number (`cp 1`, `workers 3`);
//! the servers are `<cluster>-<group>-<n>`, and the plan does not know the
//! cluster's name.

use std::fmt::Write;
use std::net::Ipv4Addr;

use super::names::CONTROL_PLANE_GROUP;
use super::{ApiEndpoint, NetworkPlan, NodeGroup};

/// Groups up to this size show every node; larger ones their first ones,
/// a count, and the last, so a 97-node pool stays readable.
const NODES_SHOWN: usize = 4;

impl NetworkPlan {
    /// The flowchart, as Mermaid source (`flowchart TB …`).
    pub fn mermaid(&self) -> String {
        let mut out = String::from("flowchart TB\n");
        line(&mut out, 1, "internet((Internet))");
        line(
            &mut out,
            1,
            &format!("subgraph network[\"network {}\"]", self.network_cidr()),
        );
        line(&mut out, 2, "direction TB");
        line(
            &mut out,
            2,
            "nat[\"NAT box<br/>target of the network route 0.0.0.0/0\"]",
        );
        line(
            &mut out,
            2,
            &format!(
                "gateway[\"gateway {}<br/>every node's default route\"]",
                self.gateway()
            ),
        );
        line(
            &mut out,
            2,
            &format!("subgraph subnet[\"node subnet {}\"]", self.node_subnet()),
        );
        line(&mut out, 3, "direction TB");
        line(
            &mut out,
            3,
            &format!(
                "endpoint{{{{\"API endpoint<br/>{}<br/>{}\"}}}}",
                self.cluster_endpoint(),
                match self.api_endpoint() {
                    ApiEndpoint::FirstControlPlane => "the first control plane",
                    ApiEndpoint::LoadBalancer { .. } => "private load balancer",
                }
            ),
        );
        // Mermaid ids are ours (`cp`, `pool0`, …): pool names may hold `-`.
        let mut groups = vec![Drawn {
            id: "cp".to_string(),
            title: "control plane".to_string(),
            name: CONTROL_PLANE_GROUP,
            group: self.control_plane(),
        }];
        groups.extend(
            self.worker_pools()
                .iter()
                .enumerate()
                .map(|(i, (name, pool))| Drawn {
                    id: format!("pool{i}"),
                    title: format!("pool {name}"),
                    name,
                    group: pool,
                }),
        );
        for drawn in &groups {
            drawn.write(&mut out);
        }
        line(&mut out, 2, "end");
        line(&mut out, 1, "end");
        line(
            &mut out,
            1,
            &format!(
                "kube[\"pods {} (one /{} per node)<br/>services {}\"]",
                self.pod_cidr(),
                self.pod_cidr_mask_size(),
                self.service_cidr()
            ),
        );
        line(&mut out, 1, "endpoint --> cp");
        for drawn in groups.iter().skip(1) {
            line(&mut out, 1, &format!("{} -. joins .-> endpoint", drawn.id));
        }
        for drawn in &groups {
            line(&mut out, 1, &format!("{} --> gateway", drawn.id));
        }
        line(&mut out, 1, "gateway --> nat --> internet");
        line(&mut out, 1, "subnet ~~~ kube");
        out
    }
}

/// A group as the diagram draws it.
struct Drawn<'a> {
    id: String,
    title: String,
    /// In node labels: `cp 1`, `workers 3`.
    name: &'a str,
    group: &'a NodeGroup,
}

impl Drawn<'_> {
    /// The group as a subgraph of its nodes.
    fn write(&self, out: &mut String) {
        let Self {
            id,
            title,
            name,
            group,
        } = self;
        let groups = match group.placement_groups {
            1 => "1 placement group".to_string(),
            n => format!("{n} placement groups"),
        };
        line(
            out,
            3,
            &format!(
                "subgraph {id}[\"{title} {} · {} nodes · {groups}\"]",
                group.cidr, group.nodes
            ),
        );
        for (number, ip) in shown(&group.ips) {
            match (number, ip) {
                (Some(n), Some(ip)) => {
                    line(out, 4, &format!("{id}_{n}[\"{name} {n}<br/>{ip}\"]"));
                }
                _ => line(
                    out,
                    4,
                    &format!("{id}_more[\"… {} more\"]", group.ips.len() - NODES_SHOWN),
                ),
            }
        }
        line(out, 3, "end");
    }
}

/// The nodes a group shows, numbered from 1; `(None, None)` stands for
/// the ones left out.
fn shown(ips: &[Ipv4Addr]) -> Vec<(Option<usize>, Option<Ipv4Addr>)> {
    let all = || {
        ips.iter()
            .enumerate()
            .map(|(i, ip)| (Some(i + 1), Some(*ip)))
    };
    if ips.len() <= NODES_SHOWN {
        return all().collect();
    }
    let mut shown: Vec<_> = all().take(NODES_SHOWN - 1).collect();
    shown.push((None, None));
    shown.extend(all().next_back());
    shown
}

fn line(out: &mut String, depth: usize, text: &str) {
    let _ = writeln!(out, "{}{text}", "    ".repeat(depth));
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{NetworkPlanInput, NodeGroupInput, plan};

    fn input(pools: &[(&str, &str, i64)]) -> NetworkPlanInput {
        let group = |cidr: &str, nodes: i64| NodeGroupInput {
            cidr: Some(cidr.to_string()),
            nodes: Some(nodes),
        };
        NetworkPlanInput {
            network_cidr: Some("10.0.0.0/16".into()),
            node_subnet: Some("10.0.128.0/24".into()),
            control_plane: Some(group("10.0.128.16/28", 3)),
            worker_pools: Some(
                pools
                    .iter()
                    .map(|(name, cidr, nodes)| (name.to_string(), group(cidr, *nodes)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            service_cidr: Some("10.0.192.0/21".into()),
            pod_cidr: Some("10.1.0.0/17".into()),
            pod_cidr_mask_size: Some(24),
            native_routing_cidr: Some("10.1.0.0/17".into()),
            multi_datacenter: Some(false),
            api_endpoint: Some("first_control_plane".into()),
            load_balancer_ip: Some(None),
        }
    }

    fn diagram(pools: &[(&str, &str, i64)]) -> String {
        match plan(&input(pools)) {
            Ok((plan, _)) => plan.mermaid(),
            Err(e) => panic!("expected a plan, got {e:?}"),
        }
    }

    #[test]
    fn draws_every_range_address_and_the_way_out() {
        let text = diagram(&[("edge-a", "10.0.128.32/28", 2)]);
        assert!(text.starts_with("flowchart TB\n"), "{text}");
        for expected in [
            "network 10.0.0.0/16",
            "gateway 10.0.0.1",
            "node subnet 10.0.128.0/24",
            "API endpoint<br/>https://10.0.128.17:6443<br/>the first control plane",
            "control plane 10.0.128.16/28 · 3 nodes · 1 placement group",
            "cp_1[\"cp 1<br/>10.0.128.17\"]",
            "cp_3[\"cp 3<br/>10.0.128.19\"]",
            "pool edge-a 10.0.128.32/28 · 2 nodes",
            "pool0_2[\"edge-a 2<br/>10.0.128.34\"]",
            "pods 10.1.0.0/17 (one /24 per node)<br/>services 10.0.192.0/21",
            "pool0 -. joins .-> endpoint",
            "gateway --> nat --> internet",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        // The pool's name is a label only: ids stay free of `-`.
        assert!(!text.contains("edge-a_"), "{text}");
    }

    #[test]
    fn a_load_balancer_endpoint_is_drawn_as_one() {
        let mut with_lb = input(&[]);
        with_lb.api_endpoint = Some("load_balancer".into());
        with_lb.load_balancer_ip = Some(Some("10.0.128.254".into()));
        let text = match plan(&with_lb) {
            Ok((plan, _)) => plan.mermaid(),
            Err(e) => panic!("expected a plan, got {e:?}"),
        };
        assert!(
            text.contains("API endpoint<br/>https://10.0.128.254:6443<br/>private load balancer"),
            "{text}"
        );
    }

    #[test]
    fn a_large_pool_shows_its_ends_and_a_count() {
        let text = diagram(&[("bulk", "10.0.128.128/25", 97)]);
        assert!(text.contains("97 nodes · 10 placement groups"), "{text}");
        assert!(
            text.contains("pool0_1[\"bulk 1<br/>10.0.128.129\"]"),
            "{text}"
        );
        assert!(text.contains("pool0_more[\"… 93 more\"]"), "{text}");
        assert!(
            text.contains("pool0_97[\"bulk 97<br/>10.0.128.225\"]"),
            "{text}"
        );
        assert!(!text.contains("pool0_4["), "{text}");
    }

    #[test]
    fn subgraphs_and_ends_pair_up() {
        let text = diagram(&[("a", "10.0.128.32/28", 1), ("b", "10.0.128.48/28", 5)]);
        let opens = text
            .lines()
            .filter(|l| l.trim_start().starts_with("subgraph "))
            .count();
        let ends = text.lines().filter(|l| l.trim() == "end").count();
        assert_eq!((opens, ends), (5, 5), "{text}");
    }
}
