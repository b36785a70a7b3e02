//! What a rescue system leaves on the server's record: the session it runs
//! and the Talos image it wrote to the disk. A leaf, so that the record
//! can hold them without depending on the rest of the rescue emulation.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;

/// The rescue system a server runs now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RescueSession {
    /// OpenSSH public keys that may log in as root.
    pub keys: Vec<String>,
    pub booted_at: Timestamp,
}

/// What the rescue system wrote to the server's disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskImage {
    pub image_url: String,
    pub version: String,
    pub arch: String,
    /// The full schematic ID.
    pub schematic: String,
    /// The type of the server that wrote it (its architecture is the snapshot's).
    pub server_type: String,
    pub written_at: Timestamp,
}
