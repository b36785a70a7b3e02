//! The manifests Talos renders itself (the kubelet bootstrap token and RBAC,
//! CoreDNS, kube-proxy when it runs, …), kept in line with the release the
//! cluster runs, as `talosctl upgrade-k8s` ends: Talos creates their
//! objects at bootstrap and never updates them, so after an upgrade the
//! cluster still runs the objects of the release it was created with (a
//! kube-proxy DaemonSet on the old image, the CoreDNS of the old Talos).
//!
//! hct reads the manifests a control plane renders now (over the Talos
//! API: `Manifest` resources of the COSI state API) and applies their
//! objects with server-side apply as Talos' field manager (`talos`),
//! forcing conflicts, namespaces and CRDs first. The inline manifests hct
//! itself puts into the configs (`bootstrap_manifests`, its add-ons) are
//! left out: hct applies those itself, as their field manager. Objects a
//! release stops rendering are not deleted (Talos' own upgrade prunes them
//! only from v1.13 on, through an inventory hct does not keep).

use crate::net::Proxy;

use serde_json::Value;
use tracing::info;

use super::ClusterError;
use super::kube_api::KubeApi;
use super::kube_api::manifests::{self, Manager};
use super::record::NodeRecord;
use super::wait::{self, Deadline};
use crate::talos::api::{NodeAddress, RenderedManifest, TalosClient, Trust};

/// Talos' id of an inline manifest: `99-<name>`.
fn inline_id(name: &str) -> String {
    format!("99-{name}")
}

/// The rendered manifests hct applies as Talos: all but the inline ones
/// named in `own` (hct's); (manifest id, object) in order.
fn talos_objects(rendered: Vec<RenderedManifest>, own: &[String]) -> Vec<(String, Value)> {
    let own: Vec<String> = own.iter().map(|n| inline_id(n)).collect();
    rendered
        .into_iter()
        .filter(|m| !own.contains(&m.id))
        .flat_map(|m| {
            let id = m.id;
            m.objects
                .into_iter()
                .filter(Value::is_object)
                .map(move |o| (id.clone(), o))
        })
        .collect()
}

/// Applies what `control_plane`'s first node renders; `own` names hct's
/// inline manifests. Returns the ids of the manifests applied.
pub async fn sync(
    control_plane: &[NodeRecord],
    trust: &Trust,
    proxy: Option<Proxy>,
    api: &KubeApi<'_>,
    own: &[String],
    deadline: &Deadline,
) -> Result<Vec<String>, ClusterError> {
    let Some(node) = control_plane.first() else {
        return Ok(Vec::new());
    };
    let address = NodeAddress::new(node.ip.into(), proxy);
    let rendered = wait::until(
        deadline,
        &node.name,
        "reading the bootstrap manifests Talos renders",
        || async {
            let mut client = TalosClient::connect(&address, trust).await?;
            Ok(client.bootstrap_manifests().await?)
        },
    )
    .await?;
    let objects = talos_objects(rendered, own);
    let mut ids: Vec<String> = objects.iter().map(|(id, _)| id.clone()).collect();
    ids.dedup();
    info!(node = %node.name, manifests = ids.join(", "), "syncing the bootstrap manifests Talos renders");
    manifests::apply(api, objects, Manager::Talos, deadline)
        .await
        .map_err(|why| ClusterError::Kubernetes {
            node: node.name.clone(),
            reason: format!("syncing Talos' bootstrap manifests: {why}"),
        })?;
    info!(node = %node.name, count = ids.len(), "Talos' bootstrap manifests synced");
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hct_s_inline_manifests_stay_with_hct() {
        let manifest = |id: &str, names: &[&str]| RenderedManifest {
            id: id.into(),
            objects: names
                .iter()
                .map(|n| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}}))
                .collect(),
        };
        let rendered = vec![
            manifest("10-kube-proxy", &["kube-proxy"]),
            manifest("11-core-dns", &["coredns", "coredns-config"]),
            manifest("99-cilium", &["cilium"]),
            manifest("99-extras-from-a-patch", &["extras"]),
        ];
        let kept = talos_objects(rendered, &["cilium".to_string()]);
        let names: Vec<String> = kept
            .iter()
            .map(|(id, o)| format!("{id}/{}", o["metadata"]["name"].as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                "10-kube-proxy/kube-proxy",
                "11-core-dns/coredns",
                "11-core-dns/coredns-config",
                "99-extras-from-a-patch/extras",
            ]
        );
    }
}
