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
    /// SHA-256 of the machine config the node was given; None when state
    /// never saw the node configured (a server hct made, adopted after a
    /// killed run), [`IMPORTED`] for an imported one; either makes the next
    /// apply re-apply it. A node
    /// configured once that a refresh found answering otherwise records
    /// how instead ([`NodeRecord::untrusted`]): never None again, so hct never
    /// treats it as new and sends it a config without the cluster's CA.
    pub config_sha256: Option<String>,
}

/// How a configured node may answer that is not as this cluster's node.
pub const IN_MAINTENANCE: &str = "answers in maintenance mode";
pub const FOREIGN_CA: &str = "answers with another cluster's CA";
/// What `config_sha256` records of such a node, before the answer: shown
/// as such in a plan, never a fingerprint.
const UNTRUSTED: &str = "untrusted: ";
/// What `config_sha256` records of an imported node until a refresh reads
/// its config: configured before, config unknown (re-applied, over mTLS).
pub const IMPORTED: &str = "unknown: imported";

impl NodeRecord {
    /// Records that the node answered `answer` ([`IN_MAINTENANCE`],
    /// [`FOREIGN_CA`]).
    pub fn set_untrusted(&mut self, answer: &str) {
        self.config_sha256 = Some(format!("{UNTRUSTED}{answer}"));
    }

    /// How the node answered if it no longer answers as this cluster's.
    pub fn untrusted(&self) -> Option<&str> {
        self.config_sha256.as_deref()?.strip_prefix(UNTRUSTED)
    }

    /// Whether hct has never seen the node configured: the only case in
    /// which it may send a config to a node in maintenance mode.
    pub fn never_configured(&self) -> bool {
        self.config_sha256.is_none()
    }
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
