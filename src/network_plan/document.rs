//! The plan as one JSON document (what `hct_cluster` takes as input), and the
//! plan's id.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::input::{NetworkPlanInput, NodeGroupInput};
use super::{FIRST_CONTROL_PLANE, LOAD_BALANCER, NetworkPlan, NodeGroup};

/// Bumped whenever the document's meaning changes, so an old reader rejects
/// a newer document instead of misreading it.
const VERSION: u64 = 1;

impl NetworkPlan {
    /// The whole plan, CIDRs and IPs as strings, counts as numbers.
    pub fn to_json(&self) -> Value {
        let pools: Map<String, Value> = self
            .worker_pools()
            .iter()
            .map(|(name, pool)| (name.clone(), group_json(pool)))
            .collect();
        let mut doc = json!({
            "version": VERSION,
            "network_cidr": self.network_cidr().to_string(),
            "node_subnet": self.node_subnet().to_string(),
            "gateway": self.gateway().to_string(),
            "control_plane": group_json(self.control_plane()),
            "worker_pools": pools,
            "node_cidrs": strings(self.node_cidrs()),
            "service_cidr": self.service_cidr().to_string(),
            "pod_cidr": self.pod_cidr().to_string(),
            "pod_cidr_mask_size": self.pod_cidr_mask_size(),
            "native_routing_cidr": self.native_routing_cidr().to_string(),
            "multi_datacenter": self.multi_datacenter(),
            "cluster_endpoint": self.cluster_endpoint(),
            "etcd_advertised_subnets": strings(self.etcd_advertised_subnets()),
            "max_nodes": self.max_nodes(),
            "placement_groups": self.placement_groups(),
        });
        // Only a load balancer adds fields, so that documents of clusters
        // using the first control plane stay as they were.
        if let Some(ip) = self.load_balancer_ip() {
            doc["api_endpoint"] = json!(LOAD_BALANCER);
            doc["load_balancer_ip"] = json!(ip.to_string());
        }
        doc
    }

    /// Reads a document written by [`NetworkPlan::to_json`].
    ///
    /// The plan is re-derived from the document's inputs and validated again;
    /// every derived field must match, so a hand-edited or stale document is
    /// rejected instead of half-trusted.
    pub fn from_json(value: &Value) -> Result<NetworkPlan, String> {
        let doc = value
            .as_object()
            .ok_or("a network plan must be a JSON object")?;
        match doc.get("version").and_then(whole_number) {
            Some(version) if version == VERSION as i64 => {}
            Some(version) => {
                return Err(format!(
                    "unsupported network plan version {version}; this provider reads version \
                     {VERSION}"
                ));
            }
            None => return Err("network plan has no numeric \"version\"".to_owned()),
        }

        let input = NetworkPlanInput {
            network_cidr: Some(string(doc, "network_cidr")?),
            node_subnet: Some(string(doc, "node_subnet")?),
            control_plane: Some(group_input(field(doc, "control_plane")?, "control_plane")?),
            worker_pools: Some(
                object(field(doc, "worker_pools")?, "worker_pools")?
                    .iter()
                    .map(|(name, group)| {
                        Ok((
                            name.clone(),
                            group_input(group, &format!("worker_pools.{name}"))?,
                        ))
                    })
                    .collect::<Result<BTreeMap<_, _>, String>>()?,
            ),
            service_cidr: Some(string(doc, "service_cidr")?),
            pod_cidr: Some(string(doc, "pod_cidr")?),
            pod_cidr_mask_size: Some(number(doc, "pod_cidr_mask_size")?),
            native_routing_cidr: Some(string(doc, "native_routing_cidr")?),
            multi_datacenter: Some(
                field(doc, "multi_datacenter")?
                    .as_bool()
                    .ok_or("\"multi_datacenter\" must be a boolean")?,
            ),
            api_endpoint: Some(match doc.get("api_endpoint") {
                None => FIRST_CONTROL_PLANE.to_owned(),
                Some(_) => string(doc, "api_endpoint")?,
            }),
            load_balancer_ip: Some(match doc.get("load_balancer_ip") {
                None => None,
                Some(_) => Some(string(doc, "load_balancer_ip")?),
            }),
        };

        let (plan, _warnings) = super::plan(&input).map_err(|diagnostics| {
            let errors: Vec<String> = diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(ToString::to_string)
                .collect();
            format!("invalid network plan: {}", errors.join("; "))
        })?;

        let expected = plan.to_json();
        let expected = object(&expected, "network plan")?;
        if let Some(key) = doc.keys().find(|key| !expected.contains_key(*key)) {
            return Err(format!("network plan has an unknown field {key:?}"));
        }
        for (key, derived) in expected {
            if !same_json(field(doc, key)?, derived) {
                return Err(format!(
                    "network plan field {key:?} does not match its inputs: expected {derived}"
                ));
            }
        }
        Ok(plan)
    }

    /// A stable id for the plan: the first 16 hex digits of the SHA-256 of
    /// its inputs as canonical JSON (fixed key order, no whitespace).
    pub fn id(&self) -> String {
        let pools: Map<String, Value> = self
            .worker_pools()
            .iter()
            .map(|(name, pool)| (name.clone(), group_input_json(pool)))
            .collect();
        // Keys in alphabetical order; `json!` keeps insertion order.
        let mut inputs = json!({
            "control_plane": group_input_json(self.control_plane()),
            "multi_datacenter": self.multi_datacenter(),
            "native_routing_cidr": self.native_routing_cidr().to_string(),
            "network_cidr": self.network_cidr().to_string(),
            "node_subnet": self.node_subnet().to_string(),
            "pod_cidr": self.pod_cidr().to_string(),
            "pod_cidr_mask_size": self.pod_cidr_mask_size(),
            "service_cidr": self.service_cidr().to_string(),
            "worker_pools": pools,
        });
        // Absent for the first control plane, so those ids stay as they were.
        if let Some(ip) = self.load_balancer_ip() {
            let inputs = inputs.as_object_mut().expect("an object");
            let mut sorted: BTreeMap<String, Value> = std::mem::take(inputs).into_iter().collect();
            sorted.insert("api_endpoint".to_owned(), json!(LOAD_BALANCER));
            sorted.insert("load_balancer_ip".to_owned(), json!(ip.to_string()));
            inputs.extend(sorted);
        }
        let digest = Sha256::digest(inputs.to_string().as_bytes());
        digest
            .iter()
            .take(8)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

fn group_json(group: &NodeGroup) -> Value {
    json!({
        "cidr": group.cidr.to_string(),
        "nodes": group.nodes,
        "ips": strings(group.ips.iter()),
    })
}

fn group_input_json(group: &NodeGroup) -> Value {
    json!({ "cidr": group.cidr.to_string(), "nodes": group.nodes })
}

fn strings<T: ToString>(items: impl IntoIterator<Item = T>) -> Vec<String> {
    items.into_iter().map(|item| item.to_string()).collect()
}

fn group_input(value: &Value, name: &str) -> Result<NodeGroupInput, String> {
    let group = object(value, name)?;
    Ok(NodeGroupInput {
        cidr: Some(string(group, "cidr").map_err(|e| format!("{name}: {e}"))?),
        nodes: Some(number(group, "nodes").map_err(|e| format!("{name}: {e}"))?),
    })
}

fn field<'a>(doc: &'a Map<String, Value>, key: &str) -> Result<&'a Value, String> {
    doc.get(key)
        .ok_or_else(|| format!("network plan is missing {key:?}"))
}

fn object<'a>(value: &'a Value, name: &str) -> Result<&'a Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{name:?} must be an object"))
}

fn string(doc: &Map<String, Value>, key: &str) -> Result<String, String> {
    field(doc, key)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{key:?} must be a string"))
}

fn number(doc: &Map<String, Value>, key: &str) -> Result<i64, String> {
    whole_number(field(doc, key)?).ok_or_else(|| format!("{key:?} must be a whole number"))
}

/// An integer, also when it went through a float (Terraform numbers may).
fn whole_number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        let float = value.as_f64()?;
        (float.fract() == 0.0 && float.abs() < 1e15).then_some(float as i64)
    })
}

/// JSON equality where `3` and `3.0` are the same number.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same_json(a, b)))
        }
        _ => a == b,
    }
}
