//! The little of OpenAPI v3 kubectl reads before it writes: `/openapi/v3`
//! (one entry per group version) and `/openapi/v3/<api|apis/G>/V` with a
//! PATCH operation per resource that takes the `fieldValidation` query
//! parameter. Finding it, kubectl leaves validation to the server (as with
//! kube-apiserver since 1.27) instead of downloading schemas to validate
//! locally. No schemas are served.

use serde_json::{Map, Value, json};

use super::kinds::Resource;

/// `api/v1` or `apis/apps/v1`.
fn key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn hash(text: &str) -> String {
    // FNV-1a: stable per content, which is all the `hash` query promises.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

/// `GET /openapi/v3`.
pub fn root(resources: &[Resource]) -> Value {
    let mut paths = Map::new();
    for r in resources {
        let key = key(&r.group, &r.version);
        if paths.contains_key(&key) {
            continue;
        }
        let url = format!(
            "/openapi/v3/{key}?hash={}",
            hash(&document(resources, &r.group, &r.version).to_string())
        );
        paths.insert(key, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/<key>`, None for a group version not served.
pub fn for_path(resources: &[Resource], key: &str) -> Option<Value> {
    let parts: Vec<&str> = key.split('/').collect();
    let (group, version) = match parts.as_slice() {
        ["api", version] => ("", *version),
        ["apis", group, version] => (*group, *version),
        _ => return None,
    };
    resources
        .iter()
        .any(|r| r.group == group && r.version == version)
        .then(|| document(resources, group, version))
}

fn document(resources: &[Resource], group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    for r in resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let base = format!("/{}", key(group, version));
        let path = if r.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{base}/{}/{{name}}", r.plural)
        };
        paths.insert(
            path,
            json!({"patch": {
                "operationId": format!("patch{}", r.kind),
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r.kind},
                "parameters": [
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}},
                ],
                "responses": {"200": {"description": "OK"}, "201": {"description": "Created"}},
            }}),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": {}},
    })
}
