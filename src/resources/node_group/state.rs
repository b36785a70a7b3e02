//! The node list of a group in state (`control_plane_nodes`, `nodes`).

use std::collections::BTreeMap;

use crate::cluster::NodeRecord;
use crate::tf::{Type, Value};

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

pub fn nodes_value(nodes: &[NodeRecord]) -> Value {
    Value::List(
        nodes
            .iter()
            .map(|node| {
                Value::object([
                    ("name", Value::from(node.name.as_str())),
                    ("server_id", Value::from(node.server_id)),
                    ("ip", Value::from(node.ip.to_string())),
                    ("config_sha256", Value::from(node.config_sha256.clone())),
                ])
            })
            .collect(),
    )
}

/// The nodes recorded in state (entries with unknown ids or IPs are
/// skipped: the next apply adopts their servers again).
pub fn nodes_from(value: &Value) -> Vec<NodeRecord> {
    value
        .as_list()
        .unwrap_or_default()
        .iter()
        .filter_map(|node| {
            Some(NodeRecord {
                name: node.get("name").as_str()?.to_string(),
                server_id: node.get("server_id").as_i64()?,
                ip: node.get("ip").as_str()?.parse().ok()?,
                config_sha256: node.get("config_sha256").as_str().map(str::to_string),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_round_trip_through_state() {
        let nodes = vec![NodeRecord {
            name: "c-cp-1".into(),
            server_id: 7,
            ip: "10.0.128.17".parse().unwrap(),
            config_sha256: None,
        }];
        assert_eq!(nodes_from(&nodes_value(&nodes)), nodes);
    }
}
