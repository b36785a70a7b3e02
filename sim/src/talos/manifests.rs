//! The bootstrap manifests a control plane renders from its machine config,
//! as Talos' manifest controllers do: each a `Manifest` resource (id, the
//! objects) that the COSI state API lists (`cosi`) and that bootstrap
//! creates in the cluster where absent (`kube_api::store`).
//!
//! Rendered: `00-kubelet-bootstrapping-token` (the bootstrap token's
//! Secret), the three `01-csr-*` bindings, `10-kube-proxy` unless
//! `cluster.proxy.disabled`, `11-core-dns` and `11-core-dns-svc` unless
//! `cluster.coreDNS.disabled`, `11-kube-config-in-cluster`, and each
//! inline manifest as `99-<name>`. Images are the config's, else Talos'
//! defaults for the release the node runs (kube-proxy at its default
//! Kubernetes release). The objects carry what clients look at (names,
//! labels, images, selectors, the kube-dns address), not every field Talos
//! sets. Not rendered: flannel (`05-flannel`, for `cni: flannel`), the
//! Talos API access CRD (`13-…`) and the node RBAC template (`11-talos-…`).

use serde_json::{Value, json};

use super::config::MachineConfig;
use super::kube_api::version::KubernetesVersion;
use super::version::TalosVersion;

/// One rendered manifest: its id and its objects, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub id: String,
    pub objects: Vec<Value>,
}

const KUBE_SYSTEM: &str = "kube-system";
/// KubePrism, where host-network pods reach the API server on a node.
const KUBE_PRISM: &str = "https://127.0.0.1:7445";

/// Talos' default CoreDNS release per Talos line (`DefaultCoreDNSVersion`).
fn default_core_dns(talos: &TalosVersion) -> &'static str {
    if talos.at_least(1, 13) {
        "v1.14.6"
    } else if talos.at_least(1, 12) {
        "v1.13.2"
    } else {
        "v1.12.4"
    }
}

/// What a control plane running `talos` renders from `config`, sorted by
/// id; nothing on a worker. `problems` gets inline manifests that are no
/// YAML objects (Talos reports and skips them).
pub fn render(
    config: &MachineConfig,
    talos: &TalosVersion,
    problems: &mut Vec<String>,
) -> Vec<Manifest> {
    if !config.is_control_plane() {
        return Vec::new();
    }
    let mut out = vec![
        manifest(
            "00-kubelet-bootstrapping-token",
            vec![bootstrap_token(config)],
        ),
        manifest(
            "01-csr-node-bootstrap",
            vec![binding(
                "system-bootstrap-node-bootstrapper",
                "system:node-bootstrapper",
                "system:bootstrappers:nodes",
            )],
        ),
        manifest(
            "01-csr-approver-role-binding",
            vec![binding(
                "system-bootstrap-approve-node-client-csr",
                "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                "system:bootstrappers:nodes",
            )],
        ),
        manifest(
            "01-csr-renewal-role-binding",
            vec![binding(
                "system-bootstrap-node-renewal",
                "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
                "system:nodes",
            )],
        ),
        manifest("11-kube-config-in-cluster", vec![kubeconfig_in_cluster()]),
    ];
    if let Some(image) = &config.kube_proxy {
        let image = image.clone().unwrap_or_else(|| {
            let kubernetes = KubernetesVersion::talos_default(talos);
            format!("registry.k8s.io/kube-proxy:{}", kubernetes.git_version)
        });
        out.push(manifest("10-kube-proxy", kube_proxy(config, &image)));
    }
    if let Some(image) = &config.core_dns {
        let image = image.clone().unwrap_or_else(|| {
            format!(
                "registry.k8s.io/coredns/coredns:{}",
                default_core_dns(talos)
            )
        });
        out.push(manifest("11-core-dns", core_dns(&image)));
        out.push(manifest("11-core-dns-svc", vec![kube_dns(config)]));
    }
    for (name, text) in &config.inline_manifests {
        match crate::kube::manifests::objects(text.expose()) {
            Ok(objects) => out.push(manifest(&format!("99-{name}"), objects)),
            Err(e) => problems.push(format!("inline manifest {name}: {e}")),
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn manifest(id: &str, objects: Vec<Value>) -> Manifest {
    Manifest {
        id: id.to_string(),
        objects,
    }
}

fn bootstrap_token(config: &MachineConfig) -> Value {
    let token = config.bootstrap_token.expose();
    let (id, secret) = token.split_once('.').unwrap_or((token, ""));
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": KUBE_SYSTEM},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "token-id": id,
            "token-secret": secret,
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
            "auth-extra-groups": "system:bootstrappers:nodes",
        },
    })
}

/// A ClusterRoleBinding of `role` to a group.
fn binding(name: &str, role: &str, group: &str) -> Value {
    bind(
        name,
        role,
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}),
    )
}

fn bind(name: &str, role: &str, subject: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    })
}

/// kube-system's ServiceAccount `name`, as a binding's subject.
fn account(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": KUBE_SYSTEM})
}

fn kubeconfig_in_cluster() -> Value {
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {KUBE_PRISM}\n    \
         certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\nusers:\n- name: service-account\n  \
         user:\n    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\ncontexts:\n- name: local\n  \
         context:\n    cluster: local\n    user: service-account\ncurrent-context: local\n"
    );
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kubeconfig-in-cluster", "namespace": KUBE_SYSTEM},
        "data": {"kubeconfig": kubeconfig},
    })
}

fn service_account(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": KUBE_SYSTEM},
    })
}

fn kube_proxy(config: &MachineConfig, image: &str) -> Vec<Value> {
    let labels = json!({"tier": "node", "k8s-app": "kube-proxy"});
    let pods = config
        .subnets
        .pods
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    vec![
        service_account("kube-proxy"),
        bind("kube-proxy", "system:node-proxier", account("kube-proxy")),
        json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "kube-proxy", "namespace": KUBE_SYSTEM, "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [{
                            "name": "kube-proxy",
                            "image": image,
                            "command": [
                                "/usr/local/bin/kube-proxy",
                                format!("--cluster-cidr={pods}"),
                                "--hostname-override=$(NODE_NAME)",
                                "--kubeconfig=/etc/kubernetes/kubeconfig",
                            ],
                            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                            "securityContext": {"privileged": true},
                        }],
                        "hostNetwork": true,
                        "priorityClassName": "system-cluster-critical",
                        "serviceAccountName": "kube-proxy",
                        "tolerations": [
                            {"effect": "NoSchedule", "operator": "Exists"},
                            {"effect": "NoExecute", "operator": "Exists"},
                        ],
                    },
                },
            },
        }),
    ]
}

fn core_dns(image: &str) -> Vec<Value> {
    let labels = json!({"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"});
    let corefile = ".:53 {\n    errors\n    health {\n        lameduck 5s\n    }\n    ready\n    \
                    log . {\n        class error\n    }\n    prometheus :9153\n    \
                    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        pods insecure\n        \
                    fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n    }\n    \
                    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n    \
                    cache 30\n    loop\n    reload\n    loadbalance\n}\n";
    vec![
        service_account("coredns"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            ],
        }),
        bind("system:coredns", "system:coredns", account("coredns")),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "coredns", "namespace": KUBE_SYSTEM},
            "data": {"Corefile": corefile},
        }),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "coredns", "namespace": KUBE_SYSTEM, "labels": labels},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [{
                            "name": "coredns",
                            "image": image,
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "ports": [
                                {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                                {"containerPort": 9153, "name": "metrics", "protocol": "TCP"},
                            ],
                        }],
                        "priorityClassName": "system-cluster-critical",
                        "serviceAccountName": "coredns",
                        "tolerations": [
                            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"},
                        ],
                    },
                },
            },
        }),
    ]
}

/// The kube-dns Service at the service range's tenth address.
fn kube_dns(config: &MachineConfig) -> Value {
    let mut spec = json!({
        "selector": {"k8s-app": "kube-dns"},
        "ports": [
            {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
            {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
            {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
        ],
    });
    if let Some(std::net::IpAddr::V4(base)) = config.subnets.services.first().map(|n| n.network()) {
        let ip = std::net::Ipv4Addr::from(u32::from(base) + 10);
        spec["clusterIP"] = json!(ip.to_string());
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kube-dns",
            "namespace": KUBE_SYSTEM,
            "labels": {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
        },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests;
