//! The user's Hetzner labels (`server_labels`): Hetzner's rules for keys
//! and values, and the keys hct keeps for itself.

use crate::cluster::naming::RESERVED_LABELS;
use crate::tf::{AttrPath, Diagnostic, Diagnostics, Value};

/// Hetzner label rules for the user's `server_labels`, and hct's own keys.
pub fn validate_server_labels(value: &Value, path: AttrPath) -> Diagnostics {
    let mut found = Diagnostics::new();
    let Some(labels) = value.as_map() else {
        return found;
    };
    for (key, label_value) in labels {
        let at = path.key(key.clone());
        if RESERVED_LABELS.contains(&key.as_str()) {
            found.push(
                Diagnostic::error(
                    "Reserved server label",
                    format!(
                        "hct sets the label {key:?} itself (it marks the servers it owns). Use \
                         another key."
                    ),
                )
                .at(at.clone()),
            );
        }
        if !is_label_key(key) {
            found.push(
                Diagnostic::error(
                    "Invalid server label key",
                    format!(
                        "{key:?}: Hetzner label keys are an optional DNS-subdomain prefix and \
                         `/`, then 1-63 characters [a-zA-Z0-9._-] starting and ending \
                         alphanumeric."
                    ),
                )
                .at(at.clone()),
            );
        }
        if let Some(text) = label_value.as_str()
            && !(text.is_empty() || is_label_name(text))
        {
            found.push(
                Diagnostic::error(
                    "Invalid server label value",
                    format!(
                        "{text:?}: Hetzner label values are empty or 1-63 characters \
                         [a-zA-Z0-9._-] starting and ending alphanumeric."
                    ),
                )
                .at(at),
            );
        }
    }
    found
}

fn is_label_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_label_key(key: &str) -> bool {
    match key.rsplit_once('/') {
        Some((prefix, name)) => {
            !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|part| {
                    !part.is_empty()
                        && part
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                })
                && is_label_name(name)
        }
        None => is_label_name(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_rules_follow_hetzner() {
        assert!(is_label_key("team"));
        assert!(is_label_key("example.com/team"));
        assert!(!is_label_key("-team"));
        assert!(!is_label_key(&"a".repeat(64)));
        let labels = Value::object([("cluster", Value::from("x")), ("ok", Value::from("fine"))]);
        let found = validate_server_labels(&labels, AttrPath::attr("server_labels"));
        assert_eq!(found.iter().count(), 1);
    }
}
