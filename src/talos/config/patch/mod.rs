//! User `config_patches`, applied after hct's settings, in order.
//!
//! Each patch is one of the two kinds Talos accepts, told apart by shape:
//! - a JSON6902 patch: one YAML/JSON document that is a list of operations
//!   (`json6902`); applied to the v1alpha1 document (Talos itself refuses
//!   JSON6902 on multi-document configs, which every v1.12 config is);
//! - a strategic merge patch: one or more YAML documents, each merged into
//!   the document with the same `apiVersion`/`kind`/`name`, or added
//!   (`strategic`, with `$patch: delete` in `delete`).

mod delete;
mod json6902;
mod rules;
mod strategic;

use serde_json::Value;

use super::contract::Contract;
use crate::talos::yaml::{self, YamlError};

/// Why a patch could not be applied. Names paths and operations, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error("the patch is empty")]
    Empty,
    #[error(
        "neither a strategic merge patch (YAML mappings) nor a JSON6902 patch (a list of operations): {0}"
    )]
    Unrecognised(&'static str),
    #[error("document {document}: {reason}")]
    Document { document: usize, reason: String },
    #[error("{path}: cannot merge {right} into {left}")]
    TypeMismatch {
        path: String,
        left: &'static str,
        right: &'static str,
    },
    #[error("$patch: delete at {path}: {reason}")]
    Delete { path: String, reason: String },
    #[error("operation {index} ({op} {path}): {reason}")]
    Operation {
        index: usize,
        op: String,
        path: String,
        reason: String,
    },
}

/// Parses `patch` and applies it to `documents` (v1alpha1 first); on error
/// `documents` stay as they were.
pub(crate) fn apply(
    documents: &mut Vec<Value>,
    patch: &str,
    contract: Contract,
) -> Result<(), PatchError> {
    let parsed: Vec<Value> = yaml::parse_documents(patch)?
        .into_iter()
        .filter(|document| !document.is_null())
        .collect();
    let mut patched = documents.clone();
    match parsed.as_slice() {
        [] => return Err(PatchError::Empty),
        [Value::Array(operations)] => json6902::apply(&mut patched, operations)?,
        _ if parsed.iter().all(Value::is_object) => {
            strategic::apply(&mut patched, parsed, contract)?
        }
        _ => {
            return Err(PatchError::Unrecognised(
                "a list must be the only document, and every other document a mapping",
            ));
        }
    }
    *documents = patched;
    Ok(())
}

/// "mapping", "list", … for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// `machine.network.interfaces[0]` from path steps.
pub(crate) fn dotted(path: &[String]) -> String {
    if path.is_empty() {
        return "the document root".into();
    }
    let mut text = String::new();
    for step in path {
        if !step.starts_with('[') && !text.is_empty() {
            text.push('.');
        }
        text.push_str(step);
    }
    text
}

#[cfg(test)]
mod tests;
