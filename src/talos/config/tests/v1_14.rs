//! Talos v1.14 configs: hct's settings in the documents that replace the
//! deprecated v1alpha1 fields, the same settings as for v1.13.

use serde_json::json;

use super::{decoded, document, documents, input, kinds};
use crate::talos::config::multidoc_v1_14::conflict;
use crate::talos::config::{Role, generate};
use crate::talos::testing::{self, reference_plan};

#[test]
fn v1_14_control_plane_holds_the_plan_in_the_new_documents() {
    let v1_13 = documents(&input("v1.13.9", Role::ControlPlane));
    let docs = documents(&input("v1.14.0", Role::ControlPlane));
    assert_eq!(
        kinds(&docs),
        [
            "v1alpha1",
            "DiscoveryServiceConfig",
            "DiscoveryIdentityConfig",
            "ResolverConfig",
            "UnattendedInstallConfig",
            "KubeClusterConfig",
            "KubeNodeConfig",
            "KubeletConfig",
            "KubeNetworkConfig",
            "KubeAPIServerCAConfig",
            "KubePrismConfig",
            "KubeAggregatorCAConfig",
            "KubeAdmissionControlConfig",
            "KubeAuditPolicyConfig",
            "KubeAuthenticationConfig",
            "KubeAuthorizerConfig",
            "KubeAuthorizerConfig",
            "KubeEtcdEncryptionConfig",
            "KubeServiceAccountConfig",
            "KubeAPIServerConfig",
            "KubeControllerManagerConfig",
            "KubeSchedulerConfig",
            "KubeProxyConfig",
            "KubeCoreDNSConfig",
            "HostnameConfig",
            "LinkConfig",
            "DHCPv4Config",
        ]
    );
    let main = &docs[0];
    let old = &v1_13[0];
    // What v1.14 keeps in v1alpha1 is as before.
    for kept in [
        "/machine/token",
        "/machine/ca",
        "/machine/certSANs",
        "/cluster/token",
        "/cluster/etcd",
    ] {
        assert_eq!(main.pointer(kept), old.pointer(kept), "{kept}");
    }
    assert_eq!(
        main["machine"]["features"],
        json!({"diskQuotaSupport": true})
    );
    assert!(main["machine"].get("install").is_none());
    assert_eq!(
        document(&docs, "UnattendedInstallConfig"),
        &json!({
            "apiVersion": "v1alpha1",
            "kind": "UnattendedInstallConfig",
            "installer": {"image": old["machine"]["install"]["image"].as_str().unwrap().replace("v1.13.9", "v1.14.0")},
            "provisioning": {"diskSelector": {"match": "disk.dev_path == \"/dev/sda\""}, "wipe": false},
        })
    );
    assert!(main["machine"].get("kubelet").is_none());
    assert_eq!(
        main["cluster"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["etcd", "token"]
    );
    assert_eq!(
        document(&docs, "DiscoveryIdentityConfig")["clusterID"],
        old["cluster"]["id"]
    );
    let cluster = document(&docs, "KubeClusterConfig");
    assert_eq!(
        cluster["endpoint"],
        old["cluster"]["controlPlane"]["endpoint"]
    );
    assert_eq!(cluster["clusterName"], "demo");
    let node = document(&docs, "KubeNodeConfig");
    assert_eq!(node["nodeIP"], old["machine"]["kubelet"]["nodeIP"]);
    assert_eq!(
        node["taints"],
        json!({"node-role.kubernetes.io/control-plane": "NoSchedule"})
    );
    assert_eq!(
        node["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"],
        ""
    );
    let kubelet = document(&docs, "KubeletConfig");
    assert_eq!(kubelet["image"], "ghcr.io/siderolabs/kubelet:v1.37.2");
    assert_eq!(kubelet["extraArgs"]["cloud-provider"], "external");
    let network = document(&docs, "KubeNetworkConfig");
    assert_eq!(
        network["podSubnets"],
        old["cluster"]["network"]["podSubnets"]
    );
    assert_eq!(network["nodeCIDRMaskSizeIPv4"], 24);
    assert!(network.get("cni").is_none());
    let manager = document(&docs, "KubeControllerManagerConfig");
    assert!(
        manager["extraArgs"]
            .get("node-cidr-mask-size-ipv4")
            .is_none()
    );
    assert_eq!(manager["extraArgs"]["cloud-provider"], "external");
    // PEM text where v1alpha1 held base64.
    assert_eq!(
        document(&docs, "KubeAPIServerCAConfig")["issuingCA"]["cert"],
        decoded(&old["cluster"]["ca"]["crt"])
    );
    assert_eq!(
        document(&docs, "KubeServiceAccountConfig")["issuer"]["privateKey"],
        decoded(&old["cluster"]["serviceAccount"]["key"])
    );
    assert_eq!(
        document(&docs, "KubeEtcdEncryptionConfig")["config"]["resources"][0]["providers"][0]["secretbox"]
            ["keys"][0],
        json!({"name": "key2", "secret": old["cluster"]["secretboxEncryptionSecret"]})
    );
    assert_eq!(document(&docs, "KubeProxyConfig")["enabled"], json!(false));
    assert_eq!(conflict(&docs), None);
}

#[test]
fn v1_14_worker_has_no_key_and_accepts_the_kubernetes_ca() {
    let docs = documents(&input("v1.14.0", Role::Worker));
    let ca = document(&docs, "KubeAPIServerCAConfig");
    assert!(ca.get("issuingCA").is_none());
    assert_eq!(ca["acceptedCAs"].as_array().unwrap().len(), 1);
    for kind in [
        "KubeAggregatorCAConfig",
        "KubeServiceAccountConfig",
        "KubeAPIServerConfig",
    ] {
        assert!(!kinds(&docs).contains(&kind), "{kind}");
    }
    assert!(document(&docs, "KubeNodeConfig").get("taints").is_none());
    assert_eq!(
        docs[0]["cluster"],
        json!({"token": docs[0]["cluster"]["token"]})
    );
}

#[test]
fn bootstrap_manifests_are_documents_from_v1_14() {
    let manifests = vec![("cilium".to_string(), "kind: Namespace\n".to_string())];
    let mut node = input("v1.14.0", Role::ControlPlane);
    node.inline_manifests = manifests.clone();
    let docs = documents(&node);
    let manifest = document(&docs, "KubeInlineManifestConfig");
    assert_eq!(manifest["name"], "cilium");
    assert_eq!(manifest["manifest"], "kind: Namespace\n");
    assert!(docs[0]["cluster"].get("inlineManifests").is_none());
    let mut old = input("v1.13.9", Role::ControlPlane);
    old.inline_manifests = manifests;
    let docs = documents(&old);
    assert_eq!(
        docs[0]["cluster"]["inlineManifests"],
        json!([{"name": "cilium", "contents": "kind: Namespace\n"}])
    );
    assert!(!kinds(&docs).contains(&"KubeInlineManifestConfig"));
    // Workers carry none, in either form.
    let mut worker = input("v1.14.0", Role::Worker);
    worker.inline_manifests = vec![("cilium".into(), "kind: Namespace\n".into())];
    assert!(!kinds(&documents(&worker)).contains(&"KubeInlineManifestConfig"));
}

/// Talos v1.14 names inline manifests with DNS-1123 subdomains; v1.13 took
/// any name. Refused when the config is made (at plan), naming the fix.
#[test]
fn v1_14_manifest_names_must_be_dns_subdomains() {
    let mut node = input("v1.14.0", Role::ControlPlane);
    node.inline_manifests = vec![("Cilium_CNI".into(), "kind: Namespace\n".into())];
    let error = generate(&node, &reference_plan(), testing::fixture_secrets())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("bootstrap_manifests")
            && error.contains("\"Cilium_CNI\"")
            && error.contains("DNS-1123"),
        "{error}"
    );
    node.talos_version = "v1.13.9".parse().unwrap();
    assert!(generate(&node, &reference_plan(), testing::fixture_secrets()).is_ok());
}

/// Every node names the plan's per-node mask in KubeNetworkConfig (Talos
/// checks the pod subnet against it on workers too).
#[test]
fn every_node_names_the_plans_pod_mask() {
    let mut input_26 = testing::reference_input();
    input_26.pod_cidr_mask_size = Some(26);
    let plan = testing::plan_of(&input_26);
    for role in [Role::ControlPlane, Role::Worker] {
        let config = generate(&input("v1.14.0", role), &plan, testing::fixture_secrets()).unwrap();
        let docs = crate::talos::yaml::parse_documents(config.as_str()).unwrap();
        assert_eq!(
            document(&docs, "KubeNetworkConfig")["nodeCIDRMaskSizeIPv4"],
            26,
            "{role:?}"
        );
    }
}

/// A user patch in the old form beside hct's new documents is what Talos
/// v1.14 refuses; hct refuses it first, naming both and the fix.
#[test]
fn a_patch_in_the_replaced_form_is_refused_with_the_fix() {
    for (patch, kind, field) in [
        (
            r#"{"machine": {"kubelet": {"nodeIP": {"validSubnets": ["10.0.0.0/8"]}}}}"#,
            "KubeNodeConfig",
            "machine.kubelet.nodeIP",
        ),
        (
            r#"{"cluster": {"network": {"podSubnets": ["10.244.0.0/16"]}}}"#,
            "KubeNetworkConfig",
            "cluster.network",
        ),
        (
            r#"{"cluster": {"controlPlane": {"endpoint": "https://10.0.1.2:6443"}}}"#,
            "KubeClusterConfig",
            "cluster.controlPlane.endpoint",
        ),
        (
            r#"{"machine": {"network": {"nameservers": ["10.0.0.53"]}}}"#,
            "ResolverConfig",
            "machine.network.nameservers",
        ),
        (
            r#"{"machine": {"network": {"searchDomains": ["example.internal"]}}}"#,
            "ResolverConfig",
            "machine.network.searchDomains",
        ),
        (
            r#"{"cluster": {"allowSchedulingOnControlPlanes": true}}"#,
            "KubeNodeConfig",
            "cluster.allowSchedulingOnControlPlanes",
        ),
    ] {
        let mut node = input("v1.14.0", Role::ControlPlane);
        node.config_patches = vec![patch.into()];
        let error = generate(&node, &reference_plan(), testing::fixture_secrets())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&format!("{kind} document and {field}"))
                && error.contains(&format!("drop {field}")),
            "{error}"
        );
    }
}

/// Wrong settings written in the new documents are caught as the old ones
/// were.
#[test]
fn wrong_settings_in_the_new_documents_are_caught() {
    for (patch, setting) in [
        (
            "apiVersion: v1alpha1\nkind: KubeNodeConfig\nnodeIP:\n  validSubnets: [\"!10.0.0.0/8\"]\n",
            "KubeNodeConfig.nodeIP.validSubnets",
        ),
        (
            "apiVersion: v1alpha1\nkind: KubeClusterConfig\nendpoint: https://10.0.1.2:6443\n",
            "KubeClusterConfig.endpoint",
        ),
        (
            "apiVersion: v1alpha1\nkind: KubeNetworkConfig\npodSubnets: [10.0.0.0/16]\n",
            "KubeNetworkConfig.podSubnets/KubeNetworkConfig.serviceSubnets",
        ),
    ] {
        let mut node = input("v1.14.0", Role::ControlPlane);
        node.config_patches = vec![patch.into()];
        let error = generate(&node, &reference_plan(), testing::fixture_secrets())
            .unwrap_err()
            .to_string();
        assert!(error.contains(setting), "{setting}: {error}");
    }
}
