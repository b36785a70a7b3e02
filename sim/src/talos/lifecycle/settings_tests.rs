//! Tests of the settings a node acts on as Talos does: kubelet's node IP
//! from `validSubnets` outside the pod and service ranges, etcd's
//! advertised address, the default route's link, and workers that reach
//! their control plane only through the endpoint.

use std::time::Duration;

use serde_yaml_ng::Value;

use crate::talos::calls;
use crate::talos::sample::SampleCluster;
use crate::talos::testing::{Lab, cluster, control_plane, worker};

const MOMENT: Duration = Duration::from_millis(10);

/// `config` with its first (v1alpha1) document changed by `edit`.
fn edited(config: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut parts: Vec<String> = config.split("---\n").map(str::to_string).collect();
    let mut doc: Value = serde_yaml_ng::from_str(&parts[0]).unwrap();
    edit(&mut doc);
    parts[0] = serde_yaml_ng::to_string(&doc).unwrap();
    parts.join("---\n")
}

fn set(doc: &mut Value, path: &[&str], value: Value) {
    let mut at = doc;
    for key in &path[..path.len() - 1] {
        if at.get(*key).is_none() {
            at[*key] = Value::Mapping(Default::default());
        }
        at = &mut at[*key];
    }
    at[path[path.len() - 1]] = value;
}

fn cidrs(list: &[&str]) -> Value {
    Value::Sequence(list.iter().map(|s| Value::from(*s)).collect())
}

/// A bootstrapped control plane at 10.0.128.11 running `config`.
fn bootstrapped(lab: &mut Lab, config: String) -> crate::ids::Id {
    let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
    lab.settle();
    lab.on(cp, |w, at, _| calls::bootstrap(w, at)).unwrap();
    lab.tick(MOMENT);
    lab.tick(MOMENT);
    cp
}

fn problem(lab: &Lab, id: crate::ids::Id) -> String {
    lab.talos(id)
        .node
        .summary
        .problem
        .clone()
        .unwrap_or_default()
}

#[test]
fn kubelet_without_a_node_ip_in_valid_subnets_never_starts() {
    let mut lab = Lab::new();
    let config = edited(&cluster().machine_config(&control_plane()), |d| {
        set(
            d,
            &["machine", "kubelet", "nodeIP", "validSubnets"],
            cidrs(&["10.0.64.0/24"]),
        );
    });
    let cp = bootstrapped(&mut lab, config);
    assert!(!lab.talos(cp).node.summary.healthy);
    assert!(
        problem(&lab, cp).starts_with("kubelet is Waiting: no suitable node IP found"),
        "{}",
        problem(&lab, cp)
    );
}

#[test]
fn a_service_range_over_the_node_leaves_kubelet_no_node_ip() {
    let mut lab = Lab::new();
    let config = edited(&cluster().machine_config(&control_plane()), |d| {
        set(
            d,
            &["cluster", "network", "serviceSubnets"],
            cidrs(&["10.0.128.0/24"]),
        );
    });
    let cp = bootstrapped(&mut lab, config);
    assert!(
        problem(&lab, cp).contains("service subnets [10.0.128.0/24]"),
        "{}",
        problem(&lab, cp)
    );
}

#[test]
fn etcd_without_an_address_in_advertised_subnets_never_joins() {
    let mut lab = Lab::new();
    let config = edited(&cluster().machine_config(&control_plane()), |d| {
        set(
            d,
            &["cluster", "etcd", "advertisedSubnets"],
            cidrs(&["10.0.64.0/24"]),
        );
    });
    let cp = bootstrapped(&mut lab, config);
    let summary = &lab.talos(cp).node.summary;
    assert!(!summary.etcd_member && !summary.healthy);
    assert!(
        problem(&lab, cp).contains("Waiting for etcd spec"),
        "{}",
        problem(&lab, cp)
    );
}

#[test]
fn only_the_default_route_on_eth0_gets_out() {
    let mut lab = Lab::new();
    let config = cluster()
        .machine_config(&control_plane())
        .replace("name: eth0", "name: eth7");
    let cp = bootstrapped(&mut lab, config);
    assert!(
        problem(&lab, cp).contains("on link eth7"),
        "{}",
        problem(&lab, cp)
    );
}

#[test]
fn workers_join_only_through_their_endpoint() {
    let mut lab = Lab::new();
    let ours = cluster();
    bootstrapped(&mut lab, ours.machine_config(&control_plane()));
    let good = lab.server(
        "w-1",
        "10.0.128.20",
        "v1.12.6",
        Some(ours.machine_config(&worker())),
    );
    let dead = edited(&ours.machine_config(&worker()), |d| {
        set(
            d,
            &["cluster", "controlPlane", "endpoint"],
            "https://10.0.128.99:6443".into(),
        );
    });
    let lost = lab.server("w-2", "10.0.128.21", "v1.12.6", Some(dead));
    // Another cluster's worker whose endpoint is our control plane.
    let other = SampleCluster::generate("other", "https://10.0.128.11:6443").unwrap();
    let stray = lab.server(
        "w-3",
        "10.0.128.22",
        "v1.12.6",
        Some(other.machine_config(&worker())),
    );
    lab.settle();
    lab.tick(MOMENT);
    assert!(
        lab.talos(good).node.summary.healthy,
        "{}",
        problem(&lab, good)
    );
    assert!(
        problem(&lab, lost).contains("no control plane answers"),
        "{}",
        problem(&lab, lost)
    );
    assert!(
        problem(&lab, stray).contains("refuses the node's token"),
        "{}",
        problem(&lab, stray)
    );
}
