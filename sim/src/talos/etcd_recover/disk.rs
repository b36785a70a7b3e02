//! What a node's disk keeps of a recovery: the uploaded snapshot (Talos'
//! `/var/lib/etcd.snapshot`) and a recovering Bootstrap that passed its
//! checks. Types only, so that the node's disk can hold them.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

/// An uploaded snapshot; clones share the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Upload(Arc<[u8]>);

impl Upload {
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes.into())
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn to_base64(&self) -> String {
        BASE64.encode(&self.0)
    }

    pub fn from_base64(text: &str) -> Option<Self> {
        BASE64.decode(text).ok().map(Self::new)
    }
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Upload({} bytes)", self.0.len())
    }
}

/// A recovering Bootstrap that passed its checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// The etcd cluster the founder starts.
    pub ring: u64,
    /// On a ring with real components, whose etcd has yet to restore the
    /// snapshot (`Disk::etcd_snapshot`) before it first starts.
    pub real: Option<RealRestore>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealRestore {
    pub skip_hash_check: bool,
}
