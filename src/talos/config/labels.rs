//! Kubernetes' rules for node label and taint keys and values, checked here
//! because Talos rejects a config with a bad one only on the node, at boot.

use std::collections::BTreeMap;

use super::ConfigError;

/// Taint effects Kubernetes knows.
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

pub(crate) fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (key, value) in labels {
        check_key("node_labels", key)?;
        check_value("node_labels", key, value)?;
    }
    Ok(())
}

/// Talos' taint form: `key: value:Effect` or `key: Effect`.
pub(crate) fn check_taints(taints: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (key, taint) in taints {
        check_key("node_taints", key)?;
        let (value, effect) = taint.split_once(':').unwrap_or(("", taint));
        if !TAINT_EFFECTS.contains(&effect) {
            return Err(invalid(
                "node_taints",
                format!(
                    "{key:?}: effect {effect:?} must be one of {TAINT_EFFECTS:?} (write \"value:Effect\" or \"Effect\")"
                ),
            ));
        }
        check_value("node_taints", key, value)?;
    }
    Ok(())
}

/// `[prefix/]name`: prefix a DNS subdomain, name up to 63 characters of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn check_key(field: &'static str, key: &str) -> Result<(), ConfigError> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err(invalid(
            field,
            format!("{key:?}: prefix must be a DNS subdomain"),
        ));
    }
    if !is_qualified_name(name) {
        return Err(invalid(
            field,
            format!(
                "{key:?}: name must be 1-63 characters [A-Za-z0-9_.-], starting and ending alphanumeric"
            ),
        ));
    }
    Ok(())
}

fn check_value(field: &'static str, key: &str, value: &str) -> Result<(), ConfigError> {
    if value.is_empty() || is_qualified_name(value) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "{key:?}: value must be empty or 1-63 characters [A-Za-z0-9_.-], starting and ending alphanumeric"
            ),
        ))
    }
}

fn is_qualified_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            bytes.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Lower-case DNS labels joined by dots, at most 253 characters.
pub(crate) fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_dns_label)
}

/// 1-63 of `[a-z0-9-]`, starting and ending alphanumeric.
pub(crate) fn is_dns_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            bytes.len() <= 63
                && (first.is_ascii_lowercase() || first.is_ascii_digit())
                && (last.is_ascii_lowercase() || last.is_ascii_digit())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        }
        _ => false,
    }
}

fn invalid(field: &'static str, reason: String) -> ConfigError {
    ConfigError::InvalidInput { field, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn kubernetes_style_labels_pass() {
        assert!(
            check_labels(&map(&[
                ("node.kubernetes.io/pool", "platform"),
                ("tier", ""),
                ("example.com/a_b.c-d", "X_1.y-2"),
            ]))
            .is_ok()
        );
    }

    #[test]
    fn bad_labels_are_named() {
        for (key, value) in [
            ("", "x"),
            ("-start", "x"),
            ("Example.com/x", "x"),
            ("a/b/c", "x"),
            ("ok", "spaces not allowed"),
            ("ok", "-dash"),
            (&"k".repeat(64)[..], "x"),
        ] {
            let error = check_labels(&map(&[(key, value)])).unwrap_err().to_string();
            assert!(error.starts_with("invalid node_labels:"), "{error}");
        }
    }

    #[test]
    fn taints_need_a_known_effect() {
        assert!(
            check_taints(&map(&[
                ("dedicated", "platform:NoSchedule"),
                ("gpu", "NoExecute")
            ]))
            .is_ok()
        );
        for taint in ["platform", "platform:Sometimes", "bad value:NoSchedule", ""] {
            let error = check_taints(&map(&[("dedicated", taint)]))
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("invalid node_taints:"), "{error}");
        }
    }
}
