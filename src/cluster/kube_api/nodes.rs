//! Whether nodes are Ready, as the Kubernetes API reports them: the
//! node's `Ready` condition, and when it is not True, every condition for
//! the diagnostic.

use serde_json::Value;

use super::KubeApi;
use crate::cluster::error::ClusterError;
use crate::cluster::wait::{self, Deadline, Retry};

/// Until each of `names` is Ready, one after the other; a timeout names
/// the node and its conditions.
pub async fn wait_ready(
    api: &KubeApi<'_>,
    names: &[String],
    deadline: &Deadline,
) -> Result<(), ClusterError> {
    for name in names {
        wait::until(
            deadline,
            name,
            "waiting for the node to be Ready",
            || async { ready(api, name).await.map_err(Retry::Again) },
        )
        .await?;
    }
    Ok(())
}

/// The CNIs whose DaemonSets count as one (by name, or by the value of the
/// `k8s-app`, `app` or `app.kubernetes.io/name` label).
pub const CNI_NAMES: [&str; 6] = [
    "cilium",
    "flannel",
    "calico",
    "canal",
    "kube-router",
    "weave",
];

/// Whether a DaemonSet object is a CNI's, by the rule of [`CNI_NAMES`].
pub fn is_cni_daemonset(object: &Value) -> bool {
    let labels = &object["metadata"]["labels"];
    object["kind"] == "DaemonSet"
        && [
            &object["metadata"]["name"],
            &labels["k8s-app"],
            &labels["app"],
            &labels["app.kubernetes.io/name"],
        ]
        .iter()
        .filter_map(|v| v.as_str())
        .any(|n| CNI_NAMES.iter().any(|cni| n.contains(cni)))
}

/// Whether a CNI's DaemonSet exists in the cluster (any namespace).
pub async fn cni_installed(api: &KubeApi<'_>) -> Result<bool, String> {
    let answer = api
        .call("GET", "/apis/apps/v1/daemonsets", None, b"")
        .await?;
    if answer.status != 200 {
        return Err(format!(
            "listing DaemonSets: HTTP {}: {}",
            answer.status,
            answer.message()
        ));
    }
    let list: Value = serde_json::from_str(&answer.body).map_err(|e| e.to_string())?;
    Ok(list["items"].as_array().into_iter().flatten().any(|ds| {
        let mut ds = ds.clone();
        ds["kind"] = Value::from("DaemonSet");
        is_cni_daemonset(&ds)
    }))
}

/// The IP of an `https://ip:port` endpoint.
pub fn endpoint_ip(endpoint: &str) -> Option<std::net::IpAddr> {
    let authority = endpoint.strip_prefix("https://")?.split('/').next()?;
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Ok when node `name` is registered and Ready; otherwise why not.
pub async fn ready(api: &KubeApi<'_>, name: &str) -> Result<(), String> {
    let answer = api
        .call("GET", &format!("/api/v1/nodes/{name}"), None, b"")
        .await?;
    match answer.status {
        200 => {}
        404 => return Err(format!("node {name} is not registered yet")),
        status => return Err(format!("HTTP {status}: {}", answer.message())),
    }
    let node: Value = serde_json::from_str(&answer.body).map_err(|e| e.to_string())?;
    check(&node)
}

/// Ok when a Node object's `Ready` condition is True; else every condition.
pub fn check(node: &Value) -> Result<(), String> {
    let conditions = node["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ready = conditions
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if ready {
        return Ok(());
    }
    let shown: Vec<String> = conditions
        .iter()
        .map(|c| {
            format!(
                "{}={} ({})",
                c["type"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?"),
                c["message"].as_str().or(c["reason"].as_str()).unwrap_or("")
            )
        })
        .collect();
    Err(if shown.is_empty() {
        "not Ready: no conditions reported".into()
    } else {
        format!("not Ready: {}", shown.join("; "))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ready_is_the_ready_condition_and_failures_list_all_conditions() {
        let node = |status: &str| {
            json!({"status": {"conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": status, "message": "cni plugin not initialized"},
            ]}})
        };
        assert!(check(&node("True")).is_ok());
        let why = check(&node("False")).unwrap_err();
        assert!(
            why.contains("Ready=False (cni plugin not initialized)"),
            "{why}"
        );
        assert!(why.contains("MemoryPressure=False"), "{why}");
        assert!(check(&json!({})).is_err());
    }

    #[test]
    fn cni_daemonsets_by_name_or_label() {
        let ds = |name: &str, labels: Value| json!({"kind": "DaemonSet", "metadata": {"name": name, "labels": labels}});
        assert!(is_cni_daemonset(&ds("cilium", json!({}))));
        assert!(is_cni_daemonset(&ds("kube-flannel-ds", json!({}))));
        assert!(is_cni_daemonset(&ds(
            "agent",
            json!({"k8s-app": "calico-node"})
        )));
        assert!(!is_cni_daemonset(&ds(
            "node-exporter",
            json!({"app": "metrics"})
        )));
        let mut deployment = ds("cilium-operator", json!({}));
        deployment["kind"] = json!("Deployment");
        assert!(!is_cni_daemonset(&deployment));
        assert_eq!(
            endpoint_ip("https://10.0.128.17:6443"),
            "10.0.128.17".parse().ok()
        );
        assert_eq!(endpoint_ip("https://example.com:6443"), None);
    }
}
