//! The cluster's add-ons as real processes, run where their pods would
//! run, while the ring's control plane runs:
//!
//! - kubelet-csr-approver, when a Deployment of it is stored: its
//!   container's arguments and environment, and a kubeconfig with a token
//!   of its ServiceAccount (from the TokenRequest API), so RBAC judges it
//!   with the role hct gave it;
//! - Hetzner's cloud controller manager, when the `hcloud` Secret is
//!   stored: as Hetzner's own deployment with networks runs it (routes
//!   for the pod ranges, the private network's addresses), with the
//!   Secret's token and network, against hct-sim's Hetzner API, as a
//!   cluster admin (its chart binds cluster-admin).
//!
//! A process restarts when what it is started from changes, and is
//! started again `RESTART_AFTER` after it exits (its exit said once).
//! Without its binary an add-on is not run; without hct-sim's API address,
//! no CCM.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::json;
use tracing::{info, warn};

use super::client::Client;
use super::files::{self, Layout, User};
use super::process::Component;
use super::spec::{ControlPlaneSpec, joined};
use crate::talos::pki;

/// What an add-on process was started from, and the process; or when it
/// last exited or failed to start, and why.
enum Running {
    Up {
        started_from: Vec<(String, String)>,
        process: Box<Component>,
    },
    Down {
        since: std::time::Instant,
        why: String,
    },
}

/// How long an add-on that exited is left down before it is started again.
const RESTART_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

pub struct Addons {
    approver_binary: Option<PathBuf>,
    ccm_binary: Option<PathBuf>,
    /// hct-sim's Hetzner API (`http://127.0.0.1:port/v1`).
    hetzner_api: String,
    approver: Option<Running>,
    ccm: Option<Running>,
}

const APPROVER: &str = "kubelet-csr-approver";
const HCLOUD_SECRET: &str = "hcloud";

impl Addons {
    pub fn new(approver: Option<PathBuf>, ccm: Option<PathBuf>, hetzner_api: String) -> Self {
        Self {
            approver_binary: approver,
            ccm_binary: ccm,
            hetzner_api,
            approver: None,
            ccm: None,
        }
    }

    /// One pass: start, restart or stop each add-on by what is stored.
    pub async fn sync(
        &mut self,
        admin: &Client,
        spec: &ControlPlaneSpec,
        layout: &Layout,
        base: &str,
    ) {
        if let Some(binary) = self.approver_binary.clone() {
            let wanted = approver_settings(admin).await;
            reconcile(&mut self.approver, wanted, |settings| {
                start_approver(admin, spec, layout, base, &binary, settings)
            })
            .await;
        }
        if let Some(binary) = self
            .ccm_binary
            .clone()
            .filter(|_| !self.hetzner_api.is_empty())
        {
            let wanted = ccm_settings(admin, spec, &self.hetzner_api).await;
            reconcile(&mut self.ccm, wanted, |settings| async move {
                start_ccm(spec, layout, base, &binary, settings)
            })
            .await;
        }
    }

    /// Whether Hetzner's CCM runs now.
    pub fn ccm_runs(&self) -> bool {
        matches!(self.ccm, Some(Running::Up { .. }))
    }
}

async fn reconcile<F, Fut>(
    slot: &mut Option<Running>,
    wanted: Option<Vec<(String, String)>>,
    start: F,
) where
    F: FnOnce(Vec<(String, String)>) -> Fut,
    Fut: Future<Output = Result<Component, String>>,
{
    let down = |why: String| Running::Down {
        since: std::time::Instant::now(),
        why,
    };
    match slot.as_mut() {
        Some(Running::Up {
            started_from,
            process,
        }) => {
            if let Err(exited) = process.check() {
                warn!("{exited}");
                *slot = Some(down(exited.to_string()));
            } else if wanted.as_ref() != Some(started_from) {
                *slot = None;
            }
        }
        Some(Running::Down { since, .. }) if since.elapsed() < RESTART_AFTER => return,
        _ => {}
    }
    if matches!(slot, Some(Running::Up { .. })) {
        return;
    }
    let Some(settings) = wanted else {
        *slot = None;
        return;
    };
    match start(settings.clone()).await {
        Ok(process) => {
            info!("started {}", process.name);
            *slot = Some(Running::Up {
                started_from: settings,
                process: Box::new(process),
            });
        }
        Err(e) => {
            if !matches!(slot, Some(Running::Down { why, .. }) if *why == e) {
                warn!("{e}");
            }
            *slot = Some(down(e));
        }
    }
}

/// The stored approver's container: `ARG=<arg>` for its arguments, then its
/// environment (plain values only, as hct writes it).
async fn approver_settings(admin: &Client) -> Option<Vec<(String, String)>> {
    let path = format!("/apis/apps/v1/namespaces/kube-system/deployments/{APPROVER}");
    let deployment = admin.get(&path).await.ok().filter(|a| a.ok())?.body;
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let mut settings: Vec<(String, String)> = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| Some(("ARG".to_string(), a.as_str()?.to_string())))
        .collect();
    for variable in container["env"].as_array().into_iter().flatten() {
        if let (Some(name), Some(value)) = (variable["name"].as_str(), variable["value"].as_str()) {
            settings.push((name.to_string(), value.to_string()));
        }
    }
    let account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or("default");
    settings.push(("SERVICE_ACCOUNT".into(), account.into()));
    Some(settings)
}

async fn start_approver(
    admin: &Client,
    spec: &ControlPlaneSpec,
    layout: &Layout,
    base: &str,
    binary: &Path,
    settings: Vec<(String, String)>,
) -> Result<Component, String> {
    let account = settings
        .iter()
        .find(|(k, _)| k == "SERVICE_ACCOUNT")
        .map_or("default", |(_, v)| v.as_str());
    let path = format!("/api/v1/namespaces/kube-system/serviceaccounts/{account}/token");
    let request = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 86400},
    });
    let answer = admin
        .post(&path, &request)
        .await
        .map_err(|e| e.to_string())?;
    let token = answer.body["status"]["token"].as_str().ok_or_else(|| {
        format!(
            "no token for ServiceAccount {account}: HTTP {}",
            answer.status
        )
    })?;
    let text = files::kubeconfig(base, &spec.kubernetes_ca.certificate, User::Token(token));
    let kubeconfig =
        files::put(layout, "approver.kubeconfig", &text, true).map_err(|e| e.to_string())?;
    let mut args = Vec::new();
    let mut env = vec![("KUBECONFIG".to_string(), kubeconfig.display().to_string())];
    for (name, value) in settings {
        match name.as_str() {
            "ARG" => args.push(value),
            "SERVICE_ACCOUNT" | "KUBERNETES_SERVICE_HOST" | "KUBERNETES_SERVICE_PORT" => {}
            _ => env.push((name, value)),
        }
    }
    // Whatever the Deployment says: no listeners (they would bind every
    // interface) and no DNS lookups of node names (they would leave the
    // machine). Later flags and variables win.
    args.extend([
        "-metrics-bind-address=0".into(),
        "-health-probe-bind-address=0".into(),
    ]);
    env.push(("BYPASS_DNS_RESOLUTION".into(), "true".into()));
    Component::spawn_with_env(APPROVER, binary, &args, &env, &layout.dir).map_err(|e| e.to_string())
}

/// The `hcloud` Secret's token and network, and the cluster's pod range,
/// when the Secret is stored.
async fn ccm_settings(
    admin: &Client,
    spec: &ControlPlaneSpec,
    hetzner_api: &str,
) -> Option<Vec<(String, String)>> {
    let path = format!("/api/v1/namespaces/kube-system/secrets/{HCLOUD_SECRET}");
    let secret = admin.get(&path).await.ok().filter(|a| a.ok())?.body;
    let field = |key: &str| -> Option<String> {
        let encoded = secret["data"][key].as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        String::from_utf8(bytes).ok()
    };
    let mut env = vec![
        ("HCLOUD_TOKEN".to_string(), field("token")?),
        ("HCLOUD_ENDPOINT".to_string(), hetzner_api.to_string()),
        ("HCLOUD_METRICS_ENABLED".to_string(), "false".to_string()),
        // It would ask the metadata service (169.254.169.254) whether the
        // server it runs on is in the network; there is none here.
        (
            "HCLOUD_NETWORK_DISABLE_ATTACHED_CHECK".to_string(),
            "true".to_string(),
        ),
    ];
    if let Some(network) = field("network") {
        env.push(("HCLOUD_NETWORK".to_string(), network));
    }
    env.push(("CLUSTER_CIDR".to_string(), joined(&spec.pods)));
    Some(env)
}

fn start_ccm(
    spec: &ControlPlaneSpec,
    layout: &Layout,
    base: &str,
    binary: &Path,
    settings: Vec<(String, String)>,
) -> Result<Component, String> {
    let name = "hcloud-cloud-controller-manager";
    let user = pki::client_certificate(&spec.kubernetes_ca, name, &["system:masters"])
        .map_err(|e| e.to_string())?;
    let text = files::kubeconfig(
        base,
        &spec.kubernetes_ca.certificate,
        User::Certificate(&user),
    );
    let kubeconfig =
        files::put(layout, "ccm.kubeconfig", &text, true).map_err(|e| e.to_string())?;
    let mut env = Vec::new();
    let mut cluster_cidr = String::new();
    for (key, value) in settings {
        if key == "CLUSTER_CIDR" {
            cluster_cidr = value;
        } else {
            env.push((key, value));
        }
    }
    let kubeconfig = kubeconfig.display().to_string();
    let args = vec![
        "--allow-untagged-cloud".to_string(),
        "--cloud-provider=hcloud".into(),
        "--route-reconciliation-period=30s".into(),
        "--webhook-secure-port=0".into(),
        "--allocate-node-cidrs=true".into(),
        format!("--cluster-cidr={cluster_cidr}"),
        "--leader-elect=false".into(),
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--secure-port=0".into(),
        "--bind-address=127.0.0.1".into(),
    ];
    Component::spawn_with_env(name, binary, &args, &env, &layout.dir).map_err(|e| e.to_string())
}
