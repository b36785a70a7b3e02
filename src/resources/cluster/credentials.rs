//! `hct_cluster.kubernetes_admin`: the admin kubeconfig's four values for
//! `provider "helm" { kubernetes { … } }` with CLIs that have no ephemeral
//! resources. Derived from `kubeconfig` wherever that is set (plan, apply,
//! refresh), so they always name the same certificate.

use crate::resources::values::set;
use crate::talos::client_config;
use crate::tf::{Attribute, Mode, Nesting, Value};

pub const ATTRIBUTE: &str = "kubernetes_admin";

pub fn attribute() -> Attribute {
    let part = |name: &str, what: &str| {
        Attribute::computed(name, crate::tf::Type::String).description(what)
    };
    Attribute::nested(
        ATTRIBUTE,
        Mode::Computed,
        Nesting::Single,
        vec![
            part(
                "host",
                "The Kubernetes API: the plan's `cluster_endpoint`, `https://<first control-plane IP or private load balancer IP>:6443` (private).",
            ),
            part(
                "cluster_ca_certificate",
                "PEM of the cluster's Kubernetes CA certificate.",
            ),
            part(
                "client_certificate",
                "PEM of the admin client certificate (`CN=admin, O=system:masters`).",
            ),
            part("client_key", "PEM of its private key.").sensitive(),
        ],
    )
    .sensitive()
    .description(
        "The credentials of `kubeconfig` taken apart, for the helm and kubernetes providers \
         (`host = hct_cluster.<name>.kubernetes_admin.host`, and so on; sensitive, in state as \
         `kubeconfig` is, and renewed with it). A provider configured from them waits for the \
         cluster. With Terraform ≥ 1.10 or OpenTofu ≥ 1.11 prefer `ephemeral \"hct_kubeconfig\"`, \
         which keeps no credential in state. See docs/guides/add-ons.md.",
    )
}

/// Sets the attribute from the value's `kubeconfig`: unknown while that is,
/// null when there is none.
pub fn fill(value: &mut Value) {
    let derived = match value.get("kubeconfig") {
        Value::Unknown => Value::Unknown,
        Value::String(text) => match client_config::kubeconfig_credentials(text) {
            Some(c) => Value::object([
                ("host", Value::from(c.host)),
                (
                    "cluster_ca_certificate",
                    Value::from(c.cluster_ca_certificate),
                ),
                ("client_certificate", Value::from(c.client_certificate)),
                ("client_key", Value::from(c.client_key)),
            ]),
            None => Value::Null,
        },
        _ => Value::Null,
    };
    set(value, ATTRIBUTE, derived);
}
