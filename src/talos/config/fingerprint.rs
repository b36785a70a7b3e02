//! What a machine config says, as a SHA-256: the same for any YAML that
//! means the same config, so a config read back from a node compares with
//! the one hct applied.
//!
//! Each document becomes JSON with sorted keys, without `null` entries (the
//! same as absent to any reader). Formatting, key order, quoting and
//! comments do not count; every value does, `false`, `0` and `""` included:
//! Talos tells an explicit `false` from an absent field, and an empty label
//! value is a label.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::talos::yaml;

/// The fingerprint of a config's meaning; of its bytes if it is not YAML.
pub fn config_sha256(text: &str) -> String {
    let digest = match yaml::parse_documents(text) {
        Ok(documents) => {
            let mut hasher = Sha256::new();
            for document in documents.iter().filter_map(canonical) {
                hasher.update(serde_json::to_vec(&document).unwrap_or_default());
                hasher.update(b"\n");
            }
            hasher.finalize()
        }
        Err(_) => Sha256::digest(text.as_bytes()),
    };
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value with its maps' keys sorted and their `null` entries left out;
/// `None` for `null` itself.
fn canonical(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        // Inside a list every element counts, null or not.
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|item| canonical(item).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> = map
                .iter()
                .filter_map(|(key, value)| Some((key, canonical(value)?)))
                .collect();
            Some(Value::Object(
                sorted
                    .into_iter()
                    .map(|(key, value)| (key.clone(), value))
                    .collect(),
            ))
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPLIED: &str = "version: v1alpha1\nmachine:\n    type: worker\n    nodeLabels:\n        purpose: general\n    kubelet:\n        disableManifestsDirectory: false\n        extraArgs: {}\ncluster:\n    clusterName: noreturn\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: noreturn-general-1\nauto: \"off\"\n";

    #[test]
    fn formatting_order_quotes_comments_and_nulls_do_not_count() {
        let rewritten = "# written back by the node\nversion: \"v1alpha1\"\ncluster: {clusterName: noreturn}\nmachine:\n  nodeLabels: {purpose: 'general'}\n  kubelet: {extraArgs: {}, disableManifestsDirectory: false}\n  type: worker\n---\nkind: HostnameConfig\napiVersion: v1alpha1\nauto: \"off\"\nhostname: noreturn-general-1\nstable: null\n";
        assert_eq!(config_sha256(APPLIED), config_sha256(rewritten));
    }

    #[test]
    fn explicit_false_zero_and_empty_values_count() {
        let base = config_sha256(APPLIED);
        // An empty label value is a label.
        let labelled = APPLIED.replace(
            "purpose: general",
            "purpose: general\n        node-role.kubernetes.io/ingress: \"\"",
        );
        assert_ne!(base, config_sha256(&labelled));
        // Absent and false differ where Talos defaults to true.
        let without = APPLIED.replace("        disableManifestsDirectory: false\n", "");
        assert_ne!(base, config_sha256(&without));
        let without = APPLIED.replace("        extraArgs: {}\n", "");
        assert_ne!(base, config_sha256(&without));
    }

    #[test]
    fn a_changed_value_a_new_entry_or_a_reordered_list_counts() {
        let base = config_sha256(APPLIED);
        let changed = APPLIED.replace("purpose: general", "purpose: edited");
        assert_ne!(base, config_sha256(&changed));
        let added = APPLIED.replace(
            "type: worker",
            "type: worker\n    sysctls:\n        a: \"1\"",
        );
        assert_ne!(base, config_sha256(&added));
        let list = |items: &str| format!("version: v1alpha1\nmachine:\n    certSANs: [{items}]\n");
        assert_ne!(config_sha256(&list("a, b")), config_sha256(&list("b, a")));
        // Document order matters too: Talos reads them in order.
        let (first, second) = APPLIED.split_once("---\n").unwrap();
        assert_ne!(base, config_sha256(&format!("{second}---\n{first}")));
    }

    #[test]
    fn text_that_is_not_yaml_is_hashed_as_bytes() {
        let garbage = "machine: [unclosed";
        let bytes: String = Sha256::digest(garbage.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(config_sha256(garbage), bytes);
    }
}
