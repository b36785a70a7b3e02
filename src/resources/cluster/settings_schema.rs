//! The cluster-wide settings as schema attributes: one list, written as its
//! documentation, shared by `hct_cluster_secrets` (where they are set in the
//! parallel form) and `hct_cluster` (where they are set in the serial form,
//! and copied from `worker_join` in the parallel one).

use crate::tf::{Attribute, Type};

/// The attributes that make the cluster-wide settings (what `worker_join`
/// carries), in schema order.
pub const SETTINGS: [&str; 11] = [
    "name",
    "network_id",
    "network_plan",
    "talos_version",
    "kubernetes_version",
    "image_id",
    "schematic_id",
    "install_disk",
    "config_delivery",
    "ssh_key_ids",
    "machine_secrets",
];

/// The settings every configuration must give.
pub const REQUIRED_SETTINGS: [&str; 5] = [
    "name",
    "network_id",
    "network_plan",
    "talos_version",
    "image_id",
];

/// The settings attributes. `required` (`hct_cluster_secrets`) makes
/// [`REQUIRED_SETTINGS`] required and `ssh_key_ids` optional; else
/// (`hct_cluster`'s two forms) all are optional and computed.
pub fn settings_attributes(required: bool) -> Vec<Attribute> {
    let base = |name: &str, ty: Type| {
        if required && REQUIRED_SETTINGS.contains(&name) {
            Attribute::required(name, ty)
        } else if required && name == "ssh_key_ids" {
            Attribute::optional(name, ty)
        } else {
            Attribute::optional_computed(name, ty)
        }
    };
    let attributes =
        vec![
        base("name", Type::String).description(
            "The cluster's name: a DNS label (lower-case letters, digits, `-`) of at most 40 \
             characters. Servers are named `<name>-cp-<n>` and `<name>-<pool>-<n>`. Changing it \
             replaces the cluster.",
        ),
        base("network_id", Type::Number).description(
            "The existing Hetzner network (e.g. `hcloud_network.this.id`). It must have the \
             plan's `network_cidr`, a cloud subnet equal to `node_subnet` and a route \
             `0.0.0.0/0` to a NAT gateway. Changing it replaces the cluster.",
        ),
        base("network_plan", Type::String).description(
            "`data.hct_network_plan.<name>.json`: the addresses of every node and range.",
        ),
        base("talos_version", Type::String).description(
            "The Talos release the nodes run, e.g. `v1.12.6`; its minor picks the \
             machine-config contract (v1.11, v1.12 or v1.13). A newer release upgrades the nodes \
             in place (the Image Factory's Hetzner installer, one node at a time per control \
             plane, a pool's `update_strategy` at a time per pool, the control plane first: a \
             pool waits until every control plane runs the new release), each back and healthy \
             before the next, then applies the configs made for it; set `image_id` to a \
             snapshot of the new release for servers created later. An older release is refused \
             at plan time.",
        ),
        base("kubernetes_version", Type::String).description(
            "e.g. `v1.35.2`. Default: Talos' default for `talos_version` when the cluster is \
             created; it stays when `talos_version` changes later (a Talos upgrade does not \
             upgrade Kubernetes; it must be one the new release runs: v1.31 to v1.36 on Talos \
             v1.13). A change upgrades Kubernetes like `talosctl upgrade-k8s`: the \
             control-plane components one control plane at a time, then the kubelets one node \
             at a time (control planes, then pools), without reboots; once the control \
             planes are done, the manifests Talos renders (CoreDNS, kube-proxy) are applied \
             again. Any patch release of the \
             running minor or a release of the next minor; not together with a new \
             `talos_version`. See docs/guides/upgrades.md.",
        ),
        base("image_id", Type::String).description(
            "The Talos snapshot (e.g. `hct_talos_image.this.id`), of the servers' architecture \
             and of `talos_version`. New servers are created from it.",
        ),
        base("schematic_id", Type::String).description(
            "The Image Factory schematic of the image (for the installer image in the config). \
             Default: the schematic without customisations.",
        ),
        base("install_disk", Type::String).description(
            "Where Talos is installed. Default `/dev/sda`, the first disk of a Hetzner cloud \
             server.",
        ),
        base("config_delivery", Type::String).description(
            "`apply` (default: each config is applied over the Talos API while the new node \
             waits in maintenance mode; user data stays empty) or `user_data` (the config is in \
             the server's user data, read at first boot: Hetzner's metadata service then serves \
             every secret in it to any process on the server, pods included, so the plan warns). \
             Applies to servers created from then on. See docs/guides/security.md.",
        ),
        base("ssh_key_ids", Type::list(Type::Number)).description(
            "Hetzner SSH keys to register on new servers. Talos has no SSH; without a key \
             Hetzner e-mails a root password for each server.",
        ),
        base("machine_secrets", Type::String).sensitive().description(
            "The cluster's secrets as talosctl's `secrets.yaml`. Default: generated at apply \
             (never at plan: planned values must not change). Set it to adopt an existing \
             cluster's secrets (for import, or to move a serial-form cluster to \
             `hct_cluster_secrets`). Cannot change once the cluster exists. In `hct_cluster`'s \
             parallel form, set it to `hct_cluster_secrets.<name>.machine_secrets` beside \
             `worker_join`: the control plane's configs hold the CA keys, which `worker_join` \
             does not carry (a cluster made before keeps the secrets in its state).",
        ),
    ];
    debug_assert!(
        attributes
            .iter()
            .map(|a| a.name.as_str())
            .eq(SETTINGS.iter().copied())
    );
    attributes
}
