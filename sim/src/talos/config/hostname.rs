//! The node's hostname: from `machine.network.hostname` or a
//! `HostnameConfig` document (not both), and a valid host name.

use serde_yaml_ng::Value;

use super::documents::{HostnameDocument, Machine};
use super::{ConfigError, non_empty, typed};

fn is_hostname(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The hostname from `machine.network.hostname` or the `HostnameConfig`
/// document, which Talos v1.12 does not let both set.
pub(super) fn hostname(
    machine: &Machine,
    document: Option<Value>,
) -> Result<Option<String>, ConfigError> {
    let legacy = non_empty(machine.network.as_ref().and_then(|n| n.hostname.as_ref()));
    let stable = machine
        .features
        .as_ref()
        .and_then(|f| f.stable_hostname)
        .unwrap_or(false);
    let from_document = match document {
        None => None,
        Some(value) => {
            const DOC: &str = "HostnameConfig";
            let doc: HostnameDocument = typed(value, DOC)?;
            let named = non_empty(doc.hostname.as_ref());
            match (doc.auto.as_deref(), named) {
                (Some("stable"), Some(_)) => {
                    return Err(ConfigError::invalid(
                        DOC,
                        "'auto' and 'hostname' cannot be set at the same time",
                    ));
                }
                (None | Some("off"), None) => {
                    return Err(ConfigError::invalid(
                        DOC,
                        "either 'auto' or 'hostname' must be set",
                    ));
                }
                (Some(other), _) if other != "stable" && other != "off" => {
                    return Err(ConfigError::invalid(
                        DOC,
                        format!("invalid value for 'auto': {other}"),
                    ));
                }
                _ => {}
            }
            if legacy.is_some() {
                return Err(ConfigError::invalid(
                    DOC,
                    "static hostname is already set in v1alpha1 config",
                ));
            }
            if stable {
                return Err(ConfigError::invalid(
                    DOC,
                    "stable hostname is already set in v1alpha1 config",
                ));
            }
            named.map(str::to_string)
        }
    };
    match from_document.or(legacy.map(str::to_string)) {
        Some(name) if !is_hostname(&name) => Err(ConfigError::invalid(
            "hostname",
            format!("invalid hostname {name:?}"),
        )),
        name => Ok(name),
    }
}
