//! What state records of each node (name, server, private IP, config
//! fingerprint), and the recorder that keeps it current while a group
//! operation runs, so a failure half-way still saves every server.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use super::naming;

/// A node as state records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    pub name: String,
    pub server_id: i64,
    pub ip: Ipv4Addr,
    /// SHA-256 of the machine config the node was given; None when unknown
    /// (an adopted server), which makes the next apply re-apply it.
    pub config_sha256: Option<String>,
}

/// The group's nodes as they are right now, shared with whoever must save
/// them if the operation fails half-way (partial state).
#[derive(Debug, Clone, Default)]
pub struct Recorder(Arc<Mutex<BTreeMap<(u32, String), NodeRecord>>>);

impl Recorder {
    pub fn new(cluster: &str, group: &str, nodes: Vec<NodeRecord>) -> Self {
        let recorder = Self::default();
        for node in nodes {
            recorder.put(cluster, group, node);
        }
        recorder
    }

    /// Records (or replaces) a node.
    pub fn put(&self, cluster: &str, group: &str, node: NodeRecord) {
        let index = naming::node_index(cluster, group, &node.name).unwrap_or(u32::MAX);
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nodes.retain(|(_, name), _| *name != node.name);
        nodes.insert((index, node.name.clone()), node);
    }

    pub fn remove(&self, name: &str) {
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nodes.retain(|(_, n), _| n != name);
    }

    pub(super) fn update(&self, name: &str, change: impl FnOnce(&mut NodeRecord)) {
        let mut nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = nodes.values_mut().find(|n| n.name == name) {
            change(node);
        }
    }

    /// The nodes by index.
    pub fn nodes(&self) -> Vec<NodeRecord> {
        let nodes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nodes.values().cloned().collect()
    }

    pub fn node(&self, name: &str) -> Option<NodeRecord> {
        self.nodes().into_iter().find(|n| n.name == name)
    }
}
