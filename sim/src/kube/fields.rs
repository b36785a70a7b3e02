//! Field ownership, as server-side apply keeps it: the fields (leaf
//! paths) an object sets, and per field manager and operation the fields
//! it owns, written to and read from `metadata.managedFields` in the
//! `FieldsV1` form (`{"f:data": {"f:token": {}}}`).

use serde_json::{Map, Value, json};

/// A field: the keys from the object's root.
pub type Path = Vec<String>;

/// The fields an object sets: every leaf below its root except the ones
/// the server owns (`apiVersion`, `kind`, `status`, metadata other than
/// labels, annotations, finalizers and ownerReferences).
pub fn leaves(object: &Value) -> Vec<Path> {
    let mut out = Vec::new();
    let Some(map) = object.as_object() else {
        return out;
    };
    for (key, value) in map {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for kept in ["labels", "annotations", "finalizers", "ownerReferences"] {
                    if let Some(value) = value.get(kept) {
                        walk(value, vec!["metadata".into(), kept.into()], &mut out);
                    }
                }
            }
            _ => walk(value, vec![key.clone()], &mut out),
        }
    }
    out
}

fn walk(value: &Value, path: Path, out: &mut Vec<Path>) {
    match value.as_object() {
        Some(map) if !map.is_empty() => {
            for (key, value) in map {
                let mut next = path.clone();
                next.push(key.clone());
                walk(value, next, out);
            }
        }
        _ => out.push(path),
    }
}

/// The `FieldsV1` form of a set of fields: `{"f:data": {"f:token": {}}}`.
fn fields_v1(paths: &[Path]) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for key in path {
            node = node
                .entry(format!("f:{key}"))
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("built as maps");
        }
    }
    Value::Object(root)
}

fn paths_of(fields: &Value) -> Vec<Path> {
    let mut out = Vec::new();
    fn descend(value: &Value, path: Path, out: &mut Vec<Path>) {
        match value.as_object() {
            Some(map) if !map.is_empty() => {
                for (key, value) in map {
                    let Some(key) = key.strip_prefix("f:") else {
                        continue;
                    };
                    let mut next = path.clone();
                    next.push(key.to_string());
                    descend(value, next, out);
                }
            }
            _ if !path.is_empty() => out.push(path),
            _ => {}
        }
    }
    descend(fields, Vec::new(), &mut out);
    out
}

/// The managers of an object and their fields: (manager, operation, fields).
pub fn managers(object: &Value) -> Vec<(String, String, Vec<Path>)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_string(),
                        e["operation"].as_str().unwrap_or("Update").to_string(),
                        paths_of(&e["fieldsV1"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn write_managers(object: &mut Value, managers: &[(String, String, Vec<Path>)], now: u64) {
    let entries: Vec<Value> = managers
        .iter()
        .filter(|(_, _, fields)| !fields.is_empty())
        .map(|(manager, operation, fields)| {
            json!({
                "manager": manager,
                "operation": operation,
                "apiVersion": object["apiVersion"].clone(),
                "time": super::timestamp(now),
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1(fields),
            })
        })
        .collect();
    object["metadata"]["managedFields"] = json!(entries);
}

/// Records that `manager` (with `operation`) set `fields`: they become its,
/// and no other Update manager's.
pub fn record(object: &mut Value, manager: &str, operation: &str, fields: &[Path], now: u64) {
    let mut all = managers(object);
    for (_, _, owned) in all.iter_mut() {
        owned.retain(|p| !fields.contains(p));
    }
    match all
        .iter_mut()
        .find(|(m, op, _)| m == manager && op == operation)
    {
        Some((_, _, owned)) => owned.extend(fields.iter().cloned()),
        None => all.push((manager.into(), operation.into(), fields.to_vec())),
    }
    write_managers(object, &all, now);
}
