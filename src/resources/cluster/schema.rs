//! The schema of `hct_cluster`, written as its documentation.

use crate::resources::node_group::{NODE_LIST_DESCRIPTION, node_list_type};
use crate::resources::timeouts;
use crate::tf::{Attribute, Mode, Nesting, Schema, Type};

pub fn schema() -> Schema {
    Schema::new(
        0,
        "A private-only Talos Linux control plane on Hetzner Cloud, bootstrapped: spread \
         placement groups, servers without public IPs at the network plan's fixed IPs, machine \
         configs made for the private network (default route via the gateway, node IPs only from \
         the node ranges, etcd on the control-plane range), etcd bootstrapped once, the Kubernetes API \
         servers ready (`/readyz`), and the talosconfig and kubeconfig. Worker pools join with `hct_worker_pool` and `worker_join`.\n\n\
         Every server is in state as soon as it exists; a failed or interrupted apply leaves \
         partial state (a failed create taints the resource: `terraform untaint` to continue \
         instead of replacing). Changes to patches, labels, the Kubernetes version or the plan \
         are re-applied one node at a time, without reboot where Talos allows.",
    )
    .attribute(Attribute::required("name", Type::String).description(
        "The cluster's name: a DNS label (lower-case letters, digits, `-`) of at most 40 \
         characters. Servers are named `<name>-cp-<n>`. Changing it replaces the cluster.",
    ))
    .attribute(Attribute::required("network_id", Type::Number).description(
        "The existing Hetzner network (e.g. `hcloud_network.this.id`). It must have the plan's \
         `network_cidr`, a cloud subnet equal to `node_subnet` and a route `0.0.0.0/0` to a NAT \
         gateway. Changing it replaces the cluster.",
    ))
    .attribute(Attribute::required("network_plan", Type::String).description(
        "`data.hct_network_plan.<name>.json`: the addresses of every node and range.",
    ))
    .attribute(Attribute::required("talos_version", Type::String).description(
        "The Talos release the nodes run, e.g. `v1.12.6`; its minor picks the machine-config \
         contract (v1.11, v1.12 or v1.13). A newer release upgrades the nodes in place (the Image \
         Factory's Hetzner installer, one node at a time per group, the control plane first, \
         each back and healthy before the next), then applies the configs made for it; set \
         `image_id` to a snapshot of the new release for servers created later. An older \
         release is refused at plan time.",
    ))
    .attribute(Attribute::optional_computed("kubernetes_version", Type::String).description(
        "e.g. `v1.35.2`. Default: Talos' default for `talos_version` when the cluster is created; \
         it stays when `talos_version` changes later (a Talos upgrade does not upgrade \
         Kubernetes; it must be one the new release runs: v1.31 to v1.36 on Talos v1.13). A change \
         is re-applied to the nodes' configs.",
    ))
    .attribute(Attribute::required("image_id", Type::String).description(
        "The Talos snapshot (e.g. `hct_talos_image.this.id`), of the control plane's \
         architecture and of `talos_version`. New servers are created from it.",
    ))
    .attribute(Attribute::optional_computed("schematic_id", Type::String).description(
        "The Image Factory schematic of the image (for the installer image in the config). \
         Default: the schematic without customisations.",
    ))
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
    .attribute(Attribute::optional_computed("install_disk", Type::String).description(
        "Where Talos is installed. Default `/dev/sda`, the first disk of a Hetzner cloud server.",
    ))
    .attribute(Attribute::optional("config_patches", Type::list(Type::String)).description(
        "Talos config patches (YAML strategic merge, or JSON6902 lists) applied last, in order, \
         to the control-plane configs. The patched configs are checked at plan time: keys the \
         Talos release does not know, and changes to what hct relies on (kubelet's and etcd's \
         subnets, the pod and service ranges, the endpoint, the default route, the hostname, the \
         installer image) are refused.",
    ))
    .attribute(Attribute::optional_computed("config_delivery", Type::String).description(
        "`apply` (default: each config is applied over the Talos API while the new node waits \
         in maintenance mode; user data stays empty) or `user_data` (the config is in the \
         server's user data, read at first boot: Hetzner's metadata service then serves every \
         secret in it to any process on the server, pods included, so the plan warns). Applies \
         to servers created from then on. See docs/guides/security.md.",
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
             go into the control planes' `cluster.inlineManifests`. Later, a changed manifest is \
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
    .attribute(Attribute::optional("ssh_key_ids", Type::list(Type::Number)).description(
        "Hetzner SSH keys to register on new servers. Talos has no SSH; without a key Hetzner \
         e-mails a root password for each server.",
    ))
    .attribute(
        Attribute::optional_computed("machine_secrets", Type::String)
            .sensitive()
            .description(
                "The cluster's secrets as talosctl's `secrets.yaml`. Default: generated on create. \
                 Set it to adopt an existing cluster's secrets (required for import). Cannot change \
                 once the cluster exists.",
            ),
    )
    .attribute(Attribute::computed("id", Type::String).description("The cluster's name."))
    .attribute(Attribute::computed("endpoint", Type::String).description(
        "The Kubernetes API: `https://<first control-plane IP>:6443` (private).",
    ))
    .attribute(Attribute::computed("control_plane_nodes", node_list_type()).description(NODE_LIST_DESCRIPTION))
    .attribute(Attribute::computed("talosconfig", Type::String).sensitive().description(
        "talosctl config for the cluster (`os:admin`, valid a year; a plan in its last 30 days \
         issues it again), endpoints and nodes the control-plane IPs. Write it with \
         `local_sensitive_file`.",
    ))
    .attribute(Attribute::computed("kubeconfig", Type::String).sensitive().description(
        "Admin kubeconfig (`system:masters`, valid a year; a plan in its last 30 days issues it \
         again) for the private endpoint.",
    ))
    .attribute(Attribute::computed("worker_join", Type::String).sensitive().description(
        "Everything `hct_worker_pool` needs to join the cluster (holds the machine secrets).",
    ))
    .block(timeouts::block())
}
