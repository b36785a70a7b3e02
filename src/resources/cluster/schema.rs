//! The schema of `hct_cluster`, written as its documentation.

use super::NODES;
use super::settings_schema::settings_attributes;
use crate::resources::node_group::{NODE_LIST_DESCRIPTION, node_list_type};
use crate::resources::timeouts;
use crate::tf::{Attribute, Mode, Nesting, Schema, Type};

/// The write-only `hcloud` Secret token, and what marks a new one.
pub const CCM_TOKEN_WO: &str = "ccm_token_wo";

pub const CCM_TOKEN_WO_VERSION: &str = "ccm_token_wo_version";

pub fn schema() -> Schema {
    let schema = Schema::new(
        0,
        "A private-only Talos Linux control plane on Hetzner Cloud, bootstrapped: spread \
         placement groups, servers without public IPs at the network plan's fixed IPs, machine \
         configs made for the private network (default route via the gateway, node IPs only from \
         the node ranges, etcd on the control-plane range), etcd bootstrapped once, the Kubernetes API \
         servers ready (`/readyz`), and the talosconfig and kubeconfig. Worker pools join with `hct_worker_pool` and `worker_join`.\n\n\
         The cluster-wide settings come either from `worker_join = hct_cluster_secrets.<name>.worker_join` \
         (the parallel form: the pools read the same bundle and boot their servers while the control \
         plane comes up), or from the attributes `name` to `machine_secrets` set here (the serial \
         form: pools take this resource's computed `worker_join` and start after it). In the parallel \
         form those attributes are read-only copies of the bundle's values, but \
         `machine_secrets`, set beside `worker_join` to `hct_cluster_secrets.<name>.machine_secrets`.\n\n\
         Every server is in state as soon as it exists; a failed or interrupted apply leaves \
         partial state (a failed create taints the resource: `terraform untaint` to continue \
         instead of replacing). Changes to patches, labels or the plan are re-applied one node at \
         a time, without reboot where Talos allows; a new Kubernetes version is upgraded like \
         `talosctl upgrade-k8s` (docs/guides/upgrades.md).",
    )
    .attribute(
        Attribute::optional_computed("worker_join", Type::String)
            .sensitive()
            .description(
                "The parallel form: `hct_cluster_secrets.<name>.worker_join`, the one source of the \
                 cluster-wide settings for the cluster and its pools (then, of `name` to \
                 `machine_secrets`, only `machine_secrets` is set here, to \
                 `hct_cluster_secrets.<name>.machine_secrets`). In the serial form (those \
                 attributes set here) it is computed: everything `hct_worker_pool` needs to join \
                 the cluster: the settings, the worker share of the secrets (join tokens, CA \
                 certificates; no CA key) and client certificates for the pools, valid for a \
                 year and issued again by a plan in their last month.",
            ),
    );
    let schema = settings_attributes(false)
        .into_iter()
        .fold(schema, Schema::attribute);
    let schema = schema
        .attribute(
        Attribute::nested(
            "control_plane",
            Mode::Required,
            Nesting::Single,
            vec![
                Attribute::required("server_type", Type::String)
                    .description(
                        "e.g. `cx23`. A change resizes each server in place, one at a time (ACPI \
                         shutdown, Hetzner's `change_type` keeping the disk size, power on, back \
                         in service); the new type must have the same architecture.",
                    ),
                Attribute::required("location", Type::String).description(
                    "e.g. `nbg1`. A datacenter (`nbg1-dc3`) is accepted with a warning. Servers \
                     cannot move, so a change is refused at plan time.",
                ),
                Attribute::optional("server_labels", Type::map(Type::String)).description(
                    "Hetzner labels for the servers, besides hct's own (`managed-by`, \
                     `cluster`, `pool`, `role`). Changed labels are restored.",
                ),
            ],
        )
        .description("The control-plane servers. Their number and IPs come from the plan."),
    )
    .attribute(Attribute::optional("config_patches", Type::list(Type::String)).description(
        "Talos config patches (YAML strategic merge, or JSON6902 lists) applied last, in order, \
         to the control-plane configs. The patched configs are checked at plan time: keys the \
         Talos release does not know, and changes to what hct relies on (kubelet's and etcd's \
         subnets, the pod and service ranges, the endpoint, the default route, the hostname, the \
         installer image) are refused.",
    ))
    .attribute(
        Attribute::nested(
            "bootstrap_manifests",
            Mode::Optional,
            Nesting::List,
            vec![
                Attribute::required("name", Type::String)
                    .description("Unique among the manifests, e.g. `cilium`."),
                Attribute::required("contents", Type::String).description(
                    "Kubernetes objects as YAML documents separated by `---`, e.g. \
                     `data.helm_template.cilium.manifest`.",
                ),
            ],
        )
        .description(
            "Manifests Talos applies when the cluster bootstraps, before any node is Ready: the \
             CNI (Cilium rendered by the helm provider's `helm_template` from the plan's \
             `cilium_values`), and anything else the cluster needs from its first minute. They \
             go into the control planes' `cluster.inlineManifests` (from Talos v1.14 one \
             `KubeInlineManifestConfig` document each). Later, a changed manifest is \
             applied with server-side apply (field manager `hct`, forced) through the Kubernetes \
             API, and the objects of a removed manifest (or that a manifest no longer has) are \
             deleted. With a CNI among them (a DaemonSet named or labelled cilium, flannel, \
             calico, canal, kube-router or weave), apply waits until every control plane is \
             Ready. See docs/guides/add-ons.md.",
        ),
    )
    .attribute(Attribute::computed("bootstrap_manifest_objects", Type::map(Type::list(Type::String))).description(
        "The objects each bootstrap manifest makes, by manifest name: `<apiVersion> <kind> \
         <namespace>/<name>` (no namespace for cluster-scoped ones). hct deletes the ones that \
         leave.",
    ))
    .attribute(Attribute::optional("kubelet_serving_cert_approval", Type::Bool).description(
        "Whether hct installs its approver of kubelet serving certificates (default true): \
         postfinance's kubelet-csr-approver, pinned by digest, in `kube-system`, approving a \
         `kubernetes.io/kubelet-serving` CSR only when its subject is the requesting node \
         (`system:node:<name>`), its one DNS name is a node name of the plan and its IPs are node \
         IPs of the plan; anything else stays pending, and so does a name another node's name \
         begins (`x-general-10` after `x-general-1`; the plan warns). Installed as a Talos inline manifest at \
         bootstrap, server-side applied later; `false` removes it. See docs/guides/add-ons.md.",
    ))
    .attribute(Attribute::optional("hcloud_secret", Type::Bool).description(
        "Whether hct keeps the `hcloud` Secret in `kube-system` (default true) that the Hetzner \
         CCM and CSI driver read: `token` (`ccm_token`) and `network` (`network_id`). Applied \
         through the Kubernetes API only (server-side apply, field manager `hct`), never in a \
         machine config; `false` deletes it.",
    ))
    .attribute(Attribute::optional("ccm_token", Type::String).sensitive().description(
        "The Hetzner API token for the `hcloud` Secret. Default: the provider's token. Use a \
         token of its own (read & write), so that the cluster's CCM and CSI driver do not hold \
         the token Terraform uses; a new value updates the Secret. It is kept in state: \
         `ccm_token_wo` keeps it out.",
    ))
    .attribute(
        Attribute::optional(CCM_TOKEN_WO, Type::String)
            .sensitive()
            .write_only()
            .description(
                "The same token, write-only (Terraform and OpenTofu 1.11 or newer): sent at \
                 apply, never stored in plan or state. Instead of `ccm_token`. hct cannot see a \
                 new value: change `ccm_token_wo_version` with it, and the apply updates the \
                 Secret.",
            ),
    )
    .attribute(Attribute::optional(CCM_TOKEN_WO_VERSION, Type::Number).description(
        "Any number; a change makes the apply put `ccm_token_wo`'s value into the Secret.",
    ))
    .attribute(Attribute::computed("kubernetes_synced", Type::Bool).description(
        "Whether the last apply brought the cluster's Kubernetes objects (bootstrap manifests, \
         hct's add-ons) in line and saw its nodes Ready; false after a failure, so that the \
         next apply applies them again (Talos' own manifests too). Always planned true.",
    ))
    .attribute(
        Attribute::computed("kubernetes_drift", Type::list(Type::String)).description(
            "The objects of the bootstrap manifests (and of hct's CSR approver) that the last \
             refresh found changed or deleted by hand, each as `manifest <name>: <apiVersion> \
             <kind> <namespace>/<name>: <fields> changed` (or `deleted`); field paths only, \
             never values. Always planned null, so the plan shows a change whose apply applies \
             the manifests again and takes the edits back. Null when none.",
        ),
    )
    .attribute(super::load_balancer::attribute())
    .attribute(Attribute::computed("id", Type::String).description("The cluster's name."))
    .attribute(Attribute::computed("endpoint", Type::String).description(
        "The Kubernetes API: the plan's `cluster_endpoint`, `https://<first control-plane IP or private load balancer IP>:6443` (private).",
    ))
    .attribute(Attribute::computed(NODES, node_list_type()).description(NODE_LIST_DESCRIPTION))
    .attribute(Attribute::computed("talosconfig", Type::String).sensitive().description(
        "talosctl config for the cluster (`os:admin`, valid a year; a plan in its last 30 days \
         issues it again), endpoints and nodes the control-plane IPs. Write it with \
         `local_sensitive_file`.",
    ))
    .attribute(Attribute::computed("kubeconfig", Type::String).sensitive().description(
        "Admin kubeconfig (`system:masters`, valid a year; a plan in its last 30 days issues it \
         again) for the private endpoint.",
    ))
    .attribute(super::credentials::attribute());
    super::etcd_backup::attributes()
        .into_iter()
        .fold(schema, Schema::attribute)
        .block(timeouts::block())
}
