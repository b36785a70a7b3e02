//! What a node runs, as the Kubernetes API reports it: the images of a
//! control plane's static pods (their mirror pods `<component>-<node>` in
//! `kube-system`, running and Ready), and the kubelet version and readiness
//! of a Node.

use serde_json::Value;

use super::KubeApi;
use super::nodes;

/// The components of `node` whose mirror pod does not run `image_of`'s
/// image yet (or is not Running and Ready): "kube-scheduler runs …".
pub async fn static_pods_behind(
    api: &KubeApi<'_>,
    node: &str,
    components: &[&str],
    image_of: impl Fn(&str) -> String,
) -> Result<Vec<String>, String> {
    let mut behind = Vec::new();
    for component in components {
        let name = format!("{component}-{node}");
        let answer = api
            .call(
                "GET",
                &format!("/api/v1/namespaces/kube-system/pods/{name}"),
                None,
                b"",
            )
            .await?;
        match answer.status {
            200 => {}
            404 => {
                behind.push(format!("no pod {name} yet"));
                continue;
            }
            status => return Err(format!("pod {name}: HTTP {status}: {}", answer.message())),
        }
        let pod: Value = serde_json::from_str(&answer.body).map_err(|e| e.to_string())?;
        let wanted = image_of(component);
        if let Some(why) = pod_behind(&pod, &wanted) {
            behind.push(format!("{component} {why}"));
        }
    }
    Ok(behind)
}

/// Why a mirror pod does not (yet) run `wanted`; None when it does.
fn pod_behind(pod: &Value, wanted: &str) -> Option<String> {
    let image = pod["spec"]["containers"][0]["image"].as_str().unwrap_or("");
    if image != wanted {
        return Some(format!("runs {image}"));
    }
    let ready = pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let phase = pod["status"]["phase"].as_str().unwrap_or("Unknown");
    (phase != "Running" || !ready).then(|| format!("is {phase}, not Ready"))
}

/// Ok when Node `name` reports kubelet `version` (and, when `ready`, is
/// Ready); otherwise what it reports.
pub async fn kubelet_on(
    api: &KubeApi<'_>,
    name: &str,
    version: &str,
    ready: bool,
) -> Result<(), String> {
    let answer = api
        .call("GET", &format!("/api/v1/nodes/{name}"), None, b"")
        .await?;
    match answer.status {
        200 => {}
        404 => return Err(format!("node {name} is not registered")),
        status => return Err(format!("HTTP {status}: {}", answer.message())),
    }
    let node: Value = serde_json::from_str(&answer.body).map_err(|e| e.to_string())?;
    let running = node["status"]["nodeInfo"]["kubeletVersion"]
        .as_str()
        .unwrap_or("nothing");
    if running != version {
        return Err(format!("kubelet reports {running}"));
    }
    if ready {
        nodes::check(&node)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_mirror_pod_is_done_on_the_image_running_and_ready() {
        let pod = |image: &str, phase: &str, ready: &str| {
            json!({
                "spec": {"containers": [{"image": image}]},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]},
            })
        };
        let wanted = "registry.k8s.io/kube-apiserver:v1.36.3";
        assert_eq!(pod_behind(&pod(wanted, "Running", "True"), wanted), None);
        let old = pod("registry.k8s.io/kube-apiserver:v1.35.2", "Running", "True");
        assert_eq!(
            pod_behind(&old, wanted).as_deref(),
            Some("runs registry.k8s.io/kube-apiserver:v1.35.2")
        );
        assert!(pod_behind(&pod(wanted, "Pending", "False"), wanted).is_some());
    }
}
