//! A config's YAML documents as JSON values: the v1alpha1 one (the document
//! without a `kind`) and those of a kind, found one way everywhere.

use serde_json::Value;

/// The kind of a document; `v1alpha1` for the one without a kind.
pub(crate) fn kind_of(document: &Value) -> &str {
    document
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("v1alpha1")
}

/// The v1alpha1 document.
pub(crate) fn v1alpha1(documents: &[Value]) -> Option<&Value> {
    documents.iter().find(|d| d.get("kind").is_none())
}

pub(crate) fn v1alpha1_mut(documents: &mut [Value]) -> Option<&mut Value> {
    documents.iter_mut().find(|d| d.get("kind").is_none())
}

/// The documents of `kind` (a multi-document kind, not `v1alpha1`).
pub(crate) fn all_of<'a>(documents: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> {
    documents
        .iter()
        .filter(move |d| d.get("kind").and_then(Value::as_str) == Some(kind))
}

/// The first document of `kind`.
pub(crate) fn of_kind<'a>(documents: &'a [Value], kind: &str) -> Option<&'a Value> {
    documents
        .iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
}

pub(crate) fn of_kind_mut<'a>(documents: &'a mut [Value], kind: &str) -> Option<&'a mut Value> {
    documents
        .iter_mut()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
}
