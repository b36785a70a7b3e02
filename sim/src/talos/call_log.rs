//! Every Talos API call the emulated nodes were sent, in order: which node
//! (the one whose apid took the connection, and the peer named by `node`
//! metadata, if any), which call, who the caller was and when. Tests read
//! it to hold a client to what it must *not* have done (no Bootstrap after
//! the first apply, no config to a node that answered with another CA);
//! `GET /_sim/talos/calls` serves it. Never holds a request's payload.

use serde::Serialize;

use super::auth::{Call, Caller};
use crate::ids::Id;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TalosCall {
    pub at_ms: u64,
    pub server: Id,
    /// The server's name when the call came.
    pub node: String,
    /// As Talos names the RPC (`ApplyConfiguration`, `Bootstrap`, …).
    pub call: String,
    pub caller: CallerKind,
    /// The `node` metadata, when the call was to be proxied to a peer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxied_to: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerKind {
    /// No client certificate (maintenance mode).
    Anonymous,
    /// A certificate of the node's OS CA.
    Verified,
    /// A certificate of another CA (refused).
    Untrusted,
}

impl From<&Caller> for CallerKind {
    fn from(caller: &Caller) -> Self {
        match caller {
            Caller::Anonymous => Self::Anonymous,
            Caller::Verified { .. } => Self::Verified,
            Caller::Untrusted { .. } => Self::Untrusted,
        }
    }
}

impl TalosCall {
    pub fn new(
        at_ms: u64,
        (server, node): (Id, String),
        call: Call,
        caller: &Caller,
        proxied_to: Option<String>,
    ) -> Self {
        Self {
            at_ms,
            server,
            node,
            call: call.to_string(),
            caller: caller.into(),
            proxied_to,
        }
    }
}
