use super::*;
use crate::talos::config::{MachineConfig, parse};
use crate::talos::sample::{SampleCluster, SampleNode};

/// A sample node's config with `cluster` merged into its `cluster` section.
fn config(control_plane: bool, cluster: Value) -> MachineConfig {
    let sample = SampleCluster::generate("c", "https://10.0.128.17:6443").unwrap();
    let text = sample.machine_config(&SampleNode::new(control_plane, "v1.12.6", "10.0.0.1"));
    let mut documents: Vec<&str> = text.split("---\n").collect();
    let mut v1alpha1: Value = serde_yaml_ng::from_str(documents[0]).unwrap();
    for (key, value) in cluster.as_object().unwrap() {
        v1alpha1["cluster"][key] = value.clone();
    }
    let first = serde_yaml_ng::to_string(&v1alpha1).unwrap();
    documents[0] = &first;
    parse(&documents.join("---\n"), None).unwrap()
}

fn ids(manifests: &[Manifest]) -> Vec<&str> {
    manifests.iter().map(|m| m.id.as_str()).collect()
}

fn object<'a>(manifests: &'a [Manifest], id: &str, kind: &str) -> &'a Value {
    manifests
        .iter()
        .find(|m| m.id == id)
        .and_then(|m| m.objects.iter().find(|o| o["kind"] == kind))
        .unwrap_or_else(|| panic!("{id} {kind} in {:?}", ids(manifests)))
}

#[test]
fn a_control_plane_renders_talos_own_manifests_and_its_inline_ones() {
    let v1_12: TalosVersion = "v1.12.6".parse().unwrap();
    let config = config(
        true,
        json!({
            "proxy": {"image": "registry.k8s.io/kube-proxy:v1.35.2"},
            "inlineManifests": [{
                "name": "cni",
                "contents": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cni\n",
            }],
        }),
    );
    let mut problems = Vec::new();
    let rendered = render(&config, &v1_12, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        ids(&rendered),
        [
            "00-kubelet-bootstrapping-token",
            "01-csr-approver-role-binding",
            "01-csr-node-bootstrap",
            "01-csr-renewal-role-binding",
            "10-kube-proxy",
            "11-core-dns",
            "11-core-dns-svc",
            "11-kube-config-in-cluster",
            "99-cni",
        ]
    );
    let proxy = object(&rendered, "10-kube-proxy", "DaemonSet");
    assert_eq!(
        proxy["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.k8s.io/kube-proxy:v1.35.2"
    );
    let dns = object(&rendered, "11-core-dns", "Deployment");
    assert_eq!(
        dns["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.k8s.io/coredns/coredns:v1.13.2",
        "Talos v1.12's default CoreDNS"
    );
    let token = object(&rendered, "00-kubelet-bootstrapping-token", "Secret");
    let (id, secret) = config.bootstrap_token.expose().split_once('.').unwrap();
    assert_eq!(token["metadata"]["name"], format!("bootstrap-token-{id}"));
    assert_eq!(token["stringData"]["token-secret"], secret);
}

#[test]
fn disabled_components_are_not_rendered_and_workers_render_nothing() {
    let v1_13: TalosVersion = "v1.13.9".parse().unwrap();
    let config = config(
        true,
        json!({"proxy": {"disabled": true}, "coreDNS": {"disabled": true}}),
    );
    let rendered = render(&config, &v1_13, &mut Vec::new());
    let names = ids(&rendered);
    assert!(
        !names
            .iter()
            .any(|id| id.contains("proxy") || id.contains("core-dns")),
        "{names:?}"
    );
    let worker = self::config(false, json!({}));
    assert!(render(&worker, &v1_13, &mut Vec::new()).is_empty());
}

#[test]
fn v1_14_renders_the_manifests_of_its_documents() {
    let v1_14: TalosVersion = "v1.14.0".parse().unwrap();
    let sample = SampleCluster::generate("c", "https://10.0.128.17:6443").unwrap();
    let text = sample.machine_config(&SampleNode::new(true, "v1.14.0", "10.0.0.1"))
        + "---\napiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: cni\n\
           manifest: \"apiVersion: v1\\nkind: Namespace\\nmetadata:\\n  name: cni\\n\"\n\
           ---\napiVersion: v1alpha1\nkind: KubeInlineManifestConfig\nname: ccm\n\
           manifest: \"apiVersion: v1\\nkind: Namespace\\nmetadata:\\n  name: ccm\\n\"\n\
           ---\napiVersion: v1alpha1\nkind: KubeNetworkConfig\n\
           podSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\n\
           ---\napiVersion: v1alpha1\nkind: KubeCoreDNSConfig\nenabled: false\n";
    let config = parse(&text, Some(&v1_14)).unwrap();
    let mut problems = Vec::new();
    let rendered = render(&config, &v1_14, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let names = ids(&rendered);
    assert!(names.ends_with(&["99-ccm", "99-cni"]), "{names:?}");
    assert!(!names.iter().any(|id| id.contains("core-dns")), "{names:?}");
    let namespace = object(&rendered, "99-cni", "Namespace");
    assert_eq!(namespace["metadata"]["name"], "cni");
    let proxy = object(&rendered, "10-kube-proxy", "DaemonSet");
    assert_eq!(
        proxy["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.k8s.io/kube-proxy:v1.37.0",
        "Talos v1.14's default Kubernetes"
    );
    let command = proxy["spec"]["template"]["spec"]["containers"][0]["command"][1].clone();
    assert_eq!(
        command, "--cluster-cidr=10.244.0.0/16",
        "KubeNetworkConfig's pods"
    );
}
