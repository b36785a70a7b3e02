//! `hct_network_plan`: the address plan of a private cluster, computed and
//! checked at plan time. No API calls; the rules live in `crate::network_plan`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value as Json;

use crate::network_plan::{self, NetworkPlan, NetworkPlanInput, NodeGroupInput};
use crate::provider::{Context, DataSource};
use crate::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Mode, Nesting, Schema, Type, Value};

pub const TYPE_NAME: &str = "hct_network_plan";
pub const DEFAULT_POD_CIDR_MASK_SIZE: i64 = 24;

pub struct NetworkPlanDataSource;

fn node_group_attributes(what: &str) -> Vec<Attribute> {
    vec![
        Attribute::required("cidr", Type::String).description(format!(
            "The slice of `node_subnet` where the {what} live, e.g. `10.0.128.16/28`. Node *n* \
             (counted from 1) gets the *n*-th host address of the slice; its first and last \
             addresses are never used."
        )),
        Attribute::required("nodes", Type::Number)
            .description(format!("How many {what} there are.")),
    ]
}

#[async_trait]
impl DataSource for NetworkPlanDataSource {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        Schema::new(
            0,
            "Plans the addresses of a private-only Talos cluster on a Hetzner Cloud network and \
             checks them at plan time: node ranges, fixed node IPs, the default gateway, pod and \
             service CIDRs, placement groups, and the Cilium and Hetzner cloud-controller values \
             that must agree with them. Pure computation: it calls no API. Its `json` output is \
             the input of `hct_cluster` and `hct_worker_pool`.",
        )
        .attribute(Attribute::required("network_cidr", Type::String).description(
            "The Hetzner network's `ip_range`, e.g. `10.0.0.0/16`. Its first host (`10.0.0.1`) \
             is the gateway every private node routes through.",
        ))
        .attribute(Attribute::required("node_subnet", Type::String).description(
            "The Hetzner cloud subnet the nodes are attached to, e.g. `10.0.128.0/24`. Must lie \
             inside `network_cidr`.",
        ))
        .attribute(
            Attribute::nested("control_plane", Mode::Required, Nesting::Single, node_group_attributes("control-plane nodes"))
                .description(
                    "Where the control-plane nodes live: `{ cidr = \"10.0.128.16/28\", nodes = 3 }`. \
                     Use an odd number of nodes: etcd needs a majority.",
                ),
        )
        .attribute(
            Attribute::nested("worker_pools", Mode::Optional, Nesting::Map, node_group_attributes("pool's nodes"))
                .description(
                    "Worker pools by name: `{ platform = { cidr = \"10.0.128.32/27\", nodes = 3 } }`. \
                     A name is a DNS label; it becomes part of the server names \
                     (`<cluster>-<pool>-<n>`).",
                ),
        )
        .attribute(Attribute::required("service_cidr", Type::String).description(
            "Kubernetes service CIDR, e.g. `10.0.192.0/21`. Must not overlap the node subnet or \
             the pod CIDR.",
        ))
        .attribute(Attribute::required("pod_cidr", Type::String).description(
            "Kubernetes pod CIDR, e.g. `10.0.224.0/19`. Each node takes one \
             `/pod_cidr_mask_size` from it, so it bounds the cluster size (a /19 holds 32 nodes \
             at /24). Must not overlap the node subnet or the service CIDR.",
        ))
        .attribute(Attribute::optional_computed("pod_cidr_mask_size", Type::Number).description(format!(
            "Prefix length of each node's pod range (the controller manager's \
             `node-cidr-mask-size-ipv4`). Default: `{DEFAULT_POD_CIDR_MASK_SIZE}`."
        )))
        .attribute(Attribute::optional_computed("native_routing_cidr", Type::String).description(
            "Cilium's `ipv4NativeRoutingCIDR`. Default: `pod_cidr`, which is right: a range that \
             also covers the nodes stops Cilium from masquerading pod traffic, and Hetzner's \
             gateway silently drops packets from addresses it did not assign.",
        ))
        .attribute(Attribute::optional_computed("multi_datacenter", Type::Bool).description(
            "Whether the nodes span several Hetzner locations. Then the pod CIDR must lie inside \
             the network, whose routes carry pod traffic between locations. (Cilium skips \
             unreachable direct routes in every layout: cloud subnets are routed, layer 3.) \
             Default: `false`.",
        ))
        .attribute(Attribute::optional_computed("api_endpoint", Type::String).description(
            "Where nodes and clients reach the Kubernetes API: `first_control_plane` (the \
             default: the first control plane's private IP; free, but the endpoint dies with \
             that server) or `load_balancer` (a private Hetzner Load Balancer, which \
             `hct_cluster` creates, at `load_balancer_ip`, forwarding ports 6443 (Kubernetes), 50000 (Talos) and 50001 (trustd, for joining workers) to \
             every healthy control plane; Hetzner bills it monthly). Talos' Hetzner VIP (an alias \
             IP Talos moves itself) is not offered yet: see the private-cluster guide.",
        ))
        .attribute(Attribute::optional_computed("load_balancer_ip", Type::String).description(
            "The load balancer's private IP with `api_endpoint = \"load_balancer\"`: a host of \
             `node_subnet` outside every node CIDR, not the gateway. Default: the node \
             subnet's last usable host (`10.0.128.254` in `10.0.128.0/24`). Null with \
             `first_control_plane`.",
        ))
        .attribute(Attribute::computed("id", Type::String).description("A stable hash of the inputs."))
        .attribute(Attribute::computed("gateway", Type::String).description(
            "The network gateway (first host of `network_cidr`): every node's default route.",
        ))
        .attribute(Attribute::computed("node_cidrs", Type::list(Type::String)).description(
            "Exactly where nodes live: the control-plane CIDR, then each pool's CIDR in name \
             order. This is kubelet's `nodeIP.validSubnets`.",
        ))
        .attribute(
            Attribute::computed("control_plane_ips", Type::list(Type::String))
                .description("The control-plane nodes' fixed private IPs, node 1 first."),
        )
        .attribute(
            Attribute::computed("worker_ips", Type::map(Type::list(Type::String)))
                .description("Each pool's fixed private IPs, node 1 first."),
        )
        .attribute(Attribute::computed("cluster_endpoint", Type::String).description(
            "The Kubernetes API endpoint: `https://<first control-plane IP>:6443`, or \
             `https://<load_balancer_ip>:6443` with a load balancer.",
        ))
        .attribute(
            Attribute::computed("etcd_advertised_subnets", Type::list(Type::String))
                .description("etcd's `advertisedSubnets`: the control-plane CIDR."),
        )
        .attribute(Attribute::computed("max_nodes", Type::Number).description(
            "How many nodes the pod CIDR holds at `pod_cidr_mask_size`.",
        ))
        .attribute(Attribute::computed("placement_groups", Type::map(Type::Number)).description(
            "How many spread placement groups each pool needs (Hetzner allows 10 servers per \
             group); `cp` is the control plane.",
        ))
        .attribute(Attribute::computed("cilium_values", Type::String).description(
            "Helm values (JSON) for Cilium in native routing mode, consistent with this plan \
             and with Talos (KubePrism on `localhost:7445`, no kube-proxy).",
        ))
        .attribute(Attribute::computed("cilium_metadata_policy", Type::String).description(
            "A CiliumClusterwideNetworkPolicy (JSON manifest) that keeps pods from Hetzner's \
             metadata service at 169.254.169.254 and from the nodes' Talos API (port 50000: a \
             node in maintenance mode takes a config from anyone), with default deny off \
             (Cilium 1.15 or newer). Host-network pods are not Cilium endpoints and keep both \
             (the Hetzner CCM and CSI need the metadata service). Needed where configs are \
             delivered as user data (`config_delivery = \"user_data\"`), and against pods \
             reaching a node in maintenance mode; drop its port-50000 rules if pods are to use \
             Talos' own API access (`kubernetesTalosAPIAccess`).",
        ))
        .attribute(Attribute::computed("hccm_values", Type::String).description(
            "Helm values (JSON) for the Hetzner cloud controller manager with networking \
             (routes) enabled for the pod CIDR.",
        ))
        .attribute(Attribute::computed("mermaid", Type::String).description(
            "The plan as a Mermaid flowchart: the network and its gateway, the node subnet, the \
             API endpoint, the control plane and each pool with their CIDRs, node IPs and \
             placement groups, and the way out through the NAT box (drawn by its role: the plan \
             does not take its address). Render it in Markdown (GitHub, GitLab) or with \
             `mmdc`; large groups show their first and last nodes.",
        ))
        .attribute(Attribute::computed("json", Type::String).description(
            "The whole plan as one JSON document; `hct_cluster` and `hct_worker_pool` take it \
             as `network_plan`.",
        ))
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        let (input, mut diagnostics) = input_from(config);
        diagnostics.extend(network_plan::validate(&input));
        diagnostics
    }

    async fn read(&self, _ctx: &Context, config: &Value) -> (Option<Value>, Diagnostics) {
        let (input, mut diagnostics) = input_from(config);
        if diagnostics.has_errors() {
            return (None, diagnostics);
        }
        match network_plan::plan(&input) {
            Ok((plan, warnings)) => {
                diagnostics.extend(warnings);
                (Some(state(config, &plan)), diagnostics)
            }
            Err(errors) => {
                diagnostics.extend(errors);
                (None, diagnostics)
            }
        }
    }
}

/// Reads the configuration into the planner's input: unknown values become
/// `None`, left-out optional values their defaults.
fn input_from(config: &Value) -> (NetworkPlanInput, Diagnostics) {
    let mut diagnostics = Diagnostics::new();
    let string = |value: &Value| value.as_str().map(str::to_string);
    let mut group = |value: &Value, path: AttrPath| -> Option<NodeGroupInput> {
        value.as_map()?;
        let nodes = value.get("nodes");
        let whole_nodes = nodes.as_i64();
        if whole_nodes.is_none() && matches!(nodes, Value::Number(_)) {
            diagnostics.push(
                Diagnostic::error(
                    "Node count is not a whole number",
                    "Set `nodes` to a whole number such as 3.",
                )
                .at(path.attr_of("nodes")),
            );
        }
        Some(NodeGroupInput {
            cidr: string(value.get("cidr")),
            nodes: whole_nodes,
        })
    };
    let control_plane = group(config.get("control_plane"), AttrPath::attr("control_plane"));
    let worker_pools = match config.get("worker_pools") {
        Value::Null => Some(BTreeMap::new()),
        // A pool whose whole value is unknown hides its node count, so the
        // totals are unknown too.
        Value::Map(pools) => pools
            .iter()
            .map(|(name, pool)| {
                group(pool, AttrPath::attr("worker_pools").key(name)).map(|g| (name.clone(), g))
            })
            .collect(),
        _ => None,
    };
    let pod_cidr = string(config.get("pod_cidr"));
    let input = NetworkPlanInput {
        network_cidr: string(config.get("network_cidr")),
        node_subnet: string(config.get("node_subnet")),
        control_plane,
        worker_pools,
        service_cidr: string(config.get("service_cidr")),
        pod_cidr_mask_size: match config.get("pod_cidr_mask_size") {
            Value::Null => Some(DEFAULT_POD_CIDR_MASK_SIZE),
            other => other.as_i64(),
        },
        native_routing_cidr: match config.get("native_routing_cidr") {
            Value::Null => pod_cidr.clone(),
            other => string(other),
        },
        multi_datacenter: match config.get("multi_datacenter") {
            Value::Null => Some(false),
            other => other.as_bool(),
        },
        pod_cidr,
        api_endpoint: match config.get("api_endpoint") {
            Value::Null => Some(network_plan::FIRST_CONTROL_PLANE.to_owned()),
            other => string(other),
        },
        load_balancer_ip: match config.get("load_balancer_ip") {
            Value::Null => Some(None),
            other => string(other).map(Some),
        },
    };
    (input, diagnostics)
}

/// The data source's state: the configuration, defaults filled in, and every
/// computed attribute.
fn state(config: &Value, plan: &NetworkPlan) -> Value {
    let strings =
        |items: &[std::net::Ipv4Addr]| Value::strings(items.iter().map(ToString::to_string));
    let mut state = config.as_map().cloned().unwrap_or_default();
    let mut set = |name: &str, value: Value| {
        state.insert(name.to_string(), value);
    };
    set(
        "pod_cidr_mask_size",
        Value::int(i64::from(plan.pod_cidr_mask_size())),
    );
    set(
        "native_routing_cidr",
        Value::string(plan.native_routing_cidr().to_string()),
    );
    set("multi_datacenter", Value::Bool(plan.multi_datacenter()));
    set("id", Value::string(plan.id()));
    set(
        "api_endpoint",
        Value::string(match plan.api_endpoint() {
            network_plan::ApiEndpoint::FirstControlPlane => network_plan::FIRST_CONTROL_PLANE,
            network_plan::ApiEndpoint::LoadBalancer { .. } => network_plan::LOAD_BALANCER,
        }),
    );
    set(
        "load_balancer_ip",
        plan.load_balancer_ip()
            .map_or(Value::Null, |ip| Value::string(ip.to_string())),
    );
    set("gateway", Value::string(plan.gateway().to_string()));
    set(
        "node_cidrs",
        Value::strings(plan.node_cidrs().iter().map(ToString::to_string)),
    );
    set("control_plane_ips", strings(&plan.control_plane().ips));
    set(
        "worker_ips",
        Value::Map(
            plan.worker_pools()
                .iter()
                .map(|(name, pool)| (name.clone(), strings(&pool.ips)))
                .collect(),
        ),
    );
    set("cluster_endpoint", Value::string(plan.cluster_endpoint()));
    set(
        "etcd_advertised_subnets",
        Value::strings(
            plan.etcd_advertised_subnets()
                .iter()
                .map(ToString::to_string),
        ),
    );
    set("max_nodes", Value::int(i64::from(plan.max_nodes())));
    set(
        "placement_groups",
        Value::Map(
            plan.placement_groups()
                .into_iter()
                .map(|(name, groups)| (name, Value::int(i64::from(groups))))
                .collect(),
        ),
    );
    set(
        "cilium_values",
        Value::string(compact(&plan.cilium_values())),
    );
    set(
        "cilium_metadata_policy",
        Value::string(compact(&plan.cilium_metadata_policy())),
    );
    set("hccm_values", Value::string(compact(&plan.hccm_values())));
    set("mermaid", Value::string(plan.mermaid()));
    set("json", Value::string(compact(&plan.to_json())));
    Value::Map(state)
}

fn compact(json: &Json) -> String {
    json.to_string()
}
