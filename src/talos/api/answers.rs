//! What the Talos API's calls answer, as hct uses it.

/// What Talos did with an applied configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub mode: String,
    pub details: String,
    pub warnings: Vec<String>,
}

/// Whether this call bootstrapped etcd or it had been done already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bootstrapped {
    Now,
    Already,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdMember {
    pub id: u64,
    pub hostname: String,
    pub is_learner: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub id: String,
    pub state: String,
    pub healthy: bool,
    /// Its last health message (for one that waits: what for).
    pub message: String,
}
