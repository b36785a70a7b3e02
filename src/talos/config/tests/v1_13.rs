//! Talos v1.13 configs, against the v1.12 ones they differ from.

use serde_json::json;

use super::{SCHEMATIC, document, documents, input, kinds};
use crate::talos::config::{Role, generate};
use crate::talos::testing::{self, reference_plan};

/// Talos' generator makes the same v1.13 config as for v1.12 but for
/// `machine.network`, which v1.13 no longer has; hct's private-network
/// settings stay, in the v1.12 documents.
#[test]
fn v1_13_is_v1_12_without_machine_network() {
    for role in [Role::ControlPlane, Role::Worker] {
        let mut v1_12 = documents(&input("v1.12.6", role));
        let v1_13 = documents(&input("v1.13.9", role));
        assert_eq!(
            kinds(&v1_13),
            ["v1alpha1", "HostnameConfig", "LinkConfig", "DHCPv4Config"]
        );
        let machine = &v1_13[0]["machine"];
        assert!(machine.get("network").is_none(), "{role:?}");
        assert_eq!(
            machine["kubelet"]["image"],
            "ghcr.io/siderolabs/kubelet:v1.36.3"
        );
        assert_eq!(
            machine["install"]["image"],
            format!("factory.talos.dev/hcloud-installer/{SCHEMATIC}:v1.13.9")
        );
        assert_eq!(
            document(&v1_13, "LinkConfig")["routes"],
            json!([{"destination": "10.0.0.1/32"}, {"gateway": "10.0.0.1"}])
        );
        assert_eq!(document(&v1_13, "HostnameConfig")["hostname"], "demo-cp-1");
        v1_12[0]["machine"]
            .as_object_mut()
            .unwrap()
            .shift_remove("network");
        let expected = serde_json::to_string(&v1_12)
            .unwrap()
            .replace("v1.35.2", "v1.36.3")
            .replace("v1.12.6", "v1.13.9");
        assert_eq!(serde_json::to_string(&v1_13).unwrap(), expected, "{role:?}");
    }
}

#[test]
fn v1_13_checks_kubernetes_and_takes_its_new_documents_as_patches() {
    let mut node = input("v1.13.9", Role::ControlPlane);
    node.kubernetes_version = Some("v1.35.2".parse().unwrap());
    assert_eq!(
        documents(&node)[0]["cluster"]["apiServer"]["image"],
        "registry.k8s.io/kube-apiserver:v1.35.2"
    );
    node.kubernetes_version = Some("v1.30.0".parse().unwrap());
    let error = generate(&node, &reference_plan(), testing::fixture_secrets()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Kubernetes v1.30.0 is not supported by Talos v1.13.9, which runs v1.31 to v1.36"
    );

    node.kubernetes_version = None;
    let kubespan = "apiVersion: v1alpha1\nkind: KubeSpanConfig\nenabled: true\n";
    node.config_patches = vec![kubespan.into()];
    assert_eq!(
        document(&documents(&node), "KubeSpanConfig")["enabled"],
        true
    );
    node.talos_version = "v1.12.6".parse().unwrap();
    let error = generate(&node, &reference_plan(), testing::fixture_secrets()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("Talos v1.12 has no document kind \"KubeSpanConfig\""),
        "{error}"
    );
}
