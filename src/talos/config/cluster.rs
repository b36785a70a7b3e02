//! The v1alpha1 document's `cluster` section: what Talos generates for the
//! contract, with the plan's ranges, no CNI and no kube-proxy (Cilium
//! replaces both), and an external cloud provider (the Hetzner CCM).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::images;
use super::input::Node;
use crate::network_plan::NetworkPlan;
use crate::talos::pki::CertificateAuthority;
use crate::talos::secrets::EncryptionSecret;
use crate::talos::{JoinSecrets, Secrets};

const DNS_DOMAIN: &str = "cluster.local";

/// `control_plane`: the whole bundle, for a control plane's config only.
pub(crate) fn section(
    node: &Node,
    plan: &NetworkPlan,
    secrets: &JoinSecrets,
    control_plane: Option<&Secrets>,
) -> Value {
    let mut cluster = Map::new();
    cluster.insert("id".into(), json!(secrets.cluster_id));
    cluster.insert("secret".into(), json!(secrets.cluster_secret));
    cluster.insert(
        "controlPlane".into(),
        json!({"endpoint": plan.cluster_endpoint()}),
    );
    cluster.insert("clusterName".into(), json!(node.cluster_name));
    cluster.insert("network".into(), network(plan));
    cluster.insert("token".into(), json!(secrets.bootstrap_token));
    match control_plane {
        Some(all) => control_plane_only(&mut cluster, node, plan, all),
        None => {
            cluster.insert(
                "ca".into(),
                json!({"crt": STANDARD.encode(&secrets.kubernetes_ca_certificate), "key": ""}),
            );
        }
    }
    cluster.insert("discovery".into(), discovery());
    if let Some(all) = control_plane {
        cluster.insert("etcd".into(), etcd(plan, all));
    }
    Value::Object(cluster)
}

/// CNI `none`: Cilium is installed after bootstrap, not by Talos.
fn network(plan: &NetworkPlan) -> Value {
    json!({
        "cni": {"name": "none"},
        "dnsDomain": DNS_DOMAIN,
        "podSubnets": [plan.pod_cidr().to_string()],
        "serviceSubnets": [plan.service_cidr().to_string()],
    })
}

/// Keys, CAs and the control-plane components, between `token` and
/// `discovery` as in Talos' own output.
fn control_plane_only(
    cluster: &mut Map<String, Value>,
    node: &Node,
    plan: &NetworkPlan,
    secrets: &Secrets,
) {
    let (name, secret) = match &secrets.encryption {
        EncryptionSecret::Secretbox(key) => ("secretboxEncryptionSecret", key),
        EncryptionSecret::AesCbc(key) => ("aescbcEncryptionSecret", key),
    };
    cluster.insert(name.into(), json!(secret));
    cluster.insert("ca".into(), certificate_and_key(secrets.kubernetes_ca()));
    cluster.insert(
        "aggregatorCA".into(),
        certificate_and_key(secrets.aggregator_ca()),
    );
    cluster.insert(
        "serviceAccount".into(),
        json!({"key": STANDARD.encode(secrets.service_account_key.as_pem())}),
    );
    cluster.insert("apiServer".into(), api_server(node, plan));
    cluster.insert("controllerManager".into(), controller_manager(node, plan));
    cluster.insert(
        "proxy".into(),
        json!({"disabled": true, "image": image("kube-proxy", node)}),
    );
    cluster.insert(
        "scheduler".into(),
        json!({"image": image("kube-scheduler", node)}),
    );
}

fn image(component: &str, node: &Node) -> String {
    images::control_plane_image(component, &node.kubernetes)
}

/// The API server's certificate names the endpoint IP (the first control
/// plane's, or the load balancer's); PodSecurity and the audit policy are
/// Talos' defaults.
fn api_server(node: &Node, plan: &NetworkPlan) -> Value {
    let mut api_server = Map::new();
    api_server.insert("image".into(), json!(image("kube-apiserver", node)));
    api_server.insert("certSANs".into(), json!([plan.api_ip().to_string()]));
    if node.contract.legacy_always_on_flags() {
        api_server.insert("disablePodSecurityPolicy".into(), json!(true));
    }
    api_server.insert(
        "admissionControl".into(),
        json!([{
            "name": "PodSecurity",
            "configuration": {
                "apiVersion": "pod-security.admission.config.k8s.io/v1alpha1",
                "defaults": {
                    "audit": "restricted",
                    "audit-version": "latest",
                    "enforce": "baseline",
                    "enforce-version": "latest",
                    "warn": "restricted",
                    "warn-version": "latest",
                },
                "exemptions": {
                    "namespaces": ["kube-system"],
                    "runtimeClasses": [],
                    "usernames": [],
                },
                "kind": "PodSecurityConfiguration",
            },
        }]),
    );
    api_server.insert(
        "auditPolicy".into(),
        json!({
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "rules": [{"level": "Metadata"}],
        }),
    );
    Value::Object(api_server)
}

/// Node pod ranges are cut at the plan's mask size; the cloud controller
/// runs outside (Hetzner CCM); metrics listen beyond localhost.
fn controller_manager(node: &Node, plan: &NetworkPlan) -> Value {
    json!({
        "image": image("kube-controller-manager", node),
        "extraArgs": {
            "bind-address": "0.0.0.0",
            "cloud-provider": "external",
            "node-cidr-mask-size-ipv4": plan.pod_cidr_mask_size().to_string(),
        },
    })
}

/// Talos' default: discovery via the Sidero discovery service only.
fn discovery() -> Value {
    json!({
        "enabled": true,
        "registries": {"kubernetes": {"disabled": true}, "service": {}},
    })
}

/// etcd peers advertise their control-plane range address only.
fn etcd(plan: &NetworkPlan, secrets: &Secrets) -> Value {
    let subnets: Vec<String> = plan
        .etcd_advertised_subnets()
        .iter()
        .map(ToString::to_string)
        .collect();
    json!({
        "ca": certificate_and_key(secrets.etcd_ca()),
        "advertisedSubnets": subnets,
    })
}

fn certificate_and_key(ca: &CertificateAuthority) -> Value {
    json!({
        "crt": STANDARD.encode(ca.certificate_pem()),
        "key": STANDARD.encode(ca.key().as_pem()),
    })
}
