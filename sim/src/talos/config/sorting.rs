//! Splitting a config into its YAML documents and sorting them by what the
//! emulation reads: the one `v1alpha1` document, the link documents (for
//! their routes), the `HostnameConfig` document and the others (the v1.14
//! Kubernetes documents among them); unknown versions and kinds are
//! refused.

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::ConfigError;
use super::documents::{LINK_KINDS, is_known_kind};
use super::strict::{Origin, document_lines, unknown_keys};
use crate::talos::version::TalosVersion;

/// The documents of a config, sorted by what the emulation reads of them.
#[derive(Default)]
pub(super) struct Documents {
    pub(super) v1alpha1: Option<Value>,
    pub(super) links: Vec<(String, Value)>,
    pub(super) hostname: Option<Value>,
    /// Every other typed document (kind, document), in order.
    pub(super) others: Vec<(String, Value)>,
}

pub(super) fn yaml_documents(text: &str) -> Result<Vec<(usize, Value)>, ConfigError> {
    let mut out = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let number = index + 1;
        let value = Value::deserialize(document).map_err(|e| ConfigError::Yaml {
            document: number,
            reason: e.to_string(),
        })?;
        if !value.is_null() {
            out.push((number, value));
        }
    }
    Ok(out)
}

fn text_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

pub(super) fn sort_documents(
    text: &str,
    talos: Option<&TalosVersion>,
) -> Result<Documents, ConfigError> {
    let mut documents = Documents::default();
    let lines = document_lines(text);
    for (index, (number, value)) in yaml_documents(text)?.into_iter().enumerate() {
        if !value.is_mapping() {
            return Err(ConfigError::NotAMapping { document: number });
        }
        let origin = Origin {
            kind: text_field(&value, "kind").unwrap_or_default(),
            api_version: text_field(&value, "apiVersion").unwrap_or_default(),
            name: text_field(&value, "name").unwrap_or_default(),
            line: lines.get(index).copied().unwrap_or(number),
        };
        let v1alpha1 = value.get("version").is_some()
            || ["machine", "cluster", "debug", "persist"]
                .iter()
                .any(|k| value.get(*k).is_some());
        if v1alpha1 {
            let version = value.get("version").and_then(Value::as_str);
            if version.is_some_and(|v| v != "v1alpha1") {
                return Err(ConfigError::UnknownVersion(format!("{version:?}")));
            }
            if let Some(reason) = unknown_keys("v1alpha1", &value, talos) {
                return Err(ConfigError::Decode(origin.wrap(talos, reason)));
            }
            if documents.v1alpha1.replace(value).is_some() {
                return Err(ConfigError::DuplicateV1Alpha1);
            }
            continue;
        }
        let Some(kind) = text_field(&value, "kind") else {
            return Err(ConfigError::Unrecognized { document: number });
        };
        let api_version = origin.api_version;
        if api_version != "v1alpha1" || !is_known_kind(kind, talos) {
            let reason = format!("{kind:?} {api_version:?}: not registered");
            return Err(ConfigError::Decode(origin.wrap(talos, reason)));
        }
        if let Some(reason) = unknown_keys(kind, &value, talos) {
            return Err(ConfigError::Decode(origin.wrap(talos, reason)));
        }
        let kind = kind.to_string();
        if kind == "HostnameConfig" {
            if documents.hostname.replace(value).is_some() {
                return Err(ConfigError::DuplicateHostnameConfig);
            }
        } else if LINK_KINDS.contains(&kind.as_str()) {
            documents.links.push((kind, value));
        } else {
            documents.others.push((kind, value));
        }
    }
    Ok(documents)
}
