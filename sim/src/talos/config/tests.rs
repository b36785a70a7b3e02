use base64::Engine;
use serde_yaml_ng::Value;

use super::*;
use crate::talos::sample::{SampleCluster, SampleNetwork, SampleNode};

fn cluster() -> SampleCluster {
    SampleCluster::generate("test", "https://10.0.128.10:6443").unwrap()
}

fn v(text: &str) -> TalosVersion {
    text.parse().unwrap()
}

/// Changes the first (v1alpha1) document of a config.
fn edit(config: &str, change: impl FnOnce(&mut Value)) -> String {
    let mut documents: Vec<String> = config.split("---\n").map(str::to_string).collect();
    let mut first: Value = serde_yaml_ng::from_str(&documents[0]).unwrap();
    change(&mut first);
    documents[0] = serde_yaml_ng::to_string(&first).unwrap();
    documents.join("---\n")
}

fn reason(config: &str, talos: &str) -> String {
    parse(config, Some(&v(talos))).unwrap_err().to_string()
}

#[test]
fn reads_a_v1_12_control_plane() {
    let cluster = cluster();
    let mut node = SampleNode::new(true, "v1.12.6", "10.0.0.1");
    node.hostname = Some("cp-1".into());
    let config = parse(&cluster.machine_config(&node), Some(&v("v1.12.6"))).unwrap();
    assert_eq!(config.machine_type, MachineType::ControlPlane);
    assert_eq!(config.installs, v("v1.12.6"));
    assert_eq!(config.hostname.as_deref(), Some("cp-1"));
    assert_eq!(config.cluster.id, cluster.id);
    assert_eq!(config.endpoint, "https://10.0.128.10:6443");
    assert!(config.os_ca.key.is_some() && config.kubernetes_ca.key.is_some());
    assert_eq!(config.routes.len(), 1);
    assert!(config.routes[0].is_default());
    assert_eq!(config.routes[0].gateway, Some("10.0.0.1".parse().unwrap()));
}

#[test]
fn reads_a_v1_11_worker_with_interface_routes() {
    let cluster = cluster();
    let node = SampleNode::new(false, "v1.11.3", "10.0.0.1");
    let config = parse(&cluster.machine_config(&node), Some(&v("v1.11.3"))).unwrap();
    assert_eq!(config.machine_type, MachineType::Worker);
    assert!(config.os_ca.key.is_none() && config.kubernetes_ca.key.is_none());
    assert_eq!(
        config.routes[0].destination,
        Some("0.0.0.0/0".parse().unwrap())
    );
    // v1.12 still takes the deprecated interfaces.
    assert!(parse(&cluster.machine_config(&node), Some(&v("v1.12.6"))).is_ok());
}

#[test]
fn keys_belong_on_control_planes_only() {
    let cluster = cluster();
    let control_plane = cluster.machine_config(&SampleNode::new(true, "v1.12.6", "10.0.0.1"));
    let leaked = edit(&control_plane, |d| d["machine"]["type"] = "worker".into());
    assert_eq!(
        reason(&leaked, "v1.12.6"),
        "machine.ca.key is not allowed on worker nodes: only control planes hold the CA keys"
    );
    let keyless = edit(&control_plane, |d| d["machine"]["ca"]["key"] = "".into());
    assert_eq!(reason(&keyless, "v1.12.6"), "machine.ca.key is required");
    let other = SampleCluster::generate("other", "https://10.0.128.10:6443").unwrap();
    let foreign_key = edit(&control_plane, |d| {
        d["cluster"]["ca"]["key"] = base64::engine::general_purpose::STANDARD
            .encode(other.kubernetes_ca.key.as_ref().unwrap().expose())
            .into();
    });
    assert_eq!(
        reason(&foreign_key, "v1.12.6"),
        "cluster.ca.key does not belong to the CA certificate"
    );
    let etcd_on_worker = edit(
        &cluster.machine_config(&SampleNode::new(false, "v1.12.6", "10.0.0.1")),
        |d| d["cluster"]["etcd"] = serde_yaml_ng::from_str("{advertisedSubnets: []}").unwrap(),
    );
    assert!(matches!(
        parse(&etcd_on_worker, None),
        Err(ConfigError::ControlPlaneOnly)
    ));
}

#[test]
fn required_fields_are_named() {
    let config = cluster().machine_config(&SampleNode::new(true, "v1.12.6", "10.0.0.1"));
    type Change = fn(&mut Value);
    let cases: [(&str, Change); 6] = [
        ("machine.token is required", |d| {
            d["machine"]["token"] = Value::Null;
        }),
        ("cluster.id is required", |d| d["cluster"]["id"] = "".into()),
        ("cluster.secret is required", |d| {
            d["cluster"]["secret"] = Value::Null;
        }),
        ("machine.install.image is required", |d| {
            d["machine"]["install"] = Value::Null;
        }),
        (
            "unknown machine type \"master\" (expected controlplane or worker)",
            |d| {
                d["machine"]["type"] = "master".into();
            },
        ),
        ("machine.ca.crt is not base64-encoded", |d| {
            d["machine"]["ca"]["crt"] = "not base64".into();
        }),
    ];
    for (expected, change) in cases {
        assert_eq!(reason(&edit(&config, change), "v1.12.6"), expected);
    }
    let no_tag = edit(&config, |d| {
        d["machine"]["install"]["image"] = "ghcr.io/siderolabs/installer".into();
    });
    assert!(reason(&no_tag, "v1.12.6").starts_with("machine.install.image: "));
    let http = edit(&config, |d| {
        d["cluster"]["controlPlane"]["endpoint"] = "http://10.0.0.2:6443".into();
    });
    assert!(reason(&http, "v1.12.6").contains("is not an https:// URL"));
}

#[test]
fn reads_a_v1_13_worker_with_its_new_documents() {
    let mut node = SampleNode::new(false, "v1.13.9", "10.0.0.1");
    node.hostname = Some("w-1".into());
    let config = cluster().machine_config(&node)
        + "---\napiVersion: v1alpha1\nkind: KubeSpanConfig\nenabled: false\n";
    let parsed = parse(&config, Some(&v("v1.13.9"))).unwrap();
    assert_eq!(parsed.installs, v("v1.13.9"));
    assert_eq!(parsed.hostname.as_deref(), Some("w-1"));
    assert!(parsed.routes[0].is_default());
    assert_eq!(
        reason(&config, "v1.12.6"),
        "error decoding document v1alpha1/KubeSpanConfig/ (line 31): \"KubeSpanConfig\" \"v1alpha1\": not registered"
    );
}

#[test]
fn documents_must_be_known_to_the_running_release() {
    let config = cluster().machine_config(&SampleNode::new(true, "v1.12.6", "10.0.0.1"));
    assert_eq!(
        reason(&config, "v1.11.3"),
        "\"LinkConfig\" \"v1alpha1\": not registered"
    );
    assert!(matches!(
        parse("machine: [", None),
        Err(ConfigError::Yaml { document: 1, .. })
    ));
    assert!(matches!(
        parse(
            "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n",
            None
        ),
        Err(ConfigError::MissingV1Alpha1)
    ));
    assert!(matches!(
        parse("- a\n- b\n", None),
        Err(ConfigError::NotAMapping { document: 1 })
    ));
}

#[test]
fn link_routes_follow_the_v1_12_rules() {
    let cluster = cluster();
    let mut node = SampleNode::new(true, "v1.12.6", "10.0.0.1");
    node.network = SampleNetwork::Isolated;
    let base = cluster.machine_config(&node);
    let with_link = |routes: &str| {
        format!("{base}---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nroutes: {routes}\n")
    };
    let spelled_out = with_link("[{destination: 0.0.0.0/0, gateway: 10.0.0.1}]");
    assert!(reason(&spelled_out, "v1.12.6").contains("must be a valid IP prefix"));
    let bad_gateway = with_link("[{gateway: 0.0.0.0}]");
    assert!(reason(&bad_gateway, "v1.12.6").contains("must be a valid IP address"));
    let network_route = with_link("[{destination: 10.0.0.0/16, gateway: 10.0.0.1}]");
    let parsed = parse(&network_route, None).unwrap();
    assert!(!parsed.routes[0].is_default());
    assert!(parse(&base, None).unwrap().routes.is_empty());
    let nameless = format!("{base}---\napiVersion: v1alpha1\nkind: LinkConfig\nroutes: []\n");
    assert_eq!(reason(&nameless, "v1.12.6"), "LinkConfig: name is required");
}

#[test]
fn hostnames_come_from_one_place() {
    let cluster = cluster();
    let mut node = SampleNode::new(true, "v1.12.6", "10.0.0.1");
    node.hostname = Some("cp-1".into());
    let both = edit(&cluster.machine_config(&node), |d| {
        d["machine"]["network"] = serde_yaml_ng::from_str("{hostname: other}").unwrap();
    });
    assert_eq!(
        reason(&both, "v1.12.6"),
        "HostnameConfig: static hostname is already set in v1alpha1 config"
    );
    node.hostname = None;
    let base = cluster.machine_config(&node);
    let auto_and_name = format!(
        "{base}---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\nhostname: x\n"
    );
    assert!(reason(&auto_and_name, "v1.12.6").contains("cannot be set at the same time"));
    let auto = format!("{base}---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n");
    assert_eq!(parse(&auto, None).unwrap().hostname, None);
    let invalid = edit(&base, |d| {
        d["machine"]["network"] = serde_yaml_ng::from_str("{hostname: -cp-}").unwrap();
    });
    assert!(reason(&invalid, "v1.12.6").contains("invalid hostname"));
}

#[test]
fn recognizes_machine_configs_in_user_data() {
    let config = cluster().machine_config(&SampleNode::new(false, "v1.12.6", "10.0.0.1"));
    assert!(is_machine_config(&config));
    assert!(!is_machine_config("#cloud-config\n"));
    assert!(!is_machine_config("#!/bin/sh\necho hi\n"));
    assert!(!is_machine_config("packages: [curl]\n"));
}

#[test]
fn reboots_are_needed_for_identity_changes_only() {
    let cluster = cluster();
    let node = SampleNode::new(true, "v1.12.6", "10.0.0.1");
    let config = parse(&cluster.machine_config(&node), None).unwrap();
    let mut isolated = node.clone();
    isolated.network = SampleNetwork::Isolated;
    let routes_changed = parse(&cluster.machine_config(&isolated), None).unwrap();
    assert_eq!(config.reboot_needed_for(&routes_changed), None);
    let other = SampleCluster::generate("other", "https://x:6443").unwrap();
    let elsewhere = parse(&other.machine_config(&node), None).unwrap();
    assert!(config.reboot_needed_for(&elsewhere).is_some());
}

#[test]
fn unknown_keys_are_refused_in_talos_words() {
    let config = cluster().machine_config(&SampleNode::new(true, "v1.12.6", "10.0.0.1"));
    let misspelled = edit(&config, |d| {
        d["machine"]["kubelet"] = serde_yaml_ng::from_str("extraArg: {v: '2'}").unwrap();
    });
    assert_eq!(
        reason(&misspelled, "v1.12.6"),
        "error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:\n\
         machine:\n    kubelet:\n        extraArg:\n            v: \"2\"\n"
    );
    assert!(reason(&misspelled, "v1.11.3").starts_with("unknown keys found during decoding:\n"));
    let link =
        format!("{config}---\napiVersion: v1alpha1\nkind: DHCPv4Config\nname: eth0\nmtux: 1\n");
    assert!(
        reason(&link, "v1.12.6").contains("v1alpha1/DHCPv4Config/eth0 (line "),
        "{}",
        reason(&link, "v1.12.6")
    );
}

mod v1_14;
