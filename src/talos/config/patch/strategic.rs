//! Strategic merge, the way Talos merges its typed config (`merge.Merge`):
//! mappings merge key by key; lists append, except those `rules` replaces
//! or merges by key; a scalar replaces the old one unless it is `""` or `0`
//! (Talos cannot tell those from "not set"), while `false` always applies;
//! `null` changes nothing. `$patch: delete` is handled first (`delete`).

use serde_json::Value;

use super::delete::{self, Deletion};
use super::rules::{self, Rule};
use super::{PatchError, dotted, kind_of};
use crate::talos::config::contract::Contract;

/// Which document a patch document targets: Talos' (apiVersion, kind, name).
#[derive(Debug, Clone, PartialEq, Eq)]
struct DocumentId {
    /// `v1alpha1` for the legacy machine/cluster document.
    kind: String,
    name: Option<String>,
}

impl DocumentId {
    fn of(document: &Value) -> Self {
        let text = |key| document.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            kind: text("kind").unwrap_or_else(|| "v1alpha1".to_owned()),
            name: text("name"),
        }
    }

    /// Checks what Talos' loader checks before it looks at a document.
    fn of_patch(document: &Value, contract: Contract) -> Result<Self, String> {
        let text = |key| document.get(key).map(|value| value.as_str().ok_or(key));
        match (text("apiVersion"), text("kind")) {
            (None, None) => match text("version") {
                None | Some(Ok("v1alpha1")) => {}
                _ => return Err("version must be v1alpha1".into()),
            },
            (Some(Ok("v1alpha1")), Some(Ok(kind))) => {
                if !contract.document_kinds().contains(&kind) {
                    return Err(format!("Talos {contract} has no document kind {kind:?}"));
                }
            }
            (Some(Ok(_)), Some(Ok(_))) => return Err("apiVersion must be v1alpha1".into()),
            (Some(Err(key)), _) | (_, Some(Err(key))) => {
                return Err(format!("{key} must be a string"));
            }
            _ => return Err("apiVersion and kind must be set together".into()),
        }
        if let Some(Err(key)) = text("name") {
            return Err(format!("{key} must be a string"));
        }
        Ok(Self::of(document))
    }
}

pub(super) fn apply(
    documents: &mut Vec<Value>,
    patch: Vec<Value>,
    contract: Contract,
) -> Result<(), PatchError> {
    for (index, mut patch_document) in patch.into_iter().enumerate() {
        let id = DocumentId::of_patch(&patch_document, contract).map_err(|reason| {
            PatchError::Document {
                document: index,
                reason,
            }
        })?;
        let deletions = delete::extract(&mut patch_document)?;
        let mut target = documents.iter().position(|d| DocumentId::of(d) == id);
        for deletion in &deletions {
            match (deletion, target) {
                (Deletion::Document, _) if id.kind == "v1alpha1" => {
                    return Err(PatchError::Document {
                        document: index,
                        reason: "the v1alpha1 document cannot be deleted".into(),
                    });
                }
                (Deletion::Document, Some(position)) => {
                    documents.remove(position);
                    target = None;
                }
                (_, None) => {
                    return Err(PatchError::Document {
                        document: index,
                        reason: format!(
                            "$patch: delete targets a {} document that does not exist",
                            id.kind
                        ),
                    });
                }
                (deletion, Some(position)) => delete::apply(&mut documents[position], deletion)?,
            }
        }
        if deletions.contains(&Deletion::Document) {
            continue;
        }
        match target {
            Some(position) => merge(
                &mut documents[position],
                patch_document,
                &id.kind,
                &mut Vec::new(),
            )?,
            None => documents.push(patch_document),
        }
    }
    Ok(())
}

fn merge(
    left: &mut Value,
    right: Value,
    kind: &str,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    if right.is_null() {
        return Ok(());
    }
    if left.is_null() {
        *left = right;
        return Ok(());
    }
    if rules::rule_for(kind, path) == Rule::Replace && kind_of(left) == kind_of(&right) {
        *left = right;
        return Ok(());
    }
    match (left, right) {
        (Value::Object(left), Value::Object(right)) => {
            for (key, value) in right {
                path.push(key.clone());
                match left.get_mut(&key) {
                    Some(existing) => merge(existing, value, kind, path)?,
                    None => {
                        left.insert(key, value);
                    }
                }
                path.pop();
            }
            Ok(())
        }
        (Value::Array(left), Value::Array(right)) => match rules::rule_for(kind, path) {
            Rule::KeyedBy(keys) => {
                for item in right {
                    merge_keyed_item(left, item, keys, kind, path)?;
                }
                Ok(())
            }
            Rule::ReplacedByKey(keys) => {
                for item in right {
                    match keyed_position(left, &item, keys) {
                        Some(position) => left[position] = item,
                        None => left.push(item),
                    }
                }
                Ok(())
            }
            _ => {
                left.extend(right);
                Ok(())
            }
        },
        (left @ (Value::Object(_) | Value::Array(_)), right)
        | (left, right @ (Value::Object(_) | Value::Array(_))) => Err(PatchError::TypeMismatch {
            path: dotted(path),
            left: kind_of(left),
            right: kind_of(&right),
        }),
        (left, right) => {
            if !is_zero(&right) {
                *left = right;
            }
            Ok(())
        }
    }
}

/// Merges `item` into the list item with the same value of the first key
/// field `item` sets, or appends it (Talos' `NetworkDeviceList.Merge` & co).
fn merge_keyed_item(
    list: &mut Vec<Value>,
    item: Value,
    keys: &[&str],
    kind: &str,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    match keyed_position(list, &item, keys) {
        Some(position) => {
            path.push(format!("[{position}]"));
            merge(&mut list[position], item, kind, path)?;
            path.pop();
        }
        None => list.push(item),
    }
    Ok(())
}

/// The list item with the same value of the first key field `item` sets.
fn keyed_position(list: &[Value], item: &Value, keys: &[&str]) -> Option<usize> {
    let (key, wanted) = keys.iter().find_map(|key| {
        item.get(*key)
            .filter(|value| !is_zero(value))
            .map(|value| (*key, value))
    })?;
    list.iter().position(|x| x.get(key) == Some(wanted))
}

/// The values Talos treats as "not set" in a patch.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Number(number) => number.as_f64() == Some(0.0),
        _ => false,
    }
}
