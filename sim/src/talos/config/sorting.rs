//! Splitting a config into its YAML documents and sorting them by what the
//! emulation reads: the one `v1alpha1` document, the link documents (for
//! their routes) and the `HostnameConfig` document; unknown versions and
//! kinds are refused.

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::ConfigError;
use super::documents::{LINK_KINDS, is_known_kind};
use crate::talos::version::TalosVersion;

/// The documents of a config, sorted by what the emulation reads of them.
#[derive(Default)]
pub(super) struct Documents {
    pub(super) v1alpha1: Option<Value>,
    pub(super) links: Vec<(String, Value)>,
    pub(super) hostname: Option<Value>,
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
    for (number, value) in yaml_documents(text)? {
        if !value.is_mapping() {
            return Err(ConfigError::NotAMapping { document: number });
        }
        if let Some(version) = value.get("version") {
            if version.as_str() != Some("v1alpha1") {
                return Err(ConfigError::UnknownVersion(format!("{version:?}")));
            }
            if documents.v1alpha1.replace(value).is_some() {
                return Err(ConfigError::DuplicateV1Alpha1);
            }
            continue;
        }
        let Some(kind) = text_field(&value, "kind") else {
            return Err(ConfigError::Unrecognized { document: number });
        };
        let api_version = text_field(&value, "apiVersion").unwrap_or_default();
        if api_version != "v1alpha1" || !is_known_kind(kind, talos) {
            return Err(ConfigError::UnknownKind {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                known_by: talos.map(|v| format!(" for Talos {v}")).unwrap_or_default(),
            });
        }
        let kind = kind.to_string();
        if kind == "HostnameConfig" {
            if documents.hostname.replace(value).is_some() {
                return Err(ConfigError::DuplicateHostnameConfig);
            }
        } else if LINK_KINDS.contains(&kind.as_str()) {
            documents.links.push((kind, value));
        }
    }
    Ok(documents)
}
