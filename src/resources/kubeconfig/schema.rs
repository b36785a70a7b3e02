//! The schema of `hct_kubeconfig`, written as its documentation.

use super::model::{DEFAULT_VALIDITY, MAX_VALIDITY, MIN_VALIDITY};
use crate::duration;
use crate::tf::{Attribute, Schema, Type};

pub fn schema() -> Schema {
    Schema::new(
        0,
        format!(
            "A short-lived admin kubeconfig for the cluster, minted each run and never stored: \
             a fresh `CN=admin, O=system:masters` client certificate signed by the cluster's \
             Kubernetes CA (valid `validity`, default {default}), with the API server's URL and \
             CA. Configure the helm and kubernetes providers from it in the same apply that \
             creates the cluster: Terraform opens it once `worker_join` is known, which is after \
             `hct_cluster` exists when it reads `hct_cluster.<name>.worker_join`. An ephemeral \
             resource: Terraform ≥ 1.10 or OpenTofu ≥ 1.11; with older CLIs use `hct_cluster`'s \
             `kubernetes_admin`. Opening it calls nothing remote. The API server is private: \
             give the consuming provider `proxy_url = ephemeral.hct_kubeconfig.<name>.proxy_url` \
             when hct reaches the network through a proxy. See docs/guides/add-ons.md.",
            default = duration::format(DEFAULT_VALIDITY),
        ),
    )
    .attribute(
        Attribute::required("worker_join", Type::String)
            .sensitive()
            .description(
                "`hct_cluster.<name>.worker_join` (either form of the cluster). Referencing the \
                 cluster, not `hct_cluster_secrets`, makes Terraform open this only after the \
                 control plane is up.",
            ),
    )
    .attribute(
        Attribute::required("machine_secrets", Type::String)
            .sensitive()
            .description(
                "`hct_cluster.<name>.machine_secrets`: the cluster's secrets, whose Kubernetes CA \
                 signs the certificate (`worker_join` carries no CA key).",
            ),
    )
    .attribute(
        Attribute::optional("validity", Type::String).description(format!(
            "How long the client certificate lasts, e.g. `30m` or `2h`: from {min} to {max} \
         (default {default}). Long enough for the run that uses it; it is never renewed.",
            min = duration::format(MIN_VALIDITY),
            max = duration::format(MAX_VALIDITY),
            default = duration::format(DEFAULT_VALIDITY),
        )),
    )
    .attribute(
        Attribute::computed("host", Type::String)
            .description("The Kubernetes API: the plan's `cluster_endpoint`, `https://<first control-plane IP or private load balancer IP>:6443` (private)."),
    )
    .attribute(
        Attribute::computed("cluster_ca_certificate", Type::String)
            .description("PEM of the cluster's Kubernetes CA certificate."),
    )
    .attribute(
        Attribute::computed("client_certificate", Type::String)
            .description("PEM of the admin client certificate (`CN=admin, O=system:masters`)."),
    )
    .attribute(
        Attribute::computed("client_key", Type::String)
            .sensitive()
            .description("PEM of the client certificate's private key (ECDSA P-256)."),
    )
    .attribute(
        Attribute::computed("kubeconfig", Type::String)
            .sensitive()
            .description("The same credentials as a whole kubeconfig (context `admin@<cluster>`)."),
    )
    .attribute(Attribute::computed("proxy_url", Type::String).sensitive().description(
        "The provider's `talos_proxy` (`HCT_TALOS_PROXY`), the SOCKS5 proxy into the private \
         network, or null without one: for the consuming provider's `proxy_url`; `kubeconfig` \
         carries it as `proxy-url`. Sensitive: it may hold the proxy's user name and password. \
         Known exactly when the credentials are, which the kubernetes provider needs while the \
         cluster does not exist yet.",
    ))
    .attribute(
        Attribute::computed("expires_at", Type::String)
            .description("When the client certificate expires (RFC 3339, UTC)."),
    )
}
