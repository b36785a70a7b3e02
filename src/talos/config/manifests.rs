//! The bootstrap manifests in a control plane's config, where the contract
//! keeps them: `cluster.inlineManifests` up to v1.13, one
//! `KubeInlineManifestConfig` document each from v1.14 (whose names Talos
//! requires to be DNS-1123 subdomains). Before the user's patches.

use serde_json::{Value, json};

use super::ConfigError;
use super::input::{Node, Role};
use super::labels::is_dns_subdomain;
use super::multidoc_v1_14;

/// `cluster.inlineManifests` of the v1alpha1 document `main` (before
/// v1.14); checks the names where v1.14 needs documents.
pub(crate) fn into_main(
    main: &mut Value,
    node: &Node,
    manifests: &[(String, String)],
) -> Result<(), ConfigError> {
    if node.role != Role::ControlPlane || manifests.is_empty() {
        return Ok(());
    }
    if node.contract.kubernetes_documents() {
        if let Some((name, _)) = manifests.iter().find(|(n, _)| !is_dns_subdomain(n)) {
            return Err(ConfigError::InvalidInput {
                field: "bootstrap_manifests",
                reason: format!(
                    "name {name:?}: Talos {} keeps bootstrap manifests in KubeInlineManifestConfig \
                     documents, whose names must be DNS-1123 subdomains (lower-case letters, \
                     digits, '-' and '.'); rename it (its objects are then applied anew and the \
                     old name's pruned)",
                    node.talos
                ),
            });
        }
        return Ok(());
    }
    let list: Vec<Value> = manifests
        .iter()
        .map(|(name, contents)| json!({"name": name, "contents": contents}))
        .collect();
    main["cluster"]["inlineManifests"] = Value::Array(list);
    Ok(())
}

/// The `KubeInlineManifestConfig` documents (from v1.14).
pub(crate) fn documents(node: &Node, manifests: &[(String, String)]) -> Vec<Value> {
    if node.role != Role::ControlPlane || !node.contract.kubernetes_documents() {
        return Vec::new();
    }
    manifests
        .iter()
        .map(|(name, contents)| multidoc_v1_14::inline_manifest(name, contents))
        .collect()
}
