//! `hct_network_plan` through a real Terraform CLI (dev_overrides): the schema
//! loads, the example applies with exactly the expected outputs, every
//! plan-time rule fails with its own error at its own attribute, and unknown
//! inputs plan cleanly.

use crate::peers;
use crate::support;

use serde_json::{Value, json};
use support::Workspace;

const PROVIDER: &str = r#"
terraform {
  required_providers {
    hct = { source = "registry.hct.internal/hct/hct" }
  }
}
provider "hct" {}
"#;

fn example() -> String {
    std::fs::read_to_string(support::repo_root().join("examples/network-plan/main.tf")).unwrap()
}

#[test]
fn schema_loads_with_the_data_source_and_provider_block() {
    let ws = Workspace::dev_override(&[("main.tf", PROVIDER)]);
    let out = ws
        .terraform(&["providers", "schema", "-json"])
        .expect_success("providers schema");
    let schema: Value = serde_json::from_str(&out.stdout).unwrap();
    let hct = &schema["provider_schemas"]["registry.hct.internal/hct/hct"];
    assert_eq!(
        hct["provider"]["block"]["attributes"]["hcloud_token"]["sensitive"],
        json!(true)
    );
    let plan = &hct["data_source_schemas"]["hct_network_plan"]["block"]["attributes"];
    assert_eq!(plan["network_cidr"]["required"], json!(true));
    assert_eq!(
        plan["control_plane"]["nested_type"]["nesting_mode"],
        json!("single")
    );
    assert_eq!(
        plan["worker_pools"]["nested_type"]["nesting_mode"],
        json!("map")
    );
    assert_eq!(plan["json"]["computed"], json!(true));
}

#[test]
fn example_applies_with_exactly_the_expected_outputs() {
    let ws = Workspace::dev_override(&[("main.tf", &example())]);
    ws.terraform(&["apply", "-auto-approve"])
        .expect_success("apply");
    let outputs = ws.outputs();
    let value = |name: &str| outputs[name]["value"].clone();
    assert_eq!(value("gateway"), json!("10.0.0.1"));
    assert_eq!(
        value("node_cidrs"),
        json!(["10.0.128.16/28", "10.0.128.64/27", "10.0.128.32/27"])
    );
    assert_eq!(
        value("control_plane_ips"),
        json!(["10.0.128.17", "10.0.128.18", "10.0.128.19"])
    );
    assert_eq!(
        value("worker_ips"),
        json!({
            "general": ["10.0.128.65", "10.0.128.66", "10.0.128.67"],
            "platform": ["10.0.128.33", "10.0.128.34", "10.0.128.35"],
        })
    );
    assert_eq!(value("cluster_endpoint"), json!("https://10.0.128.17:6443"));
    assert_eq!(value("etcd_advertised_subnets"), json!(["10.0.128.16/28"]));
    assert_eq!(value("max_nodes"), json!(32));
    assert_eq!(
        value("placement_groups"),
        json!({"cp": 1, "general": 1, "platform": 1})
    );
    let cilium = value("cilium_values");
    assert_eq!(cilium["routingMode"], json!("native"));
    assert_eq!(cilium["ipv4NativeRoutingCIDR"], json!("10.0.224.0/19"));
    assert_eq!(cilium["autoDirectNodeRoutes"], json!(true));
    assert_eq!(cilium["directRoutingSkipUnreachable"], json!(true));
    assert_eq!(cilium["kubeProxyReplacement"], json!(true));
    assert_eq!(cilium["ipam"]["mode"], json!("kubernetes"));
    assert_eq!(cilium["k8sServiceHost"], json!("localhost"));
    assert_eq!(cilium["k8sServicePort"], json!(7445));
    assert_eq!(
        value("hccm_values"),
        json!({"networking": {"enabled": true, "clusterCIDR": "10.0.224.0/19"}})
    );
    let policy = value("cilium_metadata_policy");
    assert_eq!(policy["kind"], json!("CiliumClusterwideNetworkPolicy"));
    assert_eq!(
        policy["spec"]["egressDeny"][0],
        json!({"toCIDR": ["169.254.169.254/32"]})
    );
    assert_eq!(
        policy["spec"]["egressDeny"][1]["toPorts"][0]["ports"],
        json!([{"port": "50000", "protocol": "TCP"}]),
        "pods are kept off the nodes' Talos API"
    );
    assert_eq!(
        policy["spec"]["egressDeny"][2]["toCIDR"],
        json!(["10.0.128.0/24"]),
        "also off nodes that run no Cilium yet"
    );

    // A second plan is empty, and the pod-CIDR check stops a plan that asks too much.
    let plan = ws.terraform(&["plan", "-detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{plan}");
    let too_many = ws
        .terraform(&["plan", "-var", "general_nodes=30"])
        .expect_failure("40 nodes on a /19");
    assert!(
        too_many.stderr.contains("Pod CIDR too small for the nodes"),
        "{too_many}"
    );
}

/// One data source per rule, each breaking the reference layout in one way.
/// (case, attribute the error must point at, HCL overrides, phrase in the diagnostic)
const RULES: &[(&str, &str, &str, &str)] = &[
    (
        "not_canonical",
        "control_plane",
        r#"control_plane = { cidr = "10.0.128.17/28", nodes = 3 }"#,
        "10.0.128.16/28",
    ),
    (
        "not_ipv4",
        "network_cidr",
        r#"network_cidr = "fd00::/8""#,
        "Not an IPv4 CIDR",
    ),
    (
        "subnet_outside_network",
        "node_subnet",
        r#"node_subnet = "10.1.128.0/24""#,
        "Node subnet outside the network",
    ),
    (
        "pool_outside_subnet",
        "worker_pools",
        r#"worker_pools = { general = { cidr = "10.0.129.0/27", nodes = 3 } }"#,
        "Node group outside the node subnet",
    ),
    (
        "groups_overlap",
        "worker_pools",
        r#"worker_pools = { a = { cidr = "10.0.128.32/27", nodes = 3 }, b = { cidr = "10.0.128.48/28", nodes = 3 } }"#,
        "Node groups overlap",
    ),
    (
        "pods_overlap_nodes",
        "pod_cidr",
        r#"pod_cidr = "10.0.128.0/19""#,
        "Pod CIDR overlaps",
    ),
    (
        "services_overlap_nodes",
        "service_cidr",
        r#"service_cidr = "10.0.128.0/21""#,
        "Service CIDR overlaps the nodes",
    ),
    (
        "pods_overlap_services",
        "pod_cidr",
        r#"service_cidr = "10.0.224.0/21""#,
        "overlap",
    ),
    (
        "group_too_small",
        "control_plane",
        r#"control_plane = { cidr = "10.0.128.16/30", nodes = 3 }"#,
        "Node group CIDR too small",
    ),
    (
        "more_nodes_than_pod_cidr",
        "pod_cidr",
        r#"worker_pools = { general = { cidr = "10.0.128.64/26", nodes = 37 } }"#,
        "Pod CIDR too small for the nodes",
    ),
    (
        "mask_not_longer",
        "pod_cidr_mask_size",
        "pod_cidr_mask_size = 19",
        "not longer than the pod CIDR",
    ),
    (
        "mask_too_long",
        "pod_cidr_mask_size",
        "pod_cidr_mask_size = 29",
        "28",
    ),
    (
        "native_routing_whole_network",
        "native_routing_cidr",
        r#"native_routing_cidr = "10.0.0.0/16""#,
        "Native routing CIDR covers the nodes",
    ),
    (
        "native_routing_misses_pods",
        "native_routing_cidr",
        r#"native_routing_cidr = "10.0.160.0/19""#,
        "does not contain the pod CIDR",
    ),
    (
        "multi_dc_pods_outside_network",
        "pod_cidr",
        "multi_datacenter = true\n  pod_cidr = \"172.16.0.0/19\"",
        "multi_datacenter",
    ),
    (
        "no_control_plane",
        "control_plane",
        r#"control_plane = { cidr = "10.0.128.16/28", nodes = 0 }"#,
        "Control plane needs at least one node",
    ),
    (
        "over_hetzner_limit",
        "worker_pools",
        r#"node_subnet = "10.0.0.0/20"
  control_plane = { cidr = "10.0.0.16/28", nodes = 3 }
  worker_pools = { big = { cidr = "10.0.1.0/24", nodes = 120 } }
  pod_cidr = "10.0.128.0/17"
  service_cidr = "10.0.96.0/20""#,
        "Too many nodes for one Hetzner network",
    ),
    (
        "pool_name_not_dns",
        "worker_pools",
        r#"worker_pools = { Bad_Name = { cidr = "10.0.128.32/27", nodes = 3 } }"#,
        "not a DNS label",
    ),
    (
        "pool_name_cp",
        "worker_pools",
        r#"worker_pools = { cp = { cidr = "10.0.128.32/27", nodes = 3 } }"#,
        "Reserved worker pool name",
    ),
    (
        "ip_is_gateway",
        "control_plane",
        r#"node_subnet = "10.0.0.0/24"
  control_plane = { cidr = "10.0.0.0/28", nodes = 3 }
  worker_pools = {}"#,
        "reserved address",
    ),
];

fn data_source(case: &str, overrides: &str) -> String {
    // Later assignments of the same attribute are not allowed in HCL, so the
    // defaults skip whatever the case overrides.
    let defaults = [
        ("network_cidr", r#"network_cidr = "10.0.0.0/16""#),
        ("node_subnet", r#"node_subnet = "10.0.128.0/24""#),
        (
            "control_plane",
            r#"control_plane = { cidr = "10.0.128.16/28", nodes = 3 }"#,
        ),
        (
            "worker_pools",
            r#"worker_pools = { platform = { cidr = "10.0.128.32/27", nodes = 3 } }"#,
        ),
        ("service_cidr", r#"service_cidr = "10.0.192.0/21""#),
        ("pod_cidr", r#"pod_cidr = "10.0.224.0/19""#),
    ];
    let overridden = |name: &str| {
        overrides
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{name} ")))
    };
    let mut body: Vec<&str> = defaults
        .iter()
        .filter(|(n, _)| !overridden(n))
        .map(|(_, l)| *l)
        .collect();
    body.push(overrides);
    format!(
        "data \"hct_network_plan\" \"{case}\" {{\n  {}\n}}\n",
        body.join("\n  ")
    )
}

#[test]
fn every_rule_fails_with_its_own_error_at_its_attribute() {
    let mut config = PROVIDER.to_string();
    for (case, _, overrides, _) in RULES {
        config += &data_source(case, overrides);
    }
    config += &data_source(
        "even_control_plane",
        r#"control_plane = { cidr = "10.0.128.16/28", nodes = 2 }"#,
    );
    let ws = Workspace::dev_override(&[("main.tf", &config)]);
    let out = ws.terraform(&["validate", "-json"]);
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    let diagnostics = report["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let for_case = |case: &str| -> Vec<Value> {
        diagnostics
            .iter()
            .filter(|d| {
                d["snippet"]["context"]
                    .as_str()
                    .is_some_and(|c| c.ends_with(&format!("\"{case}\"")))
            })
            .cloned()
            .collect()
    };
    for (case, attribute, _, phrase) in RULES {
        let found = for_case(case);
        let matching: Vec<&Value> = found
            .iter()
            .filter(|d| {
                d["severity"] == json!("error")
                    && format!("{} {}", d["summary"], d["detail"]).contains(phrase)
            })
            .collect();
        assert!(
            !matching.is_empty(),
            "{case}: no error containing {phrase:?}; got {found:#?}"
        );
        // Terraform underlines the attribute; older releases (seen with 1.11) underline the
        // whole block for paths into nested attributes, so then the text must
        // name the attribute.
        let code = matching[0]["snippet"]["code"].as_str().unwrap_or_default();
        let detail = matching[0]["detail"].as_str().unwrap_or_default();
        let names_block = code.contains("data \"hct_network_plan\"");
        assert!(
            code.contains(attribute) || (names_block && detail.contains(attribute)),
            "{case}: error points at {code:?}, not {attribute}: {detail}"
        );
    }
    let even = for_case("even_control_plane");
    assert!(
        even.iter().all(|d| d["severity"] == json!("warning")) && !even.is_empty(),
        "an even control plane is a warning only: {even:#?}"
    );
}

#[test]
fn unknown_inputs_plan_without_error_and_resolve_on_apply() {
    let config = format!(
        r#"{PROVIDER}
resource "terraform_data" "network" {{
  input = "10.0.0.0/16"
}}
data "hct_network_plan" "this" {{
  network_cidr  = terraform_data.network.output
  node_subnet   = "10.0.128.0/24"
  control_plane = {{ cidr = "10.0.128.16/28", nodes = 3 }}
  service_cidr  = "10.0.192.0/21"
  pod_cidr      = "10.0.224.0/19"
}}
output "gateway" {{ value = data.hct_network_plan.this.gateway }}
"#
    );
    let ws = Workspace::dev_override(&[("main.tf", &config)]);
    let plan = ws
        .terraform(&["plan"])
        .expect_success("plan with unknown network_cidr");
    assert!(plan.stdout.contains("(known after apply)"), "{plan}");
    ws.terraform(&["apply", "-auto-approve"])
        .expect_success("apply");
    assert_eq!(ws.outputs()["gateway"]["value"], json!("10.0.0.1"));
}

#[test]
fn malformed_provider_configuration_is_an_error_at_its_attribute() {
    let config = r#"
terraform {
  required_providers {
    hct = { source = "registry.hct.internal/hct/hct" }
  }
}
provider "hct" {
  talos_proxy   = "http://127.0.0.1:8080"
  poll_interval = "fast"
}
data "hct_network_plan" "this" {
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = { cidr = "10.0.128.16/28", nodes = 3 }
  service_cidr  = "10.0.192.0/21"
  pod_cidr      = "10.0.224.0/19"
}
"#;
    let ws = Workspace::dev_override(&[("main.tf", config)]);
    let out = ws.terraform(&["plan"]).expect_failure("bad provider block");
    assert!(out.stderr.contains("Invalid SOCKS5 proxy"), "{out}");
    assert!(out.stderr.contains("talos_proxy"), "{out}");
    assert!(out.stderr.contains("Invalid poll interval"), "{out}");
}

#[test]
fn the_mermaid_diagram_parses_with_mermaid_and_shows_the_plan() {
    let config = format!(
        r#"{PROVIDER}
data "hct_network_plan" "this" {{
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = {{ cidr = "10.0.128.16/28", nodes = 3 }}
  worker_pools = {{
    edge-a = {{ cidr = "10.0.128.32/28", nodes = 2 }}
    bulk   = {{ cidr = "10.0.128.128/26", nodes = 20 }}
  }}
  service_cidr = "10.0.192.0/21"
  pod_cidr     = "10.0.224.0/19"
}}
output "diagram" {{ value = data.hct_network_plan.this.mermaid }}
"#
    );
    let ws = Workspace::dev_override(&[("main.tf", &config)]);
    ws.terraform(&["apply", "-auto-approve"])
        .expect_success("apply");
    let diagram = ws.outputs()["diagram"]["value"]
        .as_str()
        .expect("the diagram is a string")
        .to_string();
    assert_eq!(
        peers::mermaid::parse(&diagram),
        Ok("flowchart-v2".to_string()),
        "{diagram}"
    );
    for shown in [
        "network 10.0.0.0/16",
        "gateway 10.0.0.1",
        "https://10.0.128.17:6443",
        "pool edge-a 10.0.128.32/28",
        "edge-a 2<br/>10.0.128.34",
        "20 nodes · 2 placement groups",
        "bulk 20<br/>10.0.128.148",
        "NAT box",
    ] {
        assert!(diagram.contains(shown), "{shown:?} missing from\n{diagram}");
    }
    // The checker can fail: a diagram with a subgraph left open is refused.
    let broken = diagram.replacen("    end\n    kube[", "    kube[", 1);
    assert_ne!(broken, diagram);
    assert!(peers::mermaid::parse(&broken).is_err(), "{broken}");
}
