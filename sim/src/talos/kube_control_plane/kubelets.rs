//! The emulated kubelets of a ring's nodes, talking to the real API server
//! each with its own client certificate (`system:node:<name>` in
//! `system:nodes`, from its TLS bootstrap with its config's bootstrap
//! token, `tls_bootstrap`; so the Node authorizer and NodeRestriction
//! judge what it does): a kubelet that runs registers its Node (with the
//! taints a kubelet registers with, `uninitialized` when the cloud
//! provider is external), files its kubelet-serving CSR, keeps its Lease
//! in `kube-node-lease` renewed every 10 s, and posts its status (`Ready`
//! once a CNI DaemonSet exists, as in `crate::kube::nodes`, and the Node
//! has its pod range; a strategic merge patch, and without addresses when
//! a cloud controller manager owns them) when it changes, else every 5
//! minutes, as a kubelet with node leases does; and on a control
//! plane keeps the mirror pods of its static pods. A kubelet that stops
//! just goes quiet: kube-controller-manager's node lifecycle controller
//! marks it `Unknown`. When asked (no CCM runs), the Node of a server
//! that no longer exists is deleted, as Hetzner's CCM would.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use tracing::debug;

use super::NodeView;
use super::client::{Client, ClientError};
use super::tls_bootstrap;
use crate::kube::csr;
use crate::kube::nodes::{self, NodeFacts};
use crate::talos::pki::CertificateAuthority;
use crate::talos::secret::Secret;

/// A kubelet's defaults: its Lease lasts 40 s and is renewed every
/// quarter of that; an unchanged status is posted again only after
/// `nodeStatusReportFrequency`.
const LEASE_SECONDS: u64 = 40;
const RENEW_SECONDS: u64 = LEASE_SECONDS / 4;
const REPORT_SECONDS: u64 = 300;

struct Kubelet {
    client: Client,
    /// When the status was last posted (unix seconds), and the status
    /// then.
    posted: Option<(u64, Value)>,
    /// When the Lease was last renewed.
    renewed: Option<u64>,
    mirror_pods: BTreeSet<String>,
}

pub struct Kubelets {
    base: String,
    ca: CertificateAuthority,
    external_cloud_provider: bool,
    running: BTreeMap<String, Kubelet>,
    /// What went wrong in the last pass, per node.
    problems: Vec<String>,
}

impl Kubelets {
    pub fn new(base: &str, ca: &CertificateAuthority, external_cloud_provider: bool) -> Self {
        Self {
            base: base.to_string(),
            ca: ca.clone(),
            external_cloud_provider,
            running: BTreeMap::new(),
            problems: Vec::new(),
        }
    }

    /// What went wrong in the last pass.
    pub fn problems(&self) -> Vec<String> {
        self.problems.clone()
    }

    /// One pass over the nodes `facts` describes, at `now` (unix seconds);
    /// with `servers` (every server's name), Nodes of none of them are
    /// deleted. Returns the Nodes as the API server listed them at its
    /// start.
    pub async fn sync(
        &mut self,
        admin: &Client,
        facts: &[NodeFacts],
        servers: Option<&BTreeSet<String>>,
        tokens: &BTreeMap<String, Secret>,
        now: u64,
    ) -> Result<Vec<NodeView>, ClientError> {
        self.problems.clear();
        let cni = cni_present(admin).await?;
        let registered = admin.get("/api/v1/nodes").await?;
        // Registered nodes by name.
        let known: BTreeMap<String, Value> = registered.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| Some((n["metadata"]["name"].as_str()?.to_string(), n.clone())))
            .collect();
        let views = registered.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(view)
            .collect();
        let gone = known
            .keys()
            .filter(|k| servers.is_some_and(|servers| !servers.contains(*k)))
            .filter(|k| !facts.iter().any(|f| &f.name == *k));
        for gone in gone {
            admin
                .call("DELETE", &format!("/api/v1/nodes/{gone}"), "", None)
                .await?;
            self.running.remove(gone);
        }
        for fact in facts {
            if !fact.kubelet_running {
                self.running.remove(&fact.name);
                continue;
            }
            // The CNI sets a node up once it has its pod range
            // (kube-controller-manager's to give): only then Ready.
            let registered = known.get(&fact.name);
            let network_ready = cni && registered.is_some_and(|n| n["spec"]["podCIDR"].is_string());
            let Some(token) = tokens.get(&fact.name) else {
                continue;
            };
            if let Err(e) = self
                .beat(admin, fact, token, network_ready, registered, now)
                .await
            {
                self.problems.push(format!("{}: {e}", fact.name));
                self.running.remove(&fact.name);
            }
        }
        Ok(views)
    }

    async fn beat(
        &mut self,
        admin: &Client,
        fact: &NodeFacts,
        token: &Secret,
        cni: bool,
        registered: Option<&Value>,
        now: u64,
    ) -> Result<(), String> {
        if !self.running.contains_key(&fact.name) {
            let user =
                tls_bootstrap::client_certificate(&self.base, &self.ca, token, &fact.name).await?;
            let client = Client::new(&self.base, &self.ca, &user).map_err(|e| e.to_string())?;
            self.running.insert(
                fact.name.clone(),
                Kubelet {
                    client,
                    posted: None,
                    renewed: None,
                    mirror_pods: BTreeSet::new(),
                },
            );
        }
        let external = self.external_cloud_provider;
        let kubelet = self.running.get_mut(&fact.name).expect("inserted above");
        let desired = nodes::node(fact, cni, registered, now);
        if registered.is_none() {
            register(&kubelet.client, admin, fact, &desired, external).await?;
            kubelet.posted = None;
            kubelet.renewed = None;
            kubelet.mirror_pods.clear();
        }
        let mut status = status_of(&desired);
        if external && let Some(fields) = status.as_object_mut() {
            // The cloud controller manager's to set, after registration.
            fields.remove("addresses");
        }
        let unchanged = |last: &Value| without_heartbeats(last) == without_heartbeats(&status);
        // Compared with its own last post: a Ready the node lifecycle
        // controller set Unknown meanwhile is posted back at once, since
        // the kubelet's condition then takes a new transition time.
        let report = match &kubelet.posted {
            None => true,
            Some((at, last)) => now >= at + REPORT_SECONDS || !unchanged(last),
        };
        if report {
            let path = format!("/api/v1/nodes/{}/status", fact.name);
            let patch = json!({"status": status});
            (kubelet.client.strategic_patch(&path, &patch).await)
                .map_err(|e| e.to_string())?
                .into_result("post its status")?;
            kubelet.posted = Some((now, status));
        }
        if kubelet.renewed.is_none_or(|at| now >= at + RENEW_SECONDS) {
            renew_lease(&kubelet.client, &fact.name, now).await?;
            kubelet.renewed = Some(now);
        }
        if fact.control_plane {
            for pod in nodes::static_pods(fact, now) {
                let name = pod["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if !kubelet.mirror_pods.contains(&name)
                    && mirror(&kubelet.client, &fact.name, pod).await?
                {
                    kubelet.mirror_pods.insert(name);
                }
            }
        }
        Ok(())
    }
}

/// A Node as `/_sim/state` shows it.
fn view(node: &Value) -> NodeView {
    let text = |v: &Value| v.as_str().map(str::to_string);
    NodeView {
        name: text(&node["metadata"]["name"]).unwrap_or_default(),
        ready: node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready")
            .and_then(|c| text(&c["status"]))
            .unwrap_or_else(|| "Unknown".into()),
        provider_id: text(&node["spec"]["providerID"]),
        pod_cidr: text(&node["spec"]["podCIDR"]),
        taints: node["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| text(&t["key"]))
            .collect(),
    }
}

/// A status with the conditions' heartbeat times left out: what tells a
/// change from a heartbeat.
fn without_heartbeats(status: &Value) -> Value {
    let mut status = status.clone();
    for condition in status["conditions"].as_array_mut().into_iter().flatten() {
        if let Some(fields) = condition.as_object_mut() {
            fields.remove("lastHeartbeatTime");
        }
    }
    status
}

/// The status a kubelet posts (conditions, addresses, node info, capacity).
fn status_of(node: &Value) -> Value {
    let mut status = node["status"].clone();
    let capacity =
        json!({"cpu": "2", "memory": "3900Mi", "pods": "110", "ephemeral-storage": "38Gi"});
    status["capacity"] = capacity.clone();
    status["allocatable"] = capacity;
    status
}

/// Labels a kubelet may not set on its own Node (NodeRestriction): Talos
/// applies them on a control plane with its admin credentials.
const RESTRICTED_LABELS: &str = "node-role.kubernetes.io/";

/// Creates the Node as a kubelet registers it, then files its serving CSR;
/// the labels a kubelet may not set come after, from Talos.
async fn register(
    client: &Client,
    admin: &Client,
    fact: &NodeFacts,
    desired: &Value,
    external: bool,
) -> Result<(), String> {
    let mut node = desired.clone();
    let mut restricted = serde_json::Map::new();
    if let Some(labels) = node["metadata"]["labels"].as_object_mut() {
        labels.retain(|key, value| {
            let own = !key.starts_with(RESTRICTED_LABELS);
            if !own {
                restricted.insert(key.clone(), value.clone());
            }
            own
        });
    }
    node["status"] = status_of(desired);
    let mut taints: Vec<Value> = node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["key"] == "node-role.kubernetes.io/control-plane")
        .cloned()
        .collect();
    taints.push(json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}));
    if external {
        taints.push(json!({"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}));
    }
    node["spec"]["taints"] = Value::Array(taints);
    let answer = client
        .post("/api/v1/nodes", &node)
        .await
        .map_err(|e| e.to_string())?;
    if !answer.ok() && answer.status != 409 {
        return Err(format!("cannot register: {}", answer.why()));
    }
    if !restricted.is_empty() {
        let patch = json!({"metadata": {"labels": restricted}});
        let path = format!("/api/v1/nodes/{}", fact.name);
        (admin.patch(&path, &patch).await)
            .map_err(|e| e.to_string())?
            .into_result("label the node")?;
    }
    let mut request = csr::kubelet_csr(&fact.name, fact.ip);
    request["metadata"] = json!({"generateName": "csr-"});
    for field in ["username", "groups"] {
        if let Some(spec) = request["spec"].as_object_mut() {
            spec.remove(field);
        }
    }
    if let Some(object) = request.as_object_mut() {
        object.remove("status");
    }
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    (client.post(path, &request).await)
        .map_err(|e| e.to_string())?
        .into_result("file its serving CSR")?;
    debug!(node = fact.name, "emulated kubelet registered");
    Ok(())
}

async fn renew_lease(client: &Client, name: &str, now: u64) -> Result<(), String> {
    let micro = format!(
        "{}.000000Z",
        crate::kube::timestamp(now).trim_end_matches('Z')
    );
    let spec =
        json!({"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": micro});
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}");
    let answer = client
        .patch(&path, &json!({"spec": spec}))
        .await
        .map_err(|e| e.to_string())?;
    if answer.status == 404 {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": spec,
        });
        let collection = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
        (client.post(collection, &lease).await)
            .map_err(|e| e.to_string())?
            .into_result("create its lease")?;
        return Ok(());
    }
    answer.into_result("renew its lease").map(|_| ())
}

/// Creates the mirror pod of a static pod (owned by the Node, as the
/// kubelet makes them) and posts it Running; true when it exists.
async fn mirror(client: &Client, node: &str, mut pod: Value) -> Result<bool, String> {
    let found = client
        .get(&format!("/api/v1/nodes/{node}"))
        .await
        .map_err(|e| e.to_string())?;
    let Some(uid) = found.body["metadata"]["uid"].as_str() else {
        return Ok(false);
    };
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    pod["metadata"]["annotations"]["kubernetes.io/config.mirror"] = json!("hct-sim");
    pod["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1", "kind": "Node", "name": node, "uid": uid, "controller": true,
    }]);
    let status = pod["status"].take();
    let path = "/api/v1/namespaces/kube-system/pods";
    let answer = client.post(path, &pod).await.map_err(|e| e.to_string())?;
    if !answer.ok() && answer.status != 409 {
        return Err(format!("cannot create mirror pod {name}: {}", answer.why()));
    }
    let path = format!("{path}/{name}/status");
    (client.patch(&path, &json!({"status": status})).await)
        .map_err(|e| e.to_string())?
        .into_result("post its mirror pod's status")?;
    Ok(true)
}

/// Whether a CNI DaemonSet exists, by the rule of `crate::kube::nodes`.
async fn cni_present(admin: &Client) -> Result<bool, ClientError> {
    let answer = admin.get("/apis/apps/v1/daemonsets").await?;
    Ok(answer.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .any(nodes::is_cni_daemonset))
}
