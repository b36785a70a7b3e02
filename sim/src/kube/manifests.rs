//! Manifests as Talos takes them (`cluster.inlineManifests`): YAML
//! documents separated by `---`, each one object, and the bootstrap
//! manifests controller's rule for them: create what does not exist yet,
//! leave what exists alone, namespaces and CRDs first. (Which manifests a
//! control plane renders is `talos::manifests`.)

use serde_json::Value;

use super::KubeError;
use super::store::ClusterStore;

/// The objects of a multi-document YAML text; empty documents are skipped.
pub fn objects(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document).map_err(|e| e.to_string())?;
        match value {
            Value::Null => {}
            Value::Object(_) => out.push(value),
            _ => return Err("a document is not a mapping".into()),
        }
    }
    Ok(out)
}

/// Creates the manifests' objects (manifest id, object) that do not exist
/// yet, as Talos does at bootstrap: namespaces and CRDs before the rest.
/// Objects of unknown kinds or that fail admission are skipped (Talos
/// retries them; the sim says why in the result).
pub fn create_missing(store: &mut ClusterStore, objects: Vec<(String, Value)>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut objects: Vec<Value> = objects.into_iter().map(|(_, o)| o).collect();
    let rank = |o: &Value| match o["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    objects.sort_by_key(rank);
    for object in objects {
        let (Some(api_version), Some(kind)) =
            (object["apiVersion"].as_str(), object["kind"].as_str())
        else {
            problems.push("an object without apiVersion or kind".into());
            continue;
        };
        let Some(resource) = store.resource_for(api_version, kind) else {
            problems.push(format!("no resource serves {api_version} {kind}"));
            continue;
        };
        let namespace = if resource.namespaced {
            object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        match store.create(&resource, &namespace, object, "talos") {
            Ok(_) | Err(KubeError::AlreadyExists { .. }) => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    problems
}
