//! Generated configs for the reference plan, per contract and role.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::*;
use crate::talos::testing::{self, reference_plan};
use crate::talos::yaml;

mod v1_13;
mod v1_14;

const SCHEMATIC: &str = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

fn input(talos_version: &str, role: Role) -> NodeConfigInput {
    NodeConfigInput {
        cluster_name: "demo".into(),
        talos_version: talos_version.parse().unwrap(),
        kubernetes_version: None,
        schematic_id: SCHEMATIC.into(),
        install_disk: None,
        hostname: "demo-cp-1".into(),
        role,
        node_labels: BTreeMap::new(),
        node_taints: BTreeMap::new(),
        inline_manifests: Vec::new(),
        config_patches: Vec::new(),
        interface: None,
        ip: None,
    }
}

fn documents(input: &NodeConfigInput) -> Vec<Value> {
    let config = generate(input, &reference_plan(), testing::fixture_secrets())
        .unwrap_or_else(|e| panic!("{e}"));
    yaml::parse_documents(config.as_str()).unwrap()
}

fn kinds(documents: &[Value]) -> Vec<&str> {
    documents
        .iter()
        .map(|d| d.get("kind").and_then(Value::as_str).unwrap_or("v1alpha1"))
        .collect()
}

fn document<'a>(documents: &'a [Value], kind: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} document"))
}

fn decoded(value: &Value) -> String {
    String::from_utf8(STANDARD.decode(value.as_str().unwrap()).unwrap()).unwrap()
}

#[test]
fn v1_12_control_plane_carries_the_plan() {
    let docs = documents(&input("v1.12.6", Role::ControlPlane));
    assert_eq!(
        kinds(&docs),
        ["v1alpha1", "HostnameConfig", "LinkConfig", "DHCPv4Config"]
    );
    let config = &docs[0];
    let keys: Vec<&String> = config.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["version", "debug", "persist", "machine", "cluster"]);

    let machine = &config["machine"];
    assert_eq!(machine["type"], "controlplane");
    assert_eq!(
        machine["kubelet"]["nodeIP"]["validSubnets"],
        json!(["10.0.128.16/28", "10.0.128.64/27", "10.0.128.32/27"])
    );
    let plan_cidrs: Vec<String> = reference_plan()
        .node_cidrs()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        machine["kubelet"]["nodeIP"]["validSubnets"],
        json!(plan_cidrs)
    );
    assert_eq!(
        machine["kubelet"]["extraArgs"],
        json!({"cloud-provider": "external", "rotate-server-certificates": "true"})
    );
    assert_eq!(
        machine["kubelet"]["image"],
        "ghcr.io/siderolabs/kubelet:v1.35.2"
    );
    assert_eq!(machine["network"], json!({}));
    assert_eq!(
        machine["install"],
        json!({
            "disk": "/dev/sda",
            "image": format!("factory.talos.dev/hcloud-installer/{SCHEMATIC}:v1.12.6"),
            "wipe": false,
            "grubUseUKICmdline": true,
        })
    );
    assert_eq!(
        machine["features"],
        json!({
            "diskQuotaSupport": true,
            "kubePrism": {"enabled": true, "port": 7445},
            "hostDNS": {"enabled": true, "forwardKubeDNSToHost": true, "resolveMemberNames": true},
        })
    );
    assert_eq!(
        machine["nodeLabels"],
        json!({"node.kubernetes.io/exclude-from-external-load-balancers": ""})
    );

    let cluster = &config["cluster"];
    assert_eq!(
        cluster["controlPlane"]["endpoint"],
        "https://10.0.128.17:6443"
    );
    assert_eq!(
        cluster["network"],
        json!({
            "cni": {"name": "none"},
            "dnsDomain": "cluster.local",
            "podSubnets": ["10.0.224.0/19"],
            "serviceSubnets": ["10.0.192.0/21"],
        })
    );
    assert_eq!(
        cluster["etcd"]["advertisedSubnets"],
        json!(["10.0.128.16/28"])
    );
    assert_eq!(
        cluster["controllerManager"]["extraArgs"],
        json!({"bind-address": "0.0.0.0", "cloud-provider": "external", "node-cidr-mask-size-ipv4": "24"})
    );
    assert_eq!(cluster["apiServer"]["certSANs"], json!(["10.0.128.17"]));
    assert!(
        cluster["apiServer"]
            .get("disablePodSecurityPolicy")
            .is_none()
    );
    assert_eq!(cluster["proxy"]["disabled"], true);
    assert_eq!(
        cluster["apiServer"]["image"],
        "registry.k8s.io/kube-apiserver:v1.35.2"
    );

    assert_eq!(
        document(&docs, "HostnameConfig"),
        &json!({"apiVersion": "v1alpha1", "kind": "HostnameConfig", "hostname": "demo-cp-1"})
    );
    assert_eq!(
        document(&docs, "LinkConfig"),
        &json!({
            "apiVersion": "v1alpha1", "kind": "LinkConfig", "name": "eth0", "mtu": 1450,
            "routes": [{"destination": "10.0.0.1/32"}, {"gateway": "10.0.0.1"}],
        })
    );
    assert_eq!(
        document(&docs, "DHCPv4Config"),
        &json!({"apiVersion": "v1alpha1", "kind": "DHCPv4Config", "name": "eth0"})
    );
}

#[test]
fn v1_11_control_plane_uses_the_inline_network_fields() {
    let docs = documents(&input("v1.11.3", Role::ControlPlane));
    assert_eq!(kinds(&docs), ["v1alpha1"]);
    let machine = &docs[0]["machine"];
    assert_eq!(
        machine["network"],
        json!({
            "hostname": "demo-cp-1",
            "interfaces": [{
                "interface": "eth0",
                "mtu": 1450,
                "routes": [
                    {"network": "10.0.0.1/32"},
                    {"network": "0.0.0.0/0", "gateway": "10.0.0.1"},
                ],
                "dhcp": true,
            }],
        })
    );
    assert_eq!(machine["features"]["rbac"], true);
    assert_eq!(machine["features"]["stableHostname"], true);
    assert_eq!(machine["features"]["apidCheckExtKeyUsage"], true);
    assert!(machine["install"].get("grubUseUKICmdline").is_none());
    assert_eq!(
        machine["kubelet"]["image"],
        "ghcr.io/siderolabs/kubelet:v1.34.1"
    );
    assert_eq!(
        machine["install"]["image"],
        format!("factory.talos.dev/hcloud-installer/{SCHEMATIC}:v1.11.3")
    );
    let cluster = &docs[0]["cluster"];
    assert_eq!(cluster["apiServer"]["disablePodSecurityPolicy"], true);
    assert_eq!(
        cluster["etcd"]["advertisedSubnets"],
        json!(["10.0.128.16/28"])
    );
    assert_eq!(
        machine["kubelet"]["nodeIP"]["validSubnets"],
        json!(["10.0.128.16/28", "10.0.128.64/27", "10.0.128.32/27"])
    );
}

#[test]
fn a_workers_config_is_the_same_from_the_worker_share_and_a_control_plane_needs_more() {
    let secrets = testing::fixture_secrets();
    let share = secrets.join_secrets();
    let worker = input("v1.13.2", Role::Worker);
    let from_all = generate(&worker, &reference_plan(), secrets).unwrap();
    let from_share = generate(&worker, &reference_plan(), &share).unwrap();
    assert_eq!(from_all.as_str(), from_share.as_str());
    let control_plane = input("v1.13.2", Role::ControlPlane);
    assert_eq!(
        generate(&control_plane, &reference_plan(), &share).unwrap_err(),
        ConfigError::NoClusterSecrets
    );
}

#[test]
fn workers_get_pool_labels_and_taints_and_no_cluster_keys() {
    let mut worker = input("v1.12.6", Role::Worker);
    worker.hostname = "demo-platform-2".into();
    worker.node_labels = BTreeMap::from([("node.kubernetes.io/pool".into(), "platform".into())]);
    worker.node_taints = BTreeMap::from([("dedicated".into(), "platform:NoSchedule".into())]);
    let docs = documents(&worker);
    let machine = &docs[0]["machine"];
    assert_eq!(machine["type"], "worker");
    assert_eq!(
        machine["nodeLabels"],
        json!({"node.kubernetes.io/pool": "platform"})
    );
    assert_eq!(
        machine["nodeTaints"],
        json!({"dedicated": "platform:NoSchedule"})
    );
    assert_eq!(machine["ca"]["key"], "");
    assert_eq!(
        document(&docs, "HostnameConfig")["hostname"],
        "demo-platform-2"
    );

    let cluster = docs[0]["cluster"].as_object().unwrap();
    let keys: Vec<&str> = cluster.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "secret",
            "controlPlane",
            "clusterName",
            "network",
            "token",
            "ca",
            "discovery"
        ]
    );
    assert_eq!(cluster["ca"]["key"], "");
    assert_eq!(
        cluster["network"]["serviceSubnets"],
        json!(["10.0.192.0/21"])
    );
}

#[test]
fn secrets_land_where_talos_expects_them() {
    let secrets = testing::fixture_secrets();
    let docs = documents(&input("v1.12.6", Role::ControlPlane));
    let (machine, cluster) = (&docs[0]["machine"], &docs[0]["cluster"]);
    assert_eq!(machine["token"], secrets.trustd_token.as_str());
    assert_eq!(
        decoded(&machine["ca"]["crt"]),
        secrets.os_ca().certificate_pem()
    );
    assert_eq!(
        decoded(&machine["ca"]["key"]),
        secrets.os_ca().key().as_pem()
    );
    assert_eq!(cluster["id"], secrets.cluster_id.as_str());
    assert_eq!(cluster["secret"], secrets.cluster_secret.as_str());
    assert_eq!(cluster["token"], secrets.bootstrap_token.as_str());
    let crate::talos::secrets::EncryptionSecret::Secretbox(key) = &secrets.encryption else {
        panic!("fixture uses secretbox");
    };
    assert_eq!(cluster["secretboxEncryptionSecret"], key.as_str());
    assert_eq!(
        decoded(&cluster["ca"]["crt"]),
        secrets.kubernetes_ca().certificate_pem()
    );
    assert_eq!(
        decoded(&cluster["aggregatorCA"]["key"]),
        secrets.aggregator_ca().key().as_pem()
    );
    assert_eq!(
        decoded(&cluster["serviceAccount"]["key"]),
        secrets.service_account_key.as_pem()
    );
    assert_eq!(
        decoded(&cluster["etcd"]["ca"]["crt"]),
        secrets.etcd_ca().certificate_pem()
    );
}

#[test]
fn interface_disk_and_kubernetes_version_can_be_chosen() {
    let mut custom = input("v1.12.6", Role::ControlPlane);
    custom.interface = Some("ens10".into());
    custom.install_disk = Some("/dev/nvme0n1".into());
    custom.kubernetes_version = Some("1.34.3".parse().unwrap());
    let docs = documents(&custom);
    assert_eq!(document(&docs, "LinkConfig")["name"], "ens10");
    assert_eq!(document(&docs, "DHCPv4Config")["name"], "ens10");
    assert_eq!(docs[0]["machine"]["install"]["disk"], "/dev/nvme0n1");
    assert_eq!(
        docs[0]["cluster"]["scheduler"]["image"],
        "registry.k8s.io/kube-scheduler:v1.34.3"
    );

    custom.talos_version = "v1.11.3".parse().unwrap();
    let docs = documents(&custom);
    assert_eq!(
        docs[0]["machine"]["network"]["interfaces"][0]["interface"],
        "ens10"
    );
}

#[test]
fn bad_inputs_are_named() {
    type Change = fn(&mut NodeConfigInput);
    let cases: Vec<(Change, &str)> = vec![
        (
            |i| i.talos_version = "v1.10.7".parse().unwrap(),
            "unsupported Talos version \"v1.10.7\": hct generates configs for Talos v1.11 to v1.14",
        ),
        (
            |i| i.kubernetes_version = Some("v1.36.0".parse().unwrap()),
            "Kubernetes v1.36.0 is not supported by Talos v1.12.6",
        ),
        (|i| i.schematic_id = "abc".into(), "invalid schematic_id"),
        (
            |i| i.schematic_id = SCHEMATIC[1..].into(),
            "invalid schematic_id",
        ),
        (
            |i| i.schematic_id = SCHEMATIC.to_uppercase(),
            "invalid schematic_id",
        ),
        (|i| i.hostname = "Demo_1".into(), "invalid hostname"),
        (|i| i.cluster_name = "".into(), "invalid cluster_name"),
        (
            |i| i.install_disk = Some("sda".into()),
            "invalid install_disk",
        ),
        (
            |i| i.install_disk = Some("/dev/../etc".into()),
            "invalid install_disk",
        ),
        (
            |i| i.interface = Some("eth0; rm".into()),
            "invalid interface",
        ),
        (
            |i| {
                i.node_labels.insert("bad key".into(), "x".into());
            },
            "invalid node_labels",
        ),
        (
            |i| {
                i.node_taints.insert("k".into(), "v:Never".into());
            },
            "invalid node_taints",
        ),
    ];
    for (change, expected) in cases {
        let mut bad = input("v1.12.6", Role::ControlPlane);
        change(&mut bad);
        let error = generate(&bad, &reference_plan(), testing::fixture_secrets()).unwrap_err();
        assert!(
            error.to_string().starts_with(expected),
            "{error} should start with {expected}"
        );
    }
}

#[test]
fn adopted_aescbc_clusters_keep_their_encryption_key() {
    let mut secrets = testing::fixture_secrets().clone();
    secrets.encryption =
        crate::talos::secrets::EncryptionSecret::AesCbc(STANDARD.encode([3u8; 32]));
    let config = generate(
        &input("v1.12.6", Role::ControlPlane),
        &reference_plan(),
        &secrets,
    )
    .unwrap();
    let docs = yaml::parse_documents(config.as_str()).unwrap();
    assert_eq!(
        docs[0]["cluster"]["aescbcEncryptionSecret"],
        STANDARD.encode([3u8; 32])
    );
    assert!(
        docs[0]["cluster"]
            .get("secretboxEncryptionSecret")
            .is_none()
    );
}

#[test]
fn inputs_hide_their_patches_in_debug_output() {
    let mut with_patch = input("v1.12.6", Role::Worker);
    with_patch.config_patches = vec!["machine: {env: {TOKEN: hunter2}}".into()];
    let debug = format!("{with_patch:?}");
    assert!(
        debug.contains("<1 redacted>") && !debug.contains("hunter2"),
        "{debug}"
    );
}

#[test]
fn configs_show_no_secret_in_debug_output() {
    let config = generate(
        &input("v1.12.6", Role::ControlPlane),
        &reference_plan(),
        testing::fixture_secrets(),
    )
    .unwrap();
    let debug = format!("{config:?}");
    assert!(
        debug.starts_with("MachineConfig(<") && !debug.contains("token"),
        "{debug}"
    );
    assert!(!debug.contains(&testing::fixture_secrets().cluster_secret));
}

#[test]
fn patches_apply_in_order_and_a_bad_one_is_named_by_index() {
    let mut patched = input("v1.12.6", Role::ControlPlane);
    patched.config_patches = vec![
        "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n".into(),
        r#"[{"op": "replace", "path": "/machine/sysctls/vm.max_map_count", "value": "524288"}]"#
            .into(),
    ];
    let docs = documents(&patched);
    assert_eq!(docs[0]["machine"]["sysctls"]["vm.max_map_count"], "524288");

    patched
        .config_patches
        .push("- op: remove\n  path: /machine/nope\n".into());
    let error = generate(&patched, &reference_plan(), testing::fixture_secrets()).unwrap_err();
    assert!(
        matches!(error, ConfigError::Patch { index: 2, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "config_patches[2]: operation 0 (remove /machine/nope): path not found"
    );
}

/// A worker of pool `general` (10.0.128.64/27 in the reference plan) at
/// `ip`, whose pool patch narrows kubelet's validSubnets to `subnet`.
fn worker_narrowed_to(subnet: &str, ip: Option<&str>) -> Result<MachineConfig, ConfigError> {
    let mut input = input("v1.12.6", Role::Worker);
    input.hostname = "demo-general-1".into();
    input.ip = ip.map(|ip| ip.parse().unwrap());
    input.config_patches = vec![format!(
        r#"[{{"op": "replace", "path": "/machine/kubelet/nodeIP/validSubnets", "value": ["{subnet}"]}}]"#
    )];
    generate(&input, &reference_plan(), testing::fixture_secrets())
}

#[test]
fn a_pool_may_narrow_valid_subnets_to_its_own_range() {
    let config =
        worker_narrowed_to("10.0.128.64/27", Some("10.0.128.65")).unwrap_or_else(|e| panic!("{e}"));
    let docs = yaml::parse_documents(config.as_str()).unwrap();
    assert_eq!(
        docs[0]["machine"]["kubelet"]["nodeIP"]["validSubnets"],
        json!(["10.0.128.64/27"])
    );
}

#[test]
fn valid_subnets_without_the_nodes_own_ip_are_refused() {
    // Narrowed to the other pool's range: this node's own IP is left out.
    let err = worker_narrowed_to("10.0.128.32/27", Some("10.0.128.65")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("machine.kubelet.nodeIP.validSubnets"),
        "{text}"
    );
    assert!(text.contains("10.0.128.65"), "{text}");
    // Without the node's own IP, every worker address of the plan must pass.
    let err = worker_narrowed_to("10.0.128.64/27", None).unwrap_err();
    assert!(err.to_string().contains("10.0.128.33"), "{err}");
}
