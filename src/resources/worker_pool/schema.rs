//! The schema of `hct_worker_pool`, written as its documentation.

use crate::resources::node_group::{NODE_LIST_DESCRIPTION, node_list_type};
use crate::resources::timeouts;
use crate::tf::{Attribute, Block, Mode, NestedBlock, Nesting, Schema, Type};

pub fn schema() -> Schema {
    Schema::new(
        0,
        "A pool of private-only Talos workers of an `hct_cluster`. Its CIDR and node count \
         come from the network plan's `worker_pools.<name>`: change `nodes` there to scale \
         (up takes the next IPs; down removes the highest indexes first, each node reset \
         gracefully before its server is deleted). Nodes are named `<cluster>-<pool>-<n>`; \
         hct waits until each is configured and runs kubelet (Kubernetes `Ready` needs the \
         CNI, installed afterwards with the plan's `cilium_values`).",
    )
    .attribute(
        Attribute::required("worker_join", Type::String)
            .sensitive()
            .description(
                "The cluster's settings, the worker share of its secrets (join tokens and CA \
                 certificates, no CA key) and the pool's client certificates (renewed by the \
                 cluster a month before they expire): `hct_cluster_secrets.<name>.worker_join` \
                 (the parallel form: the pool creates and boots its servers while the control \
                 plane comes up, and its nodes join once it can take them) or \
                 `hct_cluster.<name>.worker_join` (the serial form: the pool starts once the \
                 control plane is up). Use the same bundle as the cluster: a pool whose \
                 secrets the control plane does not know fails, naming this attribute.",
            ),
    )
    .attribute(Attribute::required("name", Type::String).description(
        "The pool: a key of the plan's `worker_pools`. Changing it replaces the pool.",
    ))
    .attribute(
        Attribute::required("server_type", Type::String).description(
            "e.g. `cx33`. A change resizes each server in place, `update_strategy` at a time (ACPI \
                 shutdown, Hetzner's `change_type` keeping the disk size, power on, back in \
                 service); the new type must have the same architecture.",
        ),
    )
    .attribute(Attribute::required("location", Type::String).description(
        "e.g. `nbg1` (a datacenter such as `nbg1-dc3` is accepted with a warning). Servers \
         cannot move, so a change is refused at plan time: add a pool at the new location \
         instead.",
    ))
    .attribute(
        Attribute::optional("node_labels", Type::map(Type::String))
            .description("Kubernetes node labels, e.g. `{ purpose = \"platform\" }`."),
    )
    .attribute(
        Attribute::nested(
            "node_taints",
            Mode::Optional,
            Nesting::List,
            vec![
                Attribute::required("key", Type::String),
                Attribute::optional("value", Type::String),
                Attribute::required("effect", Type::String)
                    .description("`NoSchedule`, `PreferNoSchedule` or `NoExecute`."),
            ],
        )
        .description("Kubernetes taints registered with each node: `[{ key, value, effect }]`."),
    )
    .attribute(
        Attribute::optional("server_labels", Type::map(Type::String)).description(
            "Hetzner labels for the servers, besides hct's own. Changed labels are restored.",
        ),
    )
    .attribute(
        Attribute::optional("config_patches", Type::list(Type::String)).description(
            "Talos config patches applied last, in order, to this pool's configs, checked as \
                 the cluster's are (at plan time once the cluster exists, else before any server \
                 of the pool is created).",
        ),
    )
    .attribute(Attribute::computed("id", Type::String).description("`<cluster>/<pool>`."))
    .attribute(Attribute::computed("nodes", node_list_type()).description(NODE_LIST_DESCRIPTION))
    .attribute(
        Attribute::computed("placement_group_ids", Type::list(Type::Number))
            .description("The pool's spread placement groups (10 servers each at most)."),
    )
    .block(update_strategy_block())
    .block(timeouts::block())
}

/// `update_strategy { max_unavailable = ... }`.
fn update_strategy_block() -> NestedBlock {
    NestedBlock::new(
        "update_strategy",
        Nesting::Single,
        Block {
            description: "How the pool's nodes change: Talos upgrades, config re-applies (which \
                          may reboot) and resizes."
                .into(),
            attributes: vec![Attribute::optional("max_unavailable", Type::String).description(
                "How many of the pool's nodes may be out of service at once: a count (`2`) or a \
                 percentage of its nodes (`\"20%\"`, rounded down, at least 1). Default 1. Each \
                 node is back in service before its place goes to the next. Across the pools \
                 of a cluster applied together, a node of this pool goes down only while fewer \
                 than this many nodes of all the cluster's pools are out, so together they never \
                 exceed the largest budget among them. Control planes always go one at a time.",
            )],
            blocks: vec![],
        },
    )
}
