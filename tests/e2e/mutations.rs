//! Mutation suite: wrong settings injected into hct's machine configs
//! through `config_patches`, each of which must be caught — refused at plan
//! time with a diagnostic naming `config_patches` and the cause, or failing
//! the apply with a diagnostic naming the node and the cause — and none of
//! which may give a cluster that hct reports healthy. Runs the real CLI
//! against one hct-sim, each mutation in its own workspace and cluster (one
//! control plane, one worker, addresses of their own in the seeded
//! network), a few at a time, next to an unmutated cluster that must come
//! up (so the harness itself is known to work). Prints the score.

use crate::support;

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hct::hcloud::PrivateServer;
use hct::network_plan::{self, NetworkPlan, NetworkPlanInput, NodeGroupInput};
use hct::secret::Secret;
use hct::talos::api::{AdminCredentials, NodeAddress, TalosClient, Trust};
use hct::talos::{NodeConfigInput, Role, Secrets};
use hct_sim::SimHandle;
use serde_json::json;
use serde_yaml_ng::Value as Yaml;
use support::Workspace;
use support::unwrapped;
use tokio::time::Instant;

/// Where a patch goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    ControlPlane,
    Workers,
}

struct Mutation {
    name: &'static str,
    talos: &'static str,
    target: Target,
    patch: String,
    /// Words (any one) that name the cause in the diagnostic.
    cause: &'static [&'static str],
}

/// The hosts block `index` (1..=15) of 10.0.128.0/24 gives a cluster:
/// control plane in the lower /29, workers in the upper.
fn blocks(index: u32) -> (String, String) {
    (
        format!("10.0.128.{}/29", index * 16),
        format!("10.0.128.{}/29", index * 16 + 8),
    )
}

const MAIN_TF: &str = r#"
terraform {
  required_providers {
    hct = { source = "registry.hct.internal/hct/hct" }
  }
}
provider "hct" {}

variable "name" { type = string }
variable "network_id" { type = number }
variable "image_id" { type = string }
variable "talos_version" { type = string }
variable "cp_cidr" { type = string }
variable "pool_cidr" { type = string }
variable "cp_patches" { type = list(string) }
variable "pool_patches" { type = list(string) }

data "hct_network_plan" "this" {
  network_cidr  = "10.0.0.0/16"
  node_subnet   = "10.0.128.0/24"
  control_plane = { cidr = var.cp_cidr, nodes = 1 }
  worker_pools  = { general = { cidr = var.pool_cidr, nodes = 1 } }
  service_cidr  = "10.0.192.0/21"
  pod_cidr      = "10.0.224.0/19"
}

resource "hct_cluster" "this" {
  name           = var.name
  network_id     = var.network_id
  network_plan   = data.hct_network_plan.this.json
  talos_version  = var.talos_version
  image_id       = var.image_id
  control_plane  = { server_type = "cx23", location = "nbg1" }
  config_patches = var.cp_patches
  timeouts {
    create = "25s"
  }
}

resource "hct_worker_pool" "general" {
  worker_join    = hct_cluster.this.worker_join
  name           = "general"
  server_type    = "cx23"
  location       = "nbg1"
  config_patches = var.pool_patches
  timeouts {
    create = "25s"
  }
}
"#;

/// The control plane of the unmutated cluster (block 1): a live endpoint
/// of another cluster.
const OTHER_CLUSTER_ENDPOINT: &str = "https://10.0.128.17:6443";

fn mutations() -> Vec<Mutation> {
    let json6902 = |ops: serde_json::Value| ops.to_string();
    vec![
        Mutation {
            name: "kubelet validSubnets hold no node",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            patch: json6902(json!([{"op": "replace",
                "path": "/machine/kubelet/nodeIP/validSubnets", "value": ["10.0.64.0/24"]}])),
            cause: &["validSubnets"],
        },
        Mutation {
            name: "etcd advertisedSubnets hold no node",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            patch: json6902(json!([{"op": "replace",
                "path": "/cluster/etcd/advertisedSubnets", "value": ["10.0.64.0/24"]}])),
            cause: &["advertisedSubnets"],
        },
        Mutation {
            name: "control-plane endpoint where no node runs",
            talos: "v1.12.6",
            target: Target::Workers,
            patch: "cluster:\n  controlPlane:\n    endpoint: https://10.0.128.250:6443\n".into(),
            cause: &["endpoint"],
        },
        Mutation {
            name: "default route on eth7 (LinkConfig, v1.12)",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            patch: "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\n$patch: delete\n---\n\
                    apiVersion: v1alpha1\nkind: LinkConfig\nname: eth7\nroutes:\n  - gateway: 10.0.0.1\n"
                .into(),
            cause: &["default route", "eth7"],
        },
        Mutation {
            name: "default route on eth7 (machine.network.interfaces, v1.11)",
            talos: "v1.11.3",
            target: Target::ControlPlane,
            patch: json6902(json!([{"op": "replace",
                "path": "/machine/network/interfaces/0/interface", "value": "eth7"}])),
            cause: &["default route", "eth7"],
        },
        Mutation {
            name: "hostname left to Talos (auto: stable)",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            patch: "apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n---\n\
                    apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n"
                .into(),
            cause: &["hostname"],
        },
        Mutation {
            name: "misspelled kubelet key",
            talos: "v1.12.6",
            target: Target::Workers,
            patch: "machine:\n  kubelet:\n    extraArg:\n      v: \"2\"\n".into(),
            cause: &["machine.kubelet.extraArg"],
        },
        Mutation {
            name: "service subnet inside the node subnet",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            patch: json6902(json!([{"op": "replace",
                "path": "/cluster/network/serviceSubnets", "value": ["10.0.128.0/24"]}])),
            cause: &["serviceSubnets", "service range", "service subnet"],
        },
        Mutation {
            name: "no default route",
            talos: "v1.12.6",
            target: Target::Workers,
            patch: "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\n$patch: delete\n".into(),
            cause: &["default route"],
        },
        Mutation {
            name: "default route via a wrong gateway",
            talos: "v1.11.3",
            target: Target::ControlPlane,
            patch: json6902(json!([{"op": "replace",
                // routes[0] is the on-link route to the gateway; [1] the default.
                "path": "/machine/network/interfaces/0/routes/1/gateway", "value": "10.0.128.2"}])),
            cause: &["10.0.128.2"],
        },
        Mutation {
            name: "workers with another cluster's control-plane endpoint",
            talos: "v1.12.6",
            target: Target::Workers,
            patch: format!("cluster:\n  controlPlane:\n    endpoint: {OTHER_CLUSTER_ENDPOINT}\n"),
            cause: &["endpoint"],
        },
        Mutation {
            name: "installer image of another release",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            patch: "machine:\n  install:\n    image: factory.talos.dev/hcloud-installer/\
                    376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.11.3\n"
                .into(),
            cause: &["install.image", "installer"],
        },
    ]
}

/// The same wrong settings at Talos v1.14, written where v1.14 keeps
/// them (its Kubernetes documents), and an old-form patch beside them.
fn mutations_v1_14() -> Vec<Mutation> {
    let json6902 = |ops: serde_json::Value| ops.to_string();
    let talos = "v1.14.0";
    vec![
        Mutation {
            name: "kubelet validSubnets hold no node (KubeNodeConfig)",
            talos,
            target: Target::ControlPlane,
            patch: "apiVersion: v1alpha1\nkind: KubeNodeConfig\n$patch: delete\n---\n\
                    apiVersion: v1alpha1\nkind: KubeNodeConfig\nnodeIP:\n  validSubnets: [10.0.64.0/24]\n"
                .into(),
            cause: &["validSubnets"],
        },
        Mutation {
            name: "etcd advertisedSubnets hold no node (v1alpha1 at v1.14)",
            talos,
            target: Target::ControlPlane,
            patch: json6902(json!([{"op": "replace",
                "path": "/cluster/etcd/advertisedSubnets", "value": ["10.0.64.0/24"]}])),
            cause: &["advertisedSubnets"],
        },
        Mutation {
            name: "control-plane endpoint where no node runs (KubeClusterConfig)",
            talos,
            target: Target::Workers,
            patch: "apiVersion: v1alpha1\nkind: KubeClusterConfig\nendpoint: https://10.0.128.250:6443\n"
                .into(),
            cause: &["endpoint"],
        },
        Mutation {
            name: "misspelled kubelet key (KubeletConfig)",
            talos,
            target: Target::Workers,
            patch: "apiVersion: v1alpha1\nkind: KubeletConfig\nextraArg:\n  v: \"2\"\n".into(),
            cause: &["extraArg"],
        },
        Mutation {
            name: "service subnet inside the node subnet (KubeNetworkConfig)",
            talos,
            target: Target::ControlPlane,
            patch: "apiVersion: v1alpha1\nkind: KubeNetworkConfig\nserviceSubnets: [10.0.128.0/24]\n"
                .into(),
            cause: &["serviceSubnets", "service range", "service subnet"],
        },
        Mutation {
            name: "workers with another cluster's control-plane endpoint (KubeClusterConfig)",
            talos,
            target: Target::Workers,
            patch: format!(
                "apiVersion: v1alpha1\nkind: KubeClusterConfig\nendpoint: {OTHER_CLUSTER_ENDPOINT}\n"
            ),
            cause: &["endpoint"],
        },
        Mutation {
            name: "old-form node IPs beside KubeNodeConfig",
            talos,
            target: Target::ControlPlane,
            patch: "machine:\n  kubelet:\n    nodeIP:\n      validSubnets: [10.0.128.0/24]\n".into(),
            cause: &["KubeNodeConfig document and machine.kubelet.nodeIP"],
        },
        Mutation {
            name: "hostname left to Talos (auto: stable, v1.14)",
            talos,
            target: Target::ControlPlane,
            patch: "apiVersion: v1alpha1\nkind: HostnameConfig\n$patch: delete\n---\n\
                    apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n"
                .into(),
            cause: &["hostname"],
        },
        Mutation {
            name: "installer image of another release (UnattendedInstallConfig)",
            talos,
            target: Target::ControlPlane,
            patch: "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller:\n  image: factory.talos.dev/hcloud-installer/\
                    376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.13.9\n"
                .into(),
            cause: &["installer.image", "installer"],
        },
        Mutation {
            name: "no default route (v1.14)",
            talos,
            target: Target::Workers,
            patch: "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\n$patch: delete\n".into(),
            cause: &["default route"],
        },
    ]
}

#[derive(Debug)]
enum Verdict {
    RefusedAtPlan(String),
    FailedApply(String),
    /// Not caught: healthy, or a diagnostic that names neither the node
    /// nor the cause.
    Missed(String),
}

fn workspace(
    sim: &SimHandle,
    index: u32,
    name: &str,
    talos: &str,
    patches: (&[String], &[String]),
) -> Workspace {
    let (cp_cidr, pool_cidr) = blocks(index);
    let mut ws = Workspace::dev_override(&[("main.tf", MAIN_TF)]);
    let vars = json!({
        "name": name,
        "network_id": support::sim::seeded_network(sim),
        "image_id": support::sim::seeded_talos_image(sim, talos, "amd64").to_string(),
        "talos_version": talos,
        "cp_cidr": cp_cidr,
        "pool_cidr": pool_cidr,
        "cp_patches": patches.0,
        "pool_patches": patches.1,
    });
    ws.write("vars.auto.tfvars.json", &vars.to_string());
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url())
        .env("HCT_POLL_INTERVAL", "50ms");
    ws
}

fn judge(sim: &SimHandle, index: u32, mutation: &Mutation) -> Verdict {
    let name = format!("mut{index}");
    let none: &[String] = &[];
    let patch = std::slice::from_ref(&mutation.patch);
    let patches = match mutation.target {
        Target::ControlPlane => (patch, none),
        Target::Workers => (none, patch),
    };
    let ws = workspace(sim, index, &name, mutation.talos, patches);
    let names_cause = |text: &str| mutation.cause.iter().any(|c| text.contains(c));
    let plan = ws.terraform(&["plan", "-out=tfplan"]);
    if !plan.success() {
        let text = unwrapped(&plan.stderr);
        return if text.contains("config_patches") && names_cause(&text) {
            Verdict::RefusedAtPlan(text)
        } else {
            Verdict::Missed(format!(
                "the plan failed without naming config_patches and the cause:\n{plan}"
            ))
        };
    }
    let apply = ws.terraform(&["apply", "tfplan"]);
    let text = unwrapped(&apply.stderr);
    let node = match mutation.target {
        Target::ControlPlane => format!("{name}-cp-1"),
        Target::Workers => format!("{name}-general-1"),
    };
    if apply.success() {
        Verdict::Missed(format!(
            "the apply succeeded: hct reports the cluster healthy\n{apply}"
        ))
    } else if text.contains(&node) && names_cause(&text) {
        Verdict::FailedApply(text)
    } else {
        Verdict::Missed(format!(
            "the apply failed without naming {node} and the cause:\n{apply}"
        ))
    }
}

/// The first "Error: …" paragraph of a diagnostic, for the report.
fn headline(text: &str) -> &str {
    let start = text.find("Error:").unwrap_or(0);
    let rest = &text[start..];
    &rest[..rest.len().min(400)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wrong_setting_is_caught() {
    judge_all(&mutations(), "v1.12.6").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wrong_setting_in_talos_v1_14_documents_is_caught() {
    judge_all(&mutations_v1_14(), "v1.14.0").await;
}

/// Runs `mutations` against one sim, beside an unmutated cluster on
/// `baseline`, and asserts every one was caught.
async fn judge_all(mutations: &[Mutation], baseline: &str) {
    let sim = support::sim::start().await;
    let started = Instant::now();
    let results: Arc<Mutex<Vec<(usize, Verdict)>>> = Arc::default();
    let queue: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new((0..mutations.len()).rev().collect()));
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            // The unmutated cluster in block 1: it must come up healthy.
            let baseline = scope.spawn(|| {
                let ws = workspace(&sim, 1, "baseline", baseline, (&[], &[]));
                ws.terraform(&["apply", "-auto-approve"])
            });
            for _ in 0..3 {
                scope.spawn(|| {
                    loop {
                        let Some(i) = queue.lock().unwrap().pop() else {
                            break;
                        };
                        let verdict = judge(&sim, i as u32 + 2, &mutations[i]);
                        results.lock().unwrap().push((i, verdict));
                    }
                });
            }
            let baseline = baseline.join().unwrap();
            assert!(
                baseline.success(),
                "the unmutated cluster must come up, or the suite judges nothing:\n{baseline}"
            );
        });
    });
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort_by_key(|(i, _)| *i);
    let caught = results
        .iter()
        .filter(|(_, v)| !matches!(v, Verdict::Missed(_)))
        .count();
    eprintln!("mutations ({:.0?}):", started.elapsed());
    for (i, verdict) in &results {
        let (how, detail) = match verdict {
            Verdict::RefusedAtPlan(t) => ("refused at plan", headline(t)),
            Verdict::FailedApply(t) => ("failed the apply", headline(t)),
            Verdict::Missed(t) => ("MISSED", t.as_str()),
        };
        eprintln!("- {}: {how}\n    {detail}", mutations[*i].name);
    }
    eprintln!("mutation score: {caught}/{} caught", results.len());
    assert_eq!(results.len(), mutations.len());
    assert_eq!(
        caught,
        mutations.len(),
        "some wrong settings were not caught (see above)"
    );
}

// The emulator as the judge: hct's own configs, with each wrong setting
// written into them after hct made them (so hct's checks never see it),
// given to emulated nodes in user data. The node must not become healthy,
// and the sim must say why in Talos' words.

/// A 1 + 1 plan in block `index` of 10.0.128.0/24 (as `blocks`).
fn small_plan(index: u32) -> NetworkPlan {
    small_plan_and(index, None)
}

/// [`small_plan`], with a one-node pool `extra` in the first block of
/// `index + 1` (which no other pair may use then).
pub(crate) fn small_plan_and(index: u32, extra: Option<&str>) -> NetworkPlan {
    let (cp, pool) = blocks(index);
    let group = |cidr: String| NodeGroupInput {
        cidr: Some(cidr),
        nodes: Some(1),
    };
    let mut pools: std::collections::BTreeMap<String, NodeGroupInput> =
        [("general".to_owned(), group(pool))].into();
    if let Some(extra) = extra {
        pools.insert(extra.to_owned(), group(blocks(index + 1).0));
    }
    let input = NetworkPlanInput {
        network_cidr: Some("10.0.0.0/16".into()),
        node_subnet: Some("10.0.128.0/24".into()),
        control_plane: Some(group(cp)),
        worker_pools: Some(pools),
        service_cidr: Some("10.0.192.0/21".into()),
        pod_cidr: Some("10.0.224.0/19".into()),
        pod_cidr_mask_size: Some(24),
        native_routing_cidr: Some("10.0.224.0/19".into()),
        multi_datacenter: Some(false),
        api_endpoint: Some("first_control_plane".to_owned()),
        load_balancer_ip: Some(None),
    };
    network_plan::plan(&input).unwrap().0
}

fn hct_config(
    plan: &NetworkPlan,
    secrets: &Secrets,
    talos: &str,
    name: &str,
    role: Role,
    inline_manifests: &[(String, String)],
) -> String {
    let input = NodeConfigInput {
        cluster_name: "judged".into(),
        talos_version: talos.parse().unwrap(),
        kubernetes_version: None,
        schematic_id: hct_sim::seed::TALOS_SCHEMATIC.into(),
        install_disk: None,
        hostname: name.into(),
        role,
        node_labels: Default::default(),
        node_taints: Default::default(),
        inline_manifests: inline_manifests.to_vec(),
        config_patches: Vec::new(),
        interface: None,
        ip: None,
    };
    hct::talos::generate(&input, plan, secrets)
        .unwrap()
        .into_string()
}

/// Edits the YAML documents of a config.
fn rewrite(config: &str, edit: &Edit) -> String {
    let mut documents: Vec<Yaml> = config
        .split("\n---\n")
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    edit(&mut documents);
    documents
        .iter()
        .map(|d| serde_yaml_ng::to_string(d).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
}

fn at<'a>(doc: &'a mut Yaml, path: &[&str]) -> &'a mut Yaml {
    path.iter().fold(doc, |d, key| &mut d[*key])
}

fn link_config(documents: &mut [Yaml]) -> &mut Yaml {
    documents
        .iter_mut()
        .find(|d| d["kind"] == "LinkConfig")
        .expect("a LinkConfig document")
}

/// A change to a config's YAML documents.
pub(crate) type Edit = dyn Fn(&mut Vec<Yaml>);

struct Judged {
    name: &'static str,
    talos: &'static str,
    target: Target,
    edit: Box<Edit>,
    /// What the sim must say about the node.
    says: &'static str,
}

fn judged() -> Vec<Judged> {
    let list = |items: &[&str]| Yaml::Sequence(items.iter().map(|s| Yaml::from(*s)).collect());
    vec![
        Judged {
            name: "kubelet validSubnets hold no node",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            edit: Box::new(move |d| {
                *at(&mut d[0], &["machine", "kubelet", "nodeIP", "validSubnets"]) =
                    list(&["10.0.64.0/24"])
            }),
            says: "no suitable node IP found",
        },
        Judged {
            name: "etcd advertisedSubnets hold no node",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            edit: Box::new(move |d| {
                *at(&mut d[0], &["cluster", "etcd", "advertisedSubnets"]) = list(&["10.0.64.0/24"])
            }),
            says: "Waiting for etcd spec",
        },
        Judged {
            name: "control-plane endpoint where no node runs",
            talos: "v1.12.6",
            target: Target::Workers,
            edit: Box::new(|d| {
                *at(&mut d[0], &["cluster", "controlPlane", "endpoint"]) =
                    "https://10.0.128.250:6443".into()
            }),
            says: "no control plane answers",
        },
        Judged {
            name: "default route on eth7 (LinkConfig, v1.12)",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            edit: Box::new(|d| link_config(d)["name"] = "eth7".into()),
            says: "on link eth7",
        },
        Judged {
            name: "default route on eth7 (machine.network.interfaces, v1.11)",
            talos: "v1.11.3",
            target: Target::ControlPlane,
            edit: Box::new(|d| {
                at(&mut d[0], &["machine", "network", "interfaces"])[0]["interface"] = "eth7".into()
            }),
            says: "on link eth7",
        },
        Judged {
            name: "misspelled kubelet key",
            talos: "v1.12.6",
            target: Target::Workers,
            edit: Box::new(|d| at(&mut d[0], &["machine", "kubelet"])["extraArg"] = "x".into()),
            says: "unknown keys found during decoding:\nmachine:\n    kubelet:\n        extraArg: x",
        },
        Judged {
            name: "service subnet inside the node subnet",
            talos: "v1.12.6",
            target: Target::ControlPlane,
            edit: Box::new(move |d| {
                *at(&mut d[0], &["cluster", "network", "serviceSubnets"]) = list(&["10.0.128.0/24"])
            }),
            says: "no suitable node IP found",
        },
        Judged {
            name: "no default route",
            talos: "v1.12.6",
            target: Target::Workers,
            edit: Box::new(|d| link_config(d)["routes"] = Yaml::Sequence(vec![])),
            says: "no default route",
        },
        Judged {
            name: "default route via a wrong gateway",
            talos: "v1.11.3",
            target: Target::ControlPlane,
            edit: Box::new(|d| {
                // routes[0] is the on-link route to the gateway; [1] the default.
                at(&mut d[0], &["machine", "network", "interfaces"])[0]["routes"][1]["gateway"] =
                    "10.0.128.2".into()
            }),
            says: "only the network gateway 10.0.0.1 forwards",
        },
        Judged {
            name: "workers with another cluster's control-plane endpoint",
            talos: "v1.12.6",
            target: Target::Workers,
            edit: Box::new(|d| {
                *at(&mut d[0], &["cluster", "controlPlane", "endpoint"]) =
                    OTHER_CLUSTER_ENDPOINT.into()
            }),
            says: "refuses the node's token",
        },
    ]
}

/// A config's document of `kind`.
pub(crate) fn kind_doc<'a>(documents: &'a mut [Yaml], kind: &str) -> &'a mut Yaml {
    documents
        .iter_mut()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("a {kind} document"))
}

/// The wrong settings of `judged` at Talos v1.14, where v1.14 keeps them.
fn judged_v1_14() -> Vec<Judged> {
    let list = |items: &[&str]| Yaml::Sequence(items.iter().map(|s| Yaml::from(*s)).collect());
    let talos = "v1.14.0";
    vec![
        Judged {
            name: "kubelet validSubnets hold no node (KubeNodeConfig)",
            talos,
            target: Target::ControlPlane,
            edit: Box::new(move |d| {
                *at(kind_doc(d, "KubeNodeConfig"), &["nodeIP", "validSubnets"]) =
                    list(&["10.0.64.0/24"])
            }),
            says: "no suitable node IP found",
        },
        Judged {
            name: "etcd advertisedSubnets hold no node (v1.14)",
            talos,
            target: Target::ControlPlane,
            edit: Box::new(move |d| {
                *at(&mut d[0], &["cluster", "etcd", "advertisedSubnets"]) = list(&["10.0.64.0/24"])
            }),
            says: "Waiting for etcd spec",
        },
        Judged {
            name: "control-plane endpoint where no node runs (KubeClusterConfig)",
            talos,
            target: Target::Workers,
            edit: Box::new(|d| {
                kind_doc(d, "KubeClusterConfig")["endpoint"] = "https://10.0.128.250:6443".into()
            }),
            says: "no control plane answers",
        },
        Judged {
            name: "misspelled kubelet key (KubeletConfig)",
            talos,
            target: Target::Workers,
            edit: Box::new(|d| kind_doc(d, "KubeletConfig")["extraArg"] = "x".into()),
            says: "unknown keys found during decoding",
        },
        Judged {
            name: "service subnet inside the node subnet (KubeNetworkConfig)",
            talos,
            target: Target::ControlPlane,
            edit: Box::new(move |d| {
                kind_doc(d, "KubeNetworkConfig")["serviceSubnets"] = list(&["10.0.128.0/24"])
            }),
            says: "no suitable node IP found",
        },
        Judged {
            name: "workers with another cluster's control-plane endpoint (KubeClusterConfig)",
            talos,
            target: Target::Workers,
            edit: Box::new(|d| {
                kind_doc(d, "KubeClusterConfig")["endpoint"] = OTHER_CLUSTER_ENDPOINT.into()
            }),
            says: "refuses the node's token",
        },
        Judged {
            name: "node IPs in v1alpha1 beside KubeNodeConfig",
            talos,
            target: Target::Workers,
            edit: Box::new(move |d| {
                *at(&mut d[0], &["machine", "kubelet"]) = Yaml::Mapping(Default::default());
                *at(&mut d[0], &["machine", "kubelet", "nodeIP", "validSubnets"]) =
                    list(&["10.0.128.0/24"])
            }),
            says: "is already set in v1alpha1 config",
        },
        Judged {
            name: "no default route (v1.14)",
            talos,
            target: Target::Workers,
            edit: Box::new(|d| link_config(d)["routes"] = Yaml::Sequence(vec![])),
            says: "no default route",
        },
    ]
}

fn node_state(sim: &SimHandle, name: &str) -> serde_json::Value {
    sim.state_json()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["talos"].clone())
        .unwrap_or_default()
}

/// The admin of hct's talosconfig for the cluster.
fn admin(plan: &NetworkPlan, secrets: &Secrets) -> Trust {
    let text = hct::talos::client_config::talosconfig("judged", plan, secrets).unwrap();
    let field = |key: &str| {
        let line = text
            .as_str()
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{key}: ")))
            .unwrap();
        use base64::Engine;
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(line)
                .unwrap(),
        )
        .unwrap()
    };
    Trust::Admin(AdminCredentials {
        os_ca: field("ca"),
        certificate: field("crt"),
        key: Secret::new(field("key")),
    })
}

/// Boots a control plane and a worker from hct's configs (`edit` applied
/// to the `target`'s; the control plane's with `inline_manifests`),
/// bootstraps the control plane if it answers, and returns both server
/// names once the sim has had time to settle.
pub(crate) async fn boot_pair(
    sim: &SimHandle,
    index: u32,
    talos: &str,
    target: Option<(Target, &Edit)>,
    inline_manifests: &[(String, String)],
) -> (String, String) {
    // A bundle of its own (pairs in one sim must not share a cluster's
    // identity), with an ECDSA service-account key: the pairs judge other
    // settings, and RSA-4096 costs about a second of CPU per pair.
    let secrets = Secrets::for_checking().unwrap();
    let pair = Pair {
        index,
        plan: &small_plan(index),
        pool: "general",
        secrets: &secrets,
    };
    boot(sim, &pair, talos, target, inline_manifests).await
}

/// A control plane and a worker of cluster `judged<index>`: the first
/// control plane of `plan` and the first node of its pool `pool`.
pub(crate) struct Pair<'a> {
    pub index: u32,
    pub plan: &'a NetworkPlan,
    pub pool: &'a str,
    pub secrets: &'a Secrets,
}

/// [`boot_pair`] of a given plan, pool and secrets.
pub(crate) async fn boot(
    sim: &SimHandle,
    pair: &Pair<'_>,
    talos: &str,
    target: Option<(Target, &Edit)>,
    inline_manifests: &[(String, String)],
) -> (String, String) {
    let Pair {
        index,
        plan,
        pool,
        secrets,
    } = *pair;
    let (cp, worker) = (
        format!("judged{index}-cp-1"),
        format!("judged{index}-{pool}-1"),
    );
    let mut cp_config = hct_config(
        plan,
        secrets,
        talos,
        &cp,
        Role::ControlPlane,
        inline_manifests,
    );
    let mut worker_config = hct_config(plan, secrets, talos, &worker, Role::Worker, &[]);
    match target {
        Some((Target::ControlPlane, edit)) => cp_config = rewrite(&cp_config, edit),
        Some((Target::Workers, edit)) => worker_config = rewrite(&worker_config, edit),
        None => {}
    }
    let cp_ip = plan.control_plane().ips[0];
    let worker_ip = plan.worker_pools()[pool].ips[0];
    let image = support::sim::seeded_talos_image(sim, talos, "amd64");
    let network = support::sim::seeded_network(sim);
    let client = support::sim::client(sim);
    for (name, ip, config) in [(&cp, cp_ip, cp_config), (&worker, worker_ip, worker_config)] {
        let spec = PrivateServer {
            name: name.clone(),
            server_type: "cx23".into(),
            location: "nbg1".into(),
            image: image.to_string(),
            network,
            ip,
            placement_group: None,
            labels: [("cluster".to_string(), format!("judged{index}"))].into(),
            user_data: Some(config),
            ssh_keys: vec![],
        };
        client
            .create_private_server(&spec, Duration::from_secs(120), |_| {})
            .await
            .unwrap();
    }
    let address = NodeAddress::new(
        IpAddr::V4(cp_ip),
        Some(hct::net::Proxy::new(sim.proxy_addr())),
    );
    let trust = admin(plan, secrets);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(mut talos) = TalosClient::connect(&address, &trust).await
            && talos.bootstrap().await.is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Long enough for a healthy pair to settle many times over (a wrong
    // setting does not heal with time).
    let patience = if target.is_none() { 30 } else { 3 };
    let settled = Instant::now() + Duration::from_secs(patience);
    while Instant::now() < settled {
        let healthy = [&cp, &worker]
            .iter()
            .all(|n| node_state(sim, n)["healthy"] == true);
        if healthy && target.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (cp, worker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_fails_each_wrong_setting_itself() {
    emulator_judges(judged(), "v1.12.6").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_fails_each_wrong_setting_in_talos_v1_14_documents() {
    emulator_judges(judged_v1_14(), "v1.14.0").await;
}

/// Boots each case's pair on one sim, beside an unmutated pair on
/// `baseline`, and asserts the emulator failed every one in Talos' words.
async fn emulator_judges(cases: Vec<Judged>, baseline: &str) {
    // Eleven pairs of servers at once poll their actions far faster than
    // Hetzner's hourly budget allows; that budget is not what is judged.
    let options = hct_sim::SimOptions {
        rate_limit: 1_000_000,
        ..hct_sim::SimOptions::seeded_fast()
    };
    let sim = hct_sim::Sim::start(options).await.unwrap();
    // The unmutated pair in block 1 comes up healthy (and is "another
    // cluster" for the last case).
    let (cp, worker) = boot_pair(&sim, 1, baseline, None, &[]).await;
    for name in [&cp, &worker] {
        let state = node_state(&sim, name);
        assert_eq!(
            state["healthy"], true,
            "the unmutated {name} must be healthy: {state}"
        );
    }
    // A few at a time: servers joining one network wait for each other's
    // attach actions (409 while the network changes), as on Hetzner.
    use futures_util::StreamExt;
    let verdicts: Vec<_> = futures_util::stream::iter(cases.iter().enumerate().map(|(i, case)| {
        let sim = &sim;
        async move {
            let index = i as u32 + 2;
            let target = Some((case.target, case.edit.as_ref()));
            let (cp, worker) = boot_pair(sim, index, case.talos, target, &[]).await;
            let node = match case.target {
                Target::ControlPlane => cp,
                Target::Workers => worker,
            };
            let state = node_state(sim, &node);
            let problem = state["problem"].as_str().unwrap_or_default().to_string();
            let ok = state["healthy"] != true && problem.contains(case.says);
            (ok, node, problem)
        }
    }))
    .buffered(4)
    .collect()
    .await;
    let mut caught = 0;
    for (case, (ok, node, problem)) in cases.iter().zip(verdicts) {
        caught += usize::from(ok);
        let verdict = if ok {
            "the emulator fails it"
        } else {
            "MISSED"
        };
        eprintln!("- {}: {verdict} ({node}: {problem})", case.name);
    }
    eprintln!("emulator score: {caught}/{} caught", cases.len());
    assert_eq!(
        caught,
        cases.len(),
        "the emulator let wrong settings through (see above)"
    );
}
