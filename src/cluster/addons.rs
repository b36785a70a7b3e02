//! hct's own add-ons, rendered from the plan (one home for their names,
//! image and settings):
//!
//! - the kubelet-serving CSR approver: postfinance's `kubelet-csr-approver`
//!   (pinned by digest) in `kube-system`, allowed only the names and IPs
//!   the plan gives the cluster's nodes, and told to leave what it does not
//!   approve pending instead of denying it. It runs on the host network
//!   and reaches the API server through KubePrism on localhost, so it
//!   approves before a CNI runs. A Talos inline manifest at bootstrap (it
//!   holds no secret), server-side applied afterwards.
//! - the `hcloud` Secret in `kube-system` (`token`, `network`) that the
//!   Hetzner CCM and CSI driver read; through the Kubernetes API only,
//!   never in a machine config.
//!
//! Why this approver and not Talos' CCM with only its CSR controller: Talos
//! CCM checks a request's IPs against the Node its first DNS name names,
//! but not that the requester is that node, and it denies what fails
//! instead of leaving it pending. kubelet-csr-approver checks that the
//! subject is the requester (`system:node:<name>`), that its one DNS name
//! starts with the requester's name and matches `PROVIDER_REGEX`, and that
//! its IPs are in `PROVIDER_IP_PREFIXES`; hct sets both to the exact node
//! names and /32s of the plan. Its name check is "starts with", not "is":
//! where one planned name begins another (`x-general-1` and `x-general-10`,
//! or `x-general-2` and pool `general-2`'s `x-general-2-1`), the shorter
//! one's kubelet could ask for the longer name. So the longer names
//! (`shadowed_names`) are left out of `PROVIDER_REGEX`: no request for them
//! is approved, their own nodes' included, and they wait for a person (the
//! plan warns). What is not checked: which of the cluster's IPs belongs to
//! which node (a node's kubelet could ask for another planned node's IP);
//! docs/guides/add-ons.md.

use serde_json::{Value, json};

use crate::network_plan::{CONTROL_PLANE_GROUP, NetworkPlan};
use crate::talos::config::KUBE_PRISM_PORT;

/// The name of the approver's objects and of its inline manifest.
pub const APPROVER: &str = "kubelet-csr-approver";
/// The name Talos keeps the approver's inline manifest under (not a name
/// users may give a bootstrap manifest).
pub const APPROVER_MANIFEST: &str = "hct-kubelet-csr-approver";
/// postfinance/kubelet-csr-approver v1.2.14, pinned by digest.
pub const APPROVER_IMAGE: &str = "ghcr.io/postfinance/kubelet-csr-approver:v1.2.14@sha256:c0f6aa1abdc225a32f9a29992fd97f711e78e2df21434f9ce7bc60981f96a5f8";
const NAMESPACE: &str = "kube-system";

/// The Secret the Hetzner CCM and CSI driver read.
pub const HCLOUD_SECRET: &str = "hcloud";

/// Every node name the plan gives the cluster, control plane first.
fn node_names(cluster: &str, plan: &NetworkPlan) -> Vec<(String, std::net::Ipv4Addr)> {
    std::iter::once((CONTROL_PLANE_GROUP, plan.control_plane()))
        .chain(plan.worker_pools().iter().map(|(n, g)| (n.as_str(), g)))
        .flat_map(|(group, nodes)| {
            super::slots::of(cluster, group, nodes)
                .into_iter()
                .map(|slot| (slot.name, slot.ip))
        })
        .collect()
}

/// The planned node names another planned name is the beginning of: the
/// approver cannot tell their own kubelet's request from the shorter
/// name's, so it approves neither (see the module header).
pub fn shadowed_names(cluster: &str, plan: &NetworkPlan) -> Vec<String> {
    let names: Vec<String> = node_names(cluster, plan)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names
        .iter()
        .filter(|long| shadowed(long, &names))
        .cloned()
        .collect()
}

/// Whether another of `names` is the beginning of `name`.
fn shadowed(name: &str, names: &[String]) -> bool {
    names
        .iter()
        .any(|short| short.len() < name.len() && name.starts_with(short.as_str()))
}

/// `^(?:a|b|…)$` over the node names the approver may approve: every
/// planned one but the shadowed (they are `[a-z0-9-]`, nothing to escape),
/// as Go's regexp and the approver read it.
fn names_regex(names: &[String]) -> String {
    let allowed: Vec<&str> = names
        .iter()
        .filter(|n| !shadowed(n, names))
        .map(String::as_str)
        .collect();
    format!("^(?:{})$", allowed.join("|"))
}

/// The approver's objects: ServiceAccount, ClusterRole, ClusterRoleBinding,
/// Deployment.
pub fn approver_objects(cluster: &str, plan: &NetworkPlan) -> Vec<Value> {
    let nodes = node_names(cluster, plan);
    let names: Vec<String> = nodes.iter().map(|(n, _)| n.clone()).collect();
    let prefixes: Vec<String> = nodes.iter().map(|(_, ip)| format!("{ip}/32")).collect();
    let labels = json!({"app.kubernetes.io/name": APPROVER});
    let env = |name: &str, value: String| json!({"name": name, "value": value});
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": APPROVER, "namespace": NAMESPACE},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": APPROVER},
            "rules": [
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"], "verbs": ["update"]},
                {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["kubernetes.io/kubelet-serving"], "verbs": ["approve"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": APPROVER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": APPROVER},
            "subjects": [{"kind": "ServiceAccount", "name": APPROVER, "namespace": NAMESPACE}],
        }),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": APPROVER, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": APPROVER,
                        "hostNetwork": true,
                        "priorityClassName": "system-cluster-critical",
                        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                        "tolerations": [
                            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists", "effect": "NoSchedule"},
                        ],
                        "containers": [{
                            "name": APPROVER,
                            "image": APPROVER_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            // No metrics or health listeners on the host.
                            "args": ["-metrics-bind-address=0", "-health-probe-bind-address=0"],
                            "env": [
                                env("PROVIDER_REGEX", names_regex(&names)),
                                env("PROVIDER_IP_PREFIXES", prefixes.join(",")),
                                env("ALLOWED_DNS_NAMES", "1".into()),
                                // Hetzner's private network has no DNS for
                                // the servers; the names are checked above.
                                env("BYPASS_DNS_RESOLUTION", "true".into()),
                                env("SKIP_DENY_STEP", "true".into()),
                                env("IGNORE_NON_SYSTEM_NODE", "true".into()),
                                // Before a CNI, no Service IP works: the
                                // API server through KubePrism.
                                env("KUBERNETES_SERVICE_HOST", "127.0.0.1".into()),
                                env("KUBERNETES_SERVICE_PORT", KUBE_PRISM_PORT.to_string()),
                            ],
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "32Mi"},
                                "limits": {"memory": "128Mi"},
                            },
                            "securityContext": {
                                "runAsNonRoot": true,
                                "runAsUser": 65532,
                                "runAsGroup": 65532,
                                "allowPrivilegeEscalation": false,
                                "readOnlyRootFilesystem": true,
                                "capabilities": {"drop": ["ALL"]},
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                        }],
                    },
                },
            },
        }),
    ]
}

/// The approver as a manifest (JSON documents are YAML documents).
pub fn approver_manifest(cluster: &str, plan: &NetworkPlan) -> String {
    approver_objects(cluster, plan)
        .iter()
        .map(|o| format!("---\n{o}\n"))
        .collect()
}

/// The `hcloud` Secret: `token` and `network` (the network id), in
/// `data` (base64) rather than the write-only `stringData`, so that
/// server-side apply owns the fields the Secret keeps.
pub fn hcloud_secret(token: &str, network_id: i64) -> Value {
    use base64::Engine;
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": HCLOUD_SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"token": encode(token), "network": encode(&network_id.to_string())},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talos::testing::reference_plan as small_plan;

    #[test]
    fn the_approver_allows_only_the_planned_nodes() {
        let plan = small_plan();
        let objects = approver_objects("demo", &plan);
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment"
            ]
        );
        let container = &objects[3]["spec"]["template"]["spec"]["containers"][0];
        assert!(container["image"].as_str().unwrap().contains("@sha256:"));
        let env = |name: &str| {
            container["env"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .and_then(|e| e["value"].as_str())
                .unwrap()
                .to_string()
        };
        let nodes = node_names("demo", &plan);
        let regex = env("PROVIDER_REGEX");
        assert!(regex.starts_with("^(?:demo-cp-1|"), "{regex}");
        assert_eq!(regex.matches('|').count() + 1, nodes.len());
        assert_eq!(nodes.len(), 9);
        assert!(regex.contains("|demo-general-3|"), "{regex}");
        assert_eq!(env("PROVIDER_IP_PREFIXES").split(',').count(), nodes.len());
        assert_eq!(env("SKIP_DENY_STEP"), "true");
        let manifest = approver_manifest("demo", &plan);
        let parsed = crate::cluster::kube_api::manifests::objects(&manifest).unwrap();
        assert_eq!(parsed, objects);
    }

    /// The reference layout with `general` grown to eleven nodes, a pool
    /// `general-2` beside it and a pool `cp-1`: every way one name begins
    /// another (within a pool, across pools, the control plane's).
    fn shadowing_plan() -> NetworkPlan {
        use crate::network_plan::NodeGroupInput;
        let mut input = crate::talos::testing::reference_input();
        let pools = input.worker_pools.as_mut().unwrap();
        pools.get_mut("general").unwrap().nodes = Some(11);
        let one = |cidr: &str| NodeGroupInput {
            cidr: Some(cidr.into()),
            nodes: Some(1),
        };
        pools.insert("general-2".into(), one("10.0.128.96/28"));
        pools.insert("cp-1".into(), one("10.0.128.112/28"));
        crate::talos::testing::plan_of(&input)
    }

    #[test]
    fn a_name_another_name_begins_is_left_to_a_person() {
        let plan = shadowing_plan();
        assert_eq!(
            shadowed_names("x", &plan),
            ["x-cp-1-1", "x-general-10", "x-general-11", "x-general-2-1"]
        );
        let objects = approver_objects("x", &plan);
        let env = &objects[3]["spec"]["template"]["spec"]["containers"][0]["env"];
        let regex = env
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "PROVIDER_REGEX")
            .unwrap()["value"]
            .as_str()
            .unwrap();
        let allowed: Vec<&str> = regex
            .strip_prefix("^(?:")
            .and_then(|r| r.strip_suffix(")$"))
            .unwrap()
            .split('|')
            .collect();
        // Every planned name but the shadowed, and no allowed name begins
        // another allowed one: the approver's "starts with" is "is" here.
        assert_eq!(allowed.len(), 3 + 1 + 3 + 11 + 1 - 4, "{regex}");
        for name in [
            "x-general-1",
            "x-general-2",
            "x-general-9",
            "x-cp-1",
            "x-platform-1",
        ] {
            assert!(allowed.contains(&name), "{name} in {regex}");
        }
        for long in &allowed {
            for short in &allowed {
                assert!(
                    long == short || !long.starts_with(short),
                    "{short} begins {long}"
                );
            }
        }
        // The reference layout has none.
        assert!(shadowed_names("x", &small_plan()).is_empty());
    }

    #[test]
    fn the_secret_carries_token_and_network() {
        let secret = hcloud_secret("t0k", 42);
        assert_eq!(secret["data"]["network"], "NDI=");
        assert_eq!(secret["data"]["token"], "dDBr");
    }
}
