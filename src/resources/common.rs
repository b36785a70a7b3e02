//! What `hct_cluster` and `hct_worker_pool` share: the node list in state,
//! `timeouts`, label maps, and reaching the nodes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cluster::NodeRecord;
use crate::cluster::naming::{self, RESERVED_LABELS};
use crate::cluster::running_config;
use crate::cluster::settings::ClusterSettings;
use crate::duration;
use crate::hcloud::models::{Labels, Server};
use crate::provider::Applied;
use crate::provider::Context;
use crate::tf::{
    AttrPath, Attribute, Block, Diagnostic, Diagnostics, NestedBlock, Nesting, Type, Value,
};

/// The type of `control_plane_nodes` and `nodes`.
pub fn node_list_type() -> Type {
    Type::list(Type::Object(BTreeMap::from([
        ("name".to_string(), Type::String),
        ("server_id".to_string(), Type::Number),
        ("ip".to_string(), Type::String),
        ("config_sha256".to_string(), Type::String),
    ])))
}

pub const NODE_LIST_DESCRIPTION: &str = "The nodes in index order: `name` (the Hetzner server \
    name, also the Kubernetes node name), `server_id`, `ip` (private) and `config_sha256` (a \
    fingerprint of the machine config's meaning: of the config hct gave the node, and after each \
    refresh of the config the node runs, read back over the Talos API; a planned change here \
    means hct re-applies the node's config).";

pub fn node_value(node: &NodeRecord) -> Value {
    Value::object([
        ("name", Value::from(node.name.as_str())),
        ("server_id", Value::from(node.server_id)),
        ("ip", Value::from(node.ip.as_str())),
        ("config_sha256", Value::from(node.config_sha256.clone())),
    ])
}

pub fn nodes_value(nodes: &[NodeRecord]) -> Value {
    Value::List(nodes.iter().map(node_value).collect())
}

/// The nodes recorded in state (entries with unknown ids are skipped).
pub fn nodes_from(value: &Value) -> Vec<NodeRecord> {
    value
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|node| {
            Some(NodeRecord {
                name: node.get("name").as_str()?.to_string(),
                server_id: node.get("server_id").as_i64()?,
                ip: node.get("ip").as_str().unwrap_or_default().to_string(),
                config_sha256: node.get("config_sha256").as_str().map(str::to_string),
            })
        })
        .collect()
}

/// Sets attribute `name` of an object value.
pub fn set(value: &mut Value, name: &str, to: Value) {
    if let Value::Map(items) = value {
        items.insert(name.to_string(), to);
    }
}

/// An apply that changed nothing: `state` stays, with the error.
pub fn failed(state: Value, diagnostic: Diagnostic) -> Applied {
    Applied {
        new_state: state,
        private: Vec::new(),
        diagnostics: diagnostic.into(),
    }
}

/// The nodes of state that still have their server, with the server's
/// current private IP in `network`.
pub fn refresh_nodes(
    nodes: Vec<NodeRecord>,
    servers: &[Server],
    network: Option<i64>,
) -> Vec<NodeRecord> {
    nodes
        .into_iter()
        .filter_map(|mut node| {
            let server = servers.iter().find(|s| s.id == node.server_id)?;
            if let Some(ip) = network.and_then(|n| server.private_ip(n)) {
                node.ip = ip.to_string();
            }
            Some(node)
        })
        .collect()
}

/// Puts the fingerprints of the configs the nodes run into `nodes` (drift
/// of configs changed outside hct). Nodes it cannot ask keep their recorded
/// hash; a warning names them.
pub async fn refresh_running_configs(
    ctx: &Context,
    nodes: &mut [NodeRecord],
    settings: Result<ClusterSettings, String>,
) -> Option<Diagnostic> {
    let not_checked = |why: String| {
        Diagnostic::warning(
            "Node configs not checked",
            format!(
                "hct could not read back the machine config of {why}. The config hashes \
                 recorded in state are kept, so a config changed outside hct on these nodes \
                 does not show in this plan. hct reaches nodes at their private IPs: when \
                 Terraform runs outside the private network, set talos_proxy (or \
                 HCT_TALOS_PROXY)."
            ),
        )
    };
    let trust = match settings.and_then(|s| s.api_trust().map_err(|e| e.to_string())) {
        Ok(trust) => trust,
        Err(e) => return Some(not_checked(format!("any node ({e})"))),
    };
    let proxy = match ctx.talos_proxy().await {
        Ok(proxy) => proxy,
        Err(d) => return Some(not_checked(format!("any node ({})", d.summary))),
    };
    let unchecked = running_config::refresh(nodes, proxy, &trust, &ctx.cancel).await;
    if unchecked.is_empty() {
        None
    } else {
        Some(not_checked(unchecked.join("; ")))
    }
}

/// The type of the first server that is not of type `wanted` (shown as a
/// diff, so apply resizes it back).
pub fn drifted_server_type(servers: &[Server], wanted: Option<&str>) -> Option<String> {
    servers
        .iter()
        .map(|s| &s.server_type.name)
        .find(|name| Some(name.as_str()) != wanted)
        .cloned()
}

/// The user labels of the first server whose labels differ from `wanted`
/// (shown as a diff, so apply restores them).
pub fn drifted_labels(servers: &[Server], wanted: &Labels) -> Option<Labels> {
    servers
        .iter()
        .map(|s| naming::user_labels(&s.labels))
        .find(|labels| labels != wanted)
}

/// The nodes of an imported group, by index, and their network. Their
/// config is unknown, so the first apply re-applies it.
pub fn imported_nodes(servers: &[Server], cluster: &str, group: &str) -> (i64, Vec<NodeRecord>) {
    let network = servers
        .first()
        .and_then(|s| s.private_net.first())
        .map(|n| n.network)
        .unwrap_or_default();
    let mut nodes: Vec<NodeRecord> = servers
        .iter()
        .map(|s| NodeRecord {
            name: s.name.clone(),
            server_id: s.id,
            ip: s.private_ip(network).unwrap_or_default().to_string(),
            config_sha256: None,
        })
        .collect();
    nodes.sort_by_key(|n| naming::node_index(cluster, group, &n.name).unwrap_or(u32::MAX));
    (network, nodes)
}

/// The `timeouts` block: Go durations per operation.
pub fn timeouts_block(create: &str, update: &str, delete: &str) -> NestedBlock {
    let attribute = |name: &str, default: &str| {
        Attribute::optional(name, Type::String).description(format!(
            "How long {name} may take, e.g. `45m` (default `{default}`). hct stops at the \
             deadline with an error naming the node it waited for."
        ))
    };
    NestedBlock::new(
        "timeouts",
        Nesting::Single,
        Block {
            description: "Time limits of the operations.".into(),
            attributes: vec![
                attribute("create", create),
                attribute("update", update),
                attribute("delete", delete),
            ],
            blocks: vec![],
        },
    )
}

/// The limit for `operation` (`create`, `update`, `delete`).
pub fn timeout(value: &Value, operation: &str, default: Duration) -> Result<Duration, Diagnostic> {
    match value.get("timeouts").get(operation).as_str() {
        None => Ok(default),
        Some(text) => duration::parse(text).map_err(|why| {
            Diagnostic::error(
                "Invalid timeout",
                format!("{text:?}: {why}. Write e.g. \"30m\" or \"1h30m\"."),
            )
            .at(AttrPath::attr("timeouts").attr_of(operation))
        }),
    }
}

pub fn validate_timeouts(config: &Value) -> Diagnostics {
    ["create", "update", "delete"]
        .into_iter()
        .filter_map(|op| timeout(config, op, Duration::ZERO).err())
        .collect()
}

pub fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_map()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

pub fn string_list(value: &Value) -> Vec<String> {
    value
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

pub fn map_value(map: &BTreeMap<String, String>) -> Value {
    Value::Map(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect(),
    )
}

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

/// A Terraform number attribute as i64 (ids).
pub fn int(value: &Value) -> Option<i64> {
    value.as_i64()
}

/// An attribute of the config, checked by validate; a placeholder text for
/// messages when missing.
pub fn text<'a>(value: &'a Value, name: &str) -> &'a str {
    value.get(name).as_str().unwrap_or_default()
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

    #[test]
    fn nodes_round_trip_through_state() {
        let nodes = vec![NodeRecord {
            name: "c-cp-1".into(),
            server_id: 7,
            ip: "10.0.128.17".into(),
            config_sha256: None,
        }];
        assert_eq!(nodes_from(&nodes_value(&nodes)), nodes);
    }

    #[test]
    fn timeouts_parse_with_defaults() {
        let config = Value::object([("timeouts", Value::object([("create", Value::from("45m"))]))]);
        assert_eq!(
            timeout(&config, "create", Duration::ZERO).unwrap(),
            Duration::from_secs(2700)
        );
        assert_eq!(
            timeout(&config, "delete", Duration::from_secs(5)).unwrap(),
            Duration::from_secs(5)
        );
        let bad = Value::object([("timeouts", Value::object([("create", Value::from("soon"))]))]);
        assert!(timeout(&bad, "create", Duration::ZERO).is_err());
    }
}
