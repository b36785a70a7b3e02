//! `$patch: delete`, as Talos reads it in strategic merge patches:
//! - at a document's top level: the whole document (matched by kind/name);
//! - in a mapping: that mapping's key, e.g. `kubespan: {$patch: delete}`;
//! - in a list item: the first item whose field matches the marked item's
//!   first other field, e.g. `- {interface: eth1, $patch: delete}`.
//!
//! Deleting something that is not there is an error, as in Talos.

use serde_json::{Map, Value};

use super::{PatchError, dotted};

const DIRECTIVE: &str = "$patch";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Deletion {
    Document,
    /// The key at the end of this path of mapping keys.
    Key(Vec<String>),
    /// The first item of the list at `list` whose `field` matches `value`.
    ListItem {
        list: Vec<String>,
        field: String,
        value: Value,
    },
}

/// Takes the deletions out of a patch document, leaving what merges.
pub(super) fn extract(document: &mut Value) -> Result<Vec<Deletion>, PatchError> {
    let Value::Object(root) = document else {
        return Ok(Vec::new());
    };
    if is_marker(root, &[])? {
        return Ok(vec![Deletion::Document]);
    }
    let mut found = Vec::new();
    extract_from_mapping(root, &mut Vec::new(), &mut found)?;
    Ok(found)
}

/// Whether `map` says `$patch: delete`.
fn is_marker(map: &Map<String, Value>, path: &[String]) -> Result<bool, PatchError> {
    match map.get(DIRECTIVE) {
        None => Ok(false),
        Some(Value::String(directive)) if directive == "delete" => Ok(true),
        Some(_) => Err(PatchError::Delete {
            path: dotted(path),
            reason: "only `$patch: delete` is supported".into(),
        }),
    }
}

/// Returns whether anything was taken out below `map`.
fn extract_from_mapping(
    map: &mut Map<String, Value>,
    path: &mut Vec<String>,
    found: &mut Vec<Deletion>,
) -> Result<bool, PatchError> {
    let keys: Vec<String> = map.keys().cloned().collect();
    let mut removed_any = false;
    for key in keys {
        path.push(key.clone());
        let remove = match map.get_mut(&key) {
            Some(Value::Object(child)) if is_marker(child, path)? => {
                found.push(Deletion::Key(path.clone()));
                true
            }
            // A mapping emptied by deletions goes too, as in Talos.
            Some(Value::Object(child)) => {
                extract_from_mapping(child, path, found)? && child.is_empty()
            }
            Some(Value::Array(items)) => extract_from_list(items, path, found)? && items.is_empty(),
            _ => false,
        };
        path.pop();
        if remove {
            map.shift_remove(&key);
            removed_any = true;
        }
    }
    Ok(removed_any)
}

fn extract_from_list(
    items: &mut Vec<Value>,
    path: &mut Vec<String>,
    found: &mut Vec<Deletion>,
) -> Result<bool, PatchError> {
    let before = items.len();
    let mut kept = Vec::with_capacity(items.len());
    for (index, item) in std::mem::take(items).into_iter().enumerate() {
        path.push(format!("[{index}]"));
        match &item {
            Value::Object(map) if is_marker(map, path)? => {
                let (field, value) = map
                    .iter()
                    .find(|(key, value)| key.as_str() != DIRECTIVE && is_scalar(value))
                    .ok_or_else(|| PatchError::Delete {
                        path: dotted(path),
                        reason: "a list item to delete needs a `field: value` that selects it"
                            .into(),
                    })?;
                path.pop();
                found.push(Deletion::ListItem {
                    list: path.clone(),
                    field: field.clone(),
                    value: value.clone(),
                });
                continue;
            }
            other if contains_directive(other) => {
                return Err(PatchError::Delete {
                    path: dotted(path),
                    reason: "cannot delete inside a list item; delete the whole item".into(),
                });
            }
            _ => kept.push(item),
        }
        path.pop();
    }
    *items = kept;
    Ok(items.len() < before)
}

fn contains_directive(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.contains_key(DIRECTIVE) || map.values().any(contains_directive),
        Value::Array(items) => items.iter().any(contains_directive),
        _ => false,
    }
}

fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// Applies a key or list-item deletion to the target document.
pub(super) fn apply(document: &mut Value, deletion: &Deletion) -> Result<(), PatchError> {
    match deletion {
        Deletion::Document => Ok(()),
        Deletion::Key(path) => {
            let Some((last, parents)) = path.split_last() else {
                return Ok(());
            };
            let removed = mapping_at(document, parents).and_then(|map| map.shift_remove(last));
            match removed {
                Some(_) => Ok(()),
                None => Err(not_found(path, "nothing to delete there")),
            }
        }
        Deletion::ListItem { list, field, value } => {
            let Some((last, parents)) = list.split_last() else {
                return Ok(());
            };
            let items = mapping_at(document, parents)
                .and_then(|map| map.get_mut(last))
                .and_then(Value::as_array_mut)
                .ok_or_else(|| not_found(list, "no list there"))?;
            let wanted = scalar_text(value);
            let position = items
                .iter()
                .position(|item| item.get(field).and_then(scalar_text) == wanted)
                .ok_or_else(|| not_found(list, &format!("no item's {field} matches")))?;
            items.remove(position);
            Ok(())
        }
    }
}

fn mapping_at<'a>(document: &'a mut Value, path: &[String]) -> Option<&'a mut Map<String, Value>> {
    path.iter()
        .try_fold(document, |value, key| value.get_mut(key))
        .and_then(Value::as_object_mut)
}

/// Selectors compare as text, like Talos compares a field's string form.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn not_found(path: &[String], reason: &str) -> PatchError {
    PatchError::Delete {
        path: dotted(path),
        reason: reason.to_owned(),
    }
}
