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

/// What a control plane says of the cluster's etcd when asked for its
/// members. Talos asks etcd through every control-plane endpoint it knows
/// (not only its own etcd), and blocks until the call's deadline when none
/// answers: so a deadline means "no etcd reachable from here", and etcd's
/// own "no leader" means an etcd exists that lost its quorum. Any other
/// failure is no answer at all (see [`TalosClient::etcd_members`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdMembers {
    /// etcd answered with its members.
    Listed(Vec<EtcdMember>),
    /// No etcd answered within the call's deadline: none runs that this
    /// node can reach.
    NoneReachable(String),
    /// An etcd answered without a leader: it exists, without quorum.
    NoLeader(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub id: String,
    pub state: String,
    pub healthy: bool,
    /// Its last health message (for one that waits: what for).
    pub message: String,
}
