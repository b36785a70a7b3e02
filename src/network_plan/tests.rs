//! Table-driven tests of the planner against the reference layout.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde_json::json;

use super::*;
use crate::tf::diagnostics::{AttrPath, Severity};

fn text(value: &str) -> Option<String> {
    Some(value.to_owned())
}

fn group(cidr: &str, nodes: i64) -> NodeGroupInput {
    NodeGroupInput {
        cidr: text(cidr),
        nodes: Some(nodes),
    }
}

/// Network 10.0.0.0/16, nodes in 10.0.128.0/24, services 10.0.192.0/21 and
/// pods 10.0.224.0/19 (32 nodes at /24 each).
fn reference() -> NetworkPlanInput {
    NetworkPlanInput {
        network_cidr: text("10.0.0.0/16"),
        node_subnet: text("10.0.128.0/24"),
        control_plane: Some(group("10.0.128.16/28", 3)),
        worker_pools: Some(BTreeMap::from([
            ("platform".to_owned(), group("10.0.128.32/27", 3)),
            ("general".to_owned(), group("10.0.128.64/27", 3)),
        ])),
        service_cidr: text("10.0.192.0/21"),
        pod_cidr: text("10.0.224.0/19"),
        pod_cidr_mask_size: Some(24),
        native_routing_cidr: text("10.0.224.0/19"),
        multi_datacenter: Some(false),
        api_endpoint: Some("first_control_plane".to_owned()),
        load_balancer_ip: Some(None),
    }
}

fn net(value: &str) -> Ipv4Net {
    value.parse().expect("test CIDR")
}

fn ips(values: &[&str]) -> Vec<Ipv4Addr> {
    values.iter().map(|v| v.parse().expect("test IP")).collect()
}

fn plan_of(input: &NetworkPlanInput) -> NetworkPlan {
    match plan(input) {
        Ok((plan, _)) => plan,
        Err(diagnostics) => panic!("expected a plan, got {diagnostics:?}"),
    }
}

// Mutations of the reference input, for the tables below.

fn pool_mut<'a>(input: &'a mut NetworkPlanInput, name: &str) -> &'a mut NodeGroupInput {
    input
        .worker_pools
        .as_mut()
        .and_then(|pools| pools.get_mut(name))
        .expect("reference pool")
}

fn control_plane_mut(input: &mut NetworkPlanInput) -> &mut NodeGroupInput {
    input
        .control_plane
        .as_mut()
        .expect("reference control plane")
}

/// `native_routing_cidr` follows `pod_cidr`, as the caller's default does.
fn set_pods(input: &mut NetworkPlanInput, cidr: &str) {
    input.pod_cidr = text(cidr);
    input.native_routing_cidr = text(cidr);
}

fn rename_pool(input: &mut NetworkPlanInput, from: &str, to: &str) {
    if let Some(pools) = input.worker_pools.as_mut()
        && let Some(pool) = pools.remove(from)
    {
        pools.insert(to.to_owned(), pool);
    }
}

fn top(name: &str) -> AttrPath {
    AttrPath::attr(name)
}

fn cp(name: &str) -> AttrPath {
    AttrPath::attr("control_plane").attr_of(name)
}

fn pool(pool: &str, name: &str) -> AttrPath {
    AttrPath::attr("worker_pools").key(pool).attr_of(name)
}

fn errors(diagnostics: &Diagnostics) -> Vec<&Diagnostic> {
    diagnostics.iter().filter(|d| d.is_error()).collect()
}

#[test]
fn reference_layout_plans() {
    let (plan, warnings) = plan(&reference()).expect("reference plans");
    assert!(warnings.is_empty(), "{warnings:?}");

    assert_eq!(plan.gateway(), Ipv4Addr::new(10, 0, 0, 1));
    assert_eq!(
        plan.control_plane().ips,
        ips(&["10.0.128.17", "10.0.128.18", "10.0.128.19"])
    );
    assert_eq!(
        plan.worker_pools()["platform"].ips,
        ips(&["10.0.128.33", "10.0.128.34", "10.0.128.35"])
    );
    assert_eq!(
        plan.worker_pools()["general"].ips,
        ips(&["10.0.128.65", "10.0.128.66", "10.0.128.67"])
    );
    assert_eq!(
        plan.node_cidrs(),
        vec![
            net("10.0.128.16/28"),
            net("10.0.128.64/27"),
            net("10.0.128.32/27")
        ]
    );
    assert_eq!(plan.cluster_endpoint(), "https://10.0.128.17:6443");
    assert_eq!(plan.etcd_advertised_subnets(), vec![net("10.0.128.16/28")]);
    assert_eq!(plan.max_nodes(), 32);
    let expected_groups = BTreeMap::from([
        ("cp".to_owned(), 1),
        ("general".to_owned(), 1),
        ("platform".to_owned(), 1),
    ]);
    assert_eq!(plan.placement_groups(), expected_groups);

    assert_eq!(plan.network_cidr(), net("10.0.0.0/16"));
    assert_eq!(plan.node_subnet(), net("10.0.128.0/24"));
    assert_eq!(plan.service_cidr(), net("10.0.192.0/21"));
    assert_eq!(plan.pod_cidr(), net("10.0.224.0/19"));
    assert_eq!(plan.pod_cidr_mask_size(), 24);
    assert_eq!(plan.native_routing_cidr(), net("10.0.224.0/19"));
    assert!(!plan.multi_datacenter());
    assert_eq!(plan.control_plane().nodes, 3);
    assert_eq!(plan.control_plane().cidr, net("10.0.128.16/28"));
    assert_eq!(plan.control_plane().placement_groups, 1);
}

#[test]
fn placement_groups_hold_ten_servers_each() {
    let mut input = reference();
    pool_mut(&mut input, "platform").nodes = Some(11);
    pool_mut(&mut input, "general").nodes = Some(0);
    let plan = plan_of(&input);
    let expected = BTreeMap::from([
        ("cp".to_owned(), 1),
        ("general".to_owned(), 0),
        ("platform".to_owned(), 2),
    ]);
    assert_eq!(plan.placement_groups(), expected);
    assert!(plan.worker_pools()["general"].ips.is_empty());
}

#[test]
fn plan_document_has_every_field() {
    let expected = json!({
        "version": 1,
        "network_cidr": "10.0.0.0/16",
        "node_subnet": "10.0.128.0/24",
        "gateway": "10.0.0.1",
        "control_plane": {"cidr": "10.0.128.16/28", "nodes": 3, "ips": ["10.0.128.17", "10.0.128.18", "10.0.128.19"]},
        "worker_pools": {
            "general": {"cidr": "10.0.128.64/27", "nodes": 3, "ips": ["10.0.128.65", "10.0.128.66", "10.0.128.67"]},
            "platform": {"cidr": "10.0.128.32/27", "nodes": 3, "ips": ["10.0.128.33", "10.0.128.34", "10.0.128.35"]},
        },
        "node_cidrs": ["10.0.128.16/28", "10.0.128.64/27", "10.0.128.32/27"],
        "service_cidr": "10.0.192.0/21",
        "pod_cidr": "10.0.224.0/19",
        "pod_cidr_mask_size": 24,
        "native_routing_cidr": "10.0.224.0/19",
        "multi_datacenter": false,
        "cluster_endpoint": "https://10.0.128.17:6443",
        "etcd_advertised_subnets": ["10.0.128.16/28"],
        "max_nodes": 32,
        "placement_groups": {"cp": 1, "general": 1, "platform": 1},
    });
    let document = plan_of(&reference()).to_json();
    assert_eq!(document, expected);
    let keys: Vec<&String> = document.as_object().expect("object").keys().collect();
    let expected_keys: Vec<&String> = expected.as_object().expect("object").keys().collect();
    assert_eq!(keys, expected_keys, "documented key order");
}

#[test]
fn plan_document_round_trips() {
    for multi_datacenter in [false, true] {
        let mut input = reference();
        input.multi_datacenter = Some(multi_datacenter);
        let plan = plan_of(&input);
        assert_eq!(NetworkPlan::from_json(&plan.to_json()), Ok(plan));
    }
}

#[test]
fn plan_document_accepts_whole_floats() {
    let plan = plan_of(&reference());
    let mut document = plan.to_json();
    document["pod_cidr_mask_size"] = json!(24.0);
    document["control_plane"]["nodes"] = json!(3.0);
    document["max_nodes"] = json!(32.0);
    assert_eq!(NetworkPlan::from_json(&document), Ok(plan));
}

#[test]
fn plan_document_rejections() {
    type Edit = fn(&mut serde_json::Value);
    let cases: &[(&str, Edit, &str)] = &[
        ("newer version", |d| d["version"] = json!(2), "version 2"),
        ("no version", |d| d["version"] = json!(null), "version"),
        ("not an object", |d| *d = json!([1]), "object"),
        (
            "missing field",
            |d| {
                d.as_object_mut().map(|o| o.remove("service_cidr"));
            },
            "service_cidr",
        ),
        ("unknown field", |d| d["extra"] = json!(1), "extra"),
        (
            "tampered ip",
            |d| d["control_plane"]["ips"][0] = json!("10.0.128.30"),
            "control_plane",
        ),
        (
            "tampered gateway",
            |d| d["gateway"] = json!("10.0.0.2"),
            "gateway",
        ),
        (
            "wrong type",
            |d| d["multi_datacenter"] = json!("yes"),
            "multi_datacenter",
        ),
        (
            "fractional count",
            |d| d["control_plane"]["nodes"] = json!(2.5),
            "nodes",
        ),
        (
            "invalid inputs",
            |d| d["control_plane"]["cidr"] = json!("10.0.128.17/28"),
            "10.0.128.16/28",
        ),
    ];
    for (name, edit, phrase) in cases {
        let mut document = plan_of(&reference()).to_json();
        edit(&mut document);
        match NetworkPlan::from_json(&document) {
            Ok(_) => panic!("{name}: accepted"),
            Err(message) => assert!(message.contains(phrase), "{name}: {message}"),
        }
    }
}

#[test]
fn helm_values() {
    let mut input = reference();
    let plan = plan_of(&input);
    assert_eq!(
        plan.cilium_values(),
        json!({
            "routingMode": "native",
            "ipv4NativeRoutingCIDR": "10.0.224.0/19",
            "autoDirectNodeRoutes": true,
            "directRoutingSkipUnreachable": true,
            "kubeProxyReplacement": true,
            "ipam": {"mode": "kubernetes"},
            "k8sServiceHost": "localhost",
            "k8sServicePort": 7445,
            "cgroup": {"autoMount": {"enabled": false}, "hostRoot": "/sys/fs/cgroup"},
            "securityContext": {"capabilities": {
                "ciliumAgent": ["CHOWN", "KILL", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "SYS_ADMIN", "SYS_RESOURCE", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"],
                "cleanCiliumState": ["NET_ADMIN", "SYS_ADMIN", "SYS_RESOURCE"],
            }},
        })
    );
    assert_eq!(
        plan.hccm_values(),
        json!({"networking": {"enabled": true, "clusterCIDR": "10.0.224.0/19"}})
    );

    // Layer 3 in one location as between several: the same values.
    input.multi_datacenter = Some(true);
    assert_eq!(plan_of(&input).cilium_values(), plan.cilium_values());

    let policy = plan.cilium_metadata_policy();
    assert_eq!(policy["kind"], json!("CiliumClusterwideNetworkPolicy"));
    assert_eq!(policy["spec"]["endpointSelector"], json!({}));
    assert_eq!(
        policy["spec"]["egressDeny"],
        json!([
            {"toCIDR": ["169.254.169.254/32"]},
            {
                "toEntities": ["host", "remote-node"],
                "toPorts": [{"ports": [{"port": "50000", "protocol": "TCP"}]}],
            },
            {
                "toCIDR": ["10.0.128.0/24"],
                "toPorts": [{"ports": [{"port": "50000", "protocol": "TCP"}]}],
            },
        ])
    );
    assert_eq!(
        policy["spec"]["enableDefaultDeny"],
        json!({"egress": false, "ingress": false})
    );
}

/// One row per rule: the change to the reference layout, where the error
/// must point, and a phrase its message must contain.
struct Case {
    rule: &'static str,
    change: fn(&mut NetworkPlanInput),
    path: AttrPath,
    phrases: &'static [&'static str],
}

fn rule_cases() -> Vec<Case> {
    vec![
        // 1. CIDRs parse, are IPv4 and canonical.
        Case {
            rule: "non-canonical group CIDR",
            change: |i| control_plane_mut(i).cidr = text("10.0.128.17/28"),
            path: cp("cidr"),
            phrases: &["\"10.0.128.16/28\"", "network address"],
        },
        Case {
            rule: "non-canonical pod CIDR",
            change: |i| set_pods(i, "10.0.200.0/19"),
            path: top("pod_cidr"),
            phrases: &["\"10.0.192.0/19\""],
        },
        Case {
            rule: "CIDR without prefix",
            change: |i| i.network_cidr = text("10.0.0.0"),
            path: top("network_cidr"),
            phrases: &["CIDR notation"],
        },
        Case {
            rule: "IPv6 CIDR",
            change: |i| i.service_cidr = text("fd00::/108"),
            path: top("service_cidr"),
            phrases: &["IPv6", "IPv4 only"],
        },
        Case {
            rule: "garbage native routing CIDR",
            change: |i| i.native_routing_cidr = text("10.0.224.0/33"),
            path: top("native_routing_cidr"),
            phrases: &["CIDR notation"],
        },
        Case {
            rule: "pool CIDR garbage",
            change: |i| pool_mut(i, "general").cidr = text("ten"),
            path: pool("general", "cidr"),
            phrases: &["\"ten\""],
        },
        // Hetzner's network rules.
        Case {
            rule: "public network",
            change: |i| i.network_cidr = text("100.64.0.0/16"),
            path: top("network_cidr"),
            phrases: &["RFC 1918"],
        },
        Case {
            rule: "network smaller than /24",
            change: |i| i.network_cidr = text("10.0.128.0/25"),
            path: top("network_cidr"),
            phrases: &["/25", "smallest network is a /24"],
        },
        // 2. Containment.
        Case {
            rule: "node subnet outside network",
            change: |i| i.node_subnet = text("10.1.128.0/24"),
            path: top("node_subnet"),
            phrases: &[
                "\"10.1.128.0/24\"",
                "not inside network_cidr = \"10.0.0.0/16\"",
            ],
        },
        Case {
            rule: "control plane outside node subnet",
            change: |i| control_plane_mut(i).cidr = text("10.0.129.16/28"),
            path: cp("cidr"),
            phrases: &["not inside node_subnet = \"10.0.128.0/24\""],
        },
        Case {
            rule: "pool outside node subnet",
            change: |i| pool_mut(i, "platform").cidr = text("10.0.127.32/27"),
            path: pool("platform", "cidr"),
            phrases: &["\"10.0.127.32/27\"", "not inside node_subnet"],
        },
        Case {
            rule: "pool spilling over the node subnet is not also reported as overlapping",
            change: |i| pool_mut(i, "general").cidr = text("10.0.128.0/21"),
            path: pool("general", "cidr"),
            phrases: &["not inside node_subnet"],
        },
        // 3. Node groups do not overlap.
        Case {
            rule: "pool overlaps control plane",
            change: |i| pool_mut(i, "general").cidr = text("10.0.128.16/28"),
            path: pool("general", "cidr"),
            phrases: &["overlaps control_plane.cidr = \"10.0.128.16/28\""],
        },
        Case {
            rule: "pools overlap",
            change: |i| pool_mut(i, "platform").cidr = text("10.0.128.64/26"),
            path: pool("platform", "cidr"),
            phrases: &[
                "worker_pools[\"platform\"].cidr",
                "overlaps worker_pools[\"general\"].cidr",
            ],
        },
        // 4. Pods and services clear of nodes and of each other.
        Case {
            rule: "service CIDR overlaps node subnet",
            change: |i| i.service_cidr = text("10.0.128.0/21"),
            path: top("service_cidr"),
            phrases: &["overlaps node_subnet = \"10.0.128.0/24\""],
        },
        Case {
            rule: "service CIDR over everything is reported once, at service_cidr",
            change: |i| i.service_cidr = text("10.0.0.0/8"),
            path: top("service_cidr"),
            phrases: &["overlaps node_subnet"],
        },
        Case {
            rule: "pod CIDR overlaps node subnet",
            change: |i| set_pods(i, "10.0.128.0/19"),
            path: top("pod_cidr"),
            phrases: &["overlaps node_subnet"],
        },
        Case {
            rule: "pod CIDR overlaps a node group while the subnet is unknown",
            change: |i| {
                i.node_subnet = None;
                set_pods(i, "10.0.128.0/19");
            },
            path: top("pod_cidr"),
            phrases: &["overlaps control_plane.cidr"],
        },
        Case {
            rule: "pod CIDR overlaps service CIDR",
            change: |i| set_pods(i, "10.0.192.0/19"),
            path: top("pod_cidr"),
            phrases: &["overlaps service_cidr = \"10.0.192.0/21\""],
        },
        // 5. Groups hold their nodes; counts are not negative.
        Case {
            rule: "control plane CIDR too small",
            change: |i| control_plane_mut(i).nodes = Some(15),
            path: cp("cidr"),
            phrases: &["holds 14", "= 15", "/27"],
        },
        Case {
            rule: "pool CIDR too small",
            change: |i| {
                pool_mut(i, "platform").nodes = Some(31);
                i.pod_cidr_mask_size = Some(25);
            },
            path: pool("platform", "cidr"),
            phrases: &["holds 30", "/26"],
        },
        Case {
            rule: "negative control-plane nodes",
            change: |i| control_plane_mut(i).nodes = Some(-1),
            path: cp("nodes"),
            phrases: &["negative"],
        },
        Case {
            rule: "negative pool nodes",
            change: |i| pool_mut(i, "general").nodes = Some(-3),
            path: pool("general", "nodes"),
            phrases: &["= -3", "negative"],
        },
        // 6. The pod CIDR serves every node.
        Case {
            rule: "more nodes than the pod CIDR serves",
            change: |i| pool_mut(i, "general").nodes = Some(30),
            path: top("pod_cidr"),
            phrases: &["36 nodes", "holds 32", "/18", "pod_cidr_mask_size = 25"],
        },
        // 7. Pod mask size.
        Case {
            rule: "mask not longer than pod prefix",
            change: |i| i.pod_cidr_mask_size = Some(19),
            path: top("pod_cidr_mask_size"),
            phrases: &["longer than", "/19", "between 20 and 28"],
        },
        Case {
            rule: "mask longer than 28",
            change: |i| i.pod_cidr_mask_size = Some(29),
            path: top("pod_cidr_mask_size"),
            phrases: &["= 29", "/28"],
        },
        Case {
            rule: "mask below 1",
            change: |i| i.pod_cidr_mask_size = Some(0),
            path: top("pod_cidr_mask_size"),
            phrases: &["= 0"],
        },
        Case {
            rule: "more than 2^16 per-node ranges",
            change: |i| {
                set_pods(i, "10.128.0.0/9");
                i.pod_cidr_mask_size = Some(26);
            },
            path: top("pod_cidr_mask_size"),
            phrases: &["2^17", "kube-controller-manager", "/10", "25"],
        },
        // 8. Native routing CIDR is the pod CIDR.
        Case {
            rule: "native routing covers everything private",
            change: |i| i.native_routing_cidr = text("10.0.0.0/8"),
            path: top("native_routing_cidr"),
            phrases: &["uRPF", "masquerade", "\"10.0.224.0/19\""],
        },
        Case {
            rule: "native routing is the whole network",
            change: |i| i.native_routing_cidr = text("10.0.0.0/16"),
            path: top("native_routing_cidr"),
            phrases: &["overlaps node_subnet", "uRPF"],
        },
        Case {
            rule: "native routing misses part of the pods",
            change: |i| i.native_routing_cidr = text("10.0.232.0/21"),
            path: top("native_routing_cidr"),
            phrases: &["does not contain pod_cidr = \"10.0.224.0/19\""],
        },
        // 9. Multi-datacenter pods inside the network.
        Case {
            rule: "multi-datacenter pods outside the network",
            change: |i| {
                i.multi_datacenter = Some(true);
                set_pods(i, "10.1.0.0/19");
            },
            path: top("pod_cidr"),
            phrases: &[
                "multi_datacenter = true",
                "not inside network_cidr = \"10.0.0.0/16\"",
            ],
        },
        // Pods are routed by Hetzner.
        Case {
            rule: "public pod CIDR",
            change: |i| set_pods(i, "100.64.0.0/19"),
            path: top("pod_cidr"),
            phrases: &["RFC 1918", "route"],
        },
        Case {
            rule: "pod CIDR covers the gateway",
            change: |i| set_pods(i, "10.0.0.0/19"),
            path: top("pod_cidr"),
            phrases: &["contains 10.0.0.1"],
        },
        // 10. Control-plane size.
        Case {
            rule: "no control-plane nodes",
            change: |i| control_plane_mut(i).nodes = Some(0),
            path: cp("nodes"),
            phrases: &["at least one"],
        },
        // 11. Hetzner's 100 servers per network.
        Case {
            rule: "more than 100 nodes",
            change: |i| {
                i.pod_cidr_mask_size = Some(26);
                *pool_mut(i, "general") = group("10.0.128.128/25", 100);
            },
            path: top("worker_pools"),
            phrases: &["106 nodes", "at most 100"],
        },
        Case {
            rule: "more than 100 control-plane nodes",
            change: |i| {
                i.pod_cidr_mask_size = Some(26);
                *control_plane_mut(i) = group("10.0.128.128/25", 101);
            },
            path: cp("nodes"),
            phrases: &["107 nodes", "at most 100"],
        },
        Case {
            rule: "absurd node count",
            change: |i| pool_mut(i, "general").nodes = Some(1 << 40),
            path: pool("general", "nodes"),
            phrases: &["100 servers"],
        },
        // 12. Pool names.
        Case {
            rule: "uppercase pool name",
            change: |i| rename_pool(i, "general", "General"),
            path: AttrPath::attr("worker_pools").key("General"),
            phrases: &["DNS label", "<cluster>-General-<n>"],
        },
        Case {
            rule: "pool name with underscore",
            change: |i| rename_pool(i, "general", "gpu_1"),
            path: AttrPath::attr("worker_pools").key("gpu_1"),
            phrases: &["DNS label"],
        },
        Case {
            rule: "pool name cp",
            change: |i| rename_pool(i, "general", "cp"),
            path: AttrPath::attr("worker_pools").key("cp"),
            phrases: &["reserved", "<cluster>-cp-<n>"],
        },
        // 13. Reserved addresses.
        Case {
            rule: "first control-plane node would get the gateway",
            change: |i| {
                i.node_subnet = text("10.0.0.0/24");
                control_plane_mut(i).cidr = text("10.0.0.0/28");
                pool_mut(i, "platform").cidr = text("10.0.0.32/27");
                pool_mut(i, "general").cidr = text("10.0.0.64/27");
            },
            path: cp("cidr"),
            phrases: &["index 0 would get 10.0.0.1", "gateway"],
        },
    ]
}

#[test]
fn each_rule_reports_one_error_at_its_attribute() {
    for case in rule_cases() {
        let mut input = reference();
        (case.change)(&mut input);
        let diagnostics = validate(&input);
        let errors = errors(&diagnostics);
        assert_eq!(
            errors.len(),
            1,
            "{}: expected exactly one error, got {diagnostics:#?}",
            case.rule
        );
        let error = errors[0];
        assert_eq!(
            error.path.as_ref(),
            Some(&case.path),
            "{}: {error}",
            case.rule
        );
        let message = format!("{} {}", error.summary, error.detail);
        for phrase in case.phrases {
            assert!(
                message.contains(phrase),
                "{}: {phrase:?} not in {message:?}",
                case.rule
            );
        }
        // `plan` refuses the same input with the same error.
        match plan(&input) {
            Ok(_) => panic!("{}: planned despite the error", case.rule),
            Err(refused) => assert_eq!(refused, diagnostics, "{}", case.rule),
        }
    }
}

#[test]
fn even_control_plane_is_a_warning() {
    let mut input = reference();
    control_plane_mut(&mut input).nodes = Some(4);
    let (plan, warnings) = plan(&input).expect("plans despite the warning");
    assert_eq!(plan.control_plane().nodes, 4);
    let warnings: Vec<&Diagnostic> = warnings.iter().collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].severity, Severity::Warning);
    assert_eq!(warnings[0].path, Some(cp("nodes")));
    assert!(
        warnings[0].detail.contains("quorum of 3 of 4"),
        "{}",
        warnings[0].detail
    );
    assert!(
        warnings[0].detail.contains("Use 3 or 5"),
        "{}",
        warnings[0].detail
    );
}

#[test]
fn refused_plans_keep_their_warnings() {
    let mut input = reference();
    control_plane_mut(&mut input).nodes = Some(2);
    pool_mut(&mut input, "general").cidr = text("10.0.128.65/27");
    let diagnostics = plan(&input).expect_err("refused");
    let severities: Vec<Severity> = diagnostics.iter().map(|d| d.severity).collect();
    assert_eq!(severities, vec![Severity::Warning, Severity::Error]);
}

#[test]
fn layouts_that_must_plan() {
    type Change = fn(&mut NetworkPlanInput);
    let cases: &[(&str, Change)] = &[
        ("single node", |i| {
            control_plane_mut(i).nodes = Some(1);
            i.worker_pools = Some(BTreeMap::new());
        }),
        ("pods outside the network in one datacenter", |i| {
            set_pods(i, "10.1.0.0/19")
        }),
        ("multi-datacenter pods inside the network", |i| {
            i.multi_datacenter = Some(true)
        }),
        ("full /28 control plane", |i| {
            control_plane_mut(i).nodes = Some(13);
            pool_mut(i, "general").nodes = Some(1);
        }),
        ("wider node subnet", |i| {
            i.node_subnet = text("10.0.128.0/20")
        }),
        ("pod count exactly at the limit", |i| {
            pool_mut(i, "general").nodes = Some(26);
        }),
        ("100 nodes", |i| {
            i.pod_cidr_mask_size = Some(26);
            *pool_mut(i, "general") = group("10.0.128.128/25", 94);
        }),
        ("native routing wider than pods, clear of nodes", |i| {
            i.native_routing_cidr = text("10.0.192.0/18");
        }),
        ("empty pool", |i| pool_mut(i, "general").nodes = Some(0)),
    ];
    for (name, change) in cases {
        let mut input = reference();
        change(&mut input);
        if let Err(diagnostics) = plan(&input) {
            panic!("{name}: {diagnostics:#?}");
        }
    }
}

#[test]
fn unknown_inputs_produce_no_errors() {
    type Unknown = fn(&mut NetworkPlanInput);
    let cases: &[(Unknown, AttrPath)] = &[
        (|i| i.network_cidr = None, top("network_cidr")),
        (|i| i.node_subnet = None, top("node_subnet")),
        (|i| i.control_plane = None, top("control_plane")),
        (|i| control_plane_mut(i).cidr = None, cp("cidr")),
        (|i| control_plane_mut(i).nodes = None, cp("nodes")),
        (|i| i.worker_pools = None, top("worker_pools")),
        (
            |i| pool_mut(i, "platform").cidr = None,
            pool("platform", "cidr"),
        ),
        (
            |i| pool_mut(i, "general").nodes = None,
            pool("general", "nodes"),
        ),
        (|i| i.service_cidr = None, top("service_cidr")),
        (|i| set_pods(i, "unused"), top("pod_cidr")),
        (|i| i.pod_cidr_mask_size = None, top("pod_cidr_mask_size")),
        (|i| i.native_routing_cidr = None, top("native_routing_cidr")),
        (|i| i.multi_datacenter = None, top("multi_datacenter")),
    ];
    for (make_unknown, path) in cases {
        let mut input = reference();
        make_unknown(&mut input);
        if input.pod_cidr.as_deref() == Some("unused") {
            input.pod_cidr = None;
            input.native_routing_cidr = None;
        }
        assert!(
            validate(&input).is_empty(),
            "{path}: {:?}",
            validate(&input)
        );
        assert!(!input.is_known(), "{path}");
        let refused = plan(&input).expect_err("unknown input");
        let errors = errors(&refused);
        assert_eq!(errors.len(), 1, "{path}: {refused:?}");
        assert_eq!(errors[0].path.as_ref(), Some(path));
        assert!(errors[0].summary.contains("not known"), "{}", errors[0]);
    }
    assert!(validate(&NetworkPlanInput::default()).is_empty());
    assert!(reference().is_known());
}

#[test]
fn known_parts_are_checked_beside_unknowns() {
    // The network is unknown, yet the control plane is certainly misplaced.
    let mut input = reference();
    input.network_cidr = None;
    control_plane_mut(&mut input).cidr = text("10.0.129.16/28");
    let diagnostics = validate(&input);
    assert_eq!(errors(&diagnostics).len(), 1);
    assert_eq!(diagnostics.0[0].path, Some(cp("cidr")));

    // Pools unknown, but the control plane alone already exceeds the pod CIDR.
    let mut input = reference();
    input.worker_pools = None;
    *control_plane_mut(&mut input) = group("10.0.128.128/26", 33);
    let diagnostics = validate(&input);
    let errors = errors(&diagnostics);
    assert_eq!(errors.len(), 1, "{diagnostics:?}");
    assert_eq!(errors[0].path, Some(top("pod_cidr")));
    assert!(
        errors[0].detail.contains("at least 33 nodes"),
        "{}",
        errors[0].detail
    );
}

#[test]
fn id_is_stable_and_follows_the_inputs() {
    let id = plan_of(&reference()).id();
    assert_eq!(id.len(), 16);
    assert!(
        id.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{id}"
    );
    assert_eq!(plan_of(&reference()).id(), id, "equal inputs, equal id");
    // Pinned: an id that changes across provider versions would churn state.
    assert_eq!(id, "131a3a904de8e2f8");

    type Change = fn(&mut NetworkPlanInput);
    let changes: &[(&str, Change)] = &[
        ("network", |i| i.network_cidr = text("10.0.0.0/15")),
        ("node subnet", |i| i.node_subnet = text("10.0.128.0/23")),
        ("control-plane nodes", |i| {
            control_plane_mut(i).nodes = Some(1)
        }),
        ("control-plane cidr", |i| {
            control_plane_mut(i).cidr = text("10.0.128.0/28")
        }),
        ("pool nodes", |i| pool_mut(i, "general").nodes = Some(4)),
        ("pool cidr", |i| {
            pool_mut(i, "general").cidr = text("10.0.128.96/27")
        }),
        ("pool name", |i| rename_pool(i, "general", "compute")),
        ("services", |i| i.service_cidr = text("10.0.208.0/21")),
        ("pods", |i| set_pods(i, "10.0.160.0/19")),
        ("mask", |i| i.pod_cidr_mask_size = Some(25)),
        ("native routing", |i| {
            i.native_routing_cidr = text("10.0.192.0/18")
        }),
        ("multi-datacenter", |i| i.multi_datacenter = Some(true)),
    ];
    for (name, change) in changes {
        let mut input = reference();
        change(&mut input);
        assert_ne!(plan_of(&input).id(), id, "{name}");
    }
}
