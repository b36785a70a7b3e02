//! Faults of the emulated Talos nodes, written like the emulator's other
//! faults (`--fault`, `POST /_sim/faults`):
//!
//! ```json
//! {"talos": "unreachable", "server": "cp-1"}
//! {"talos": "slow_boot", "server": 5000001, "delay_ms": 30000}
//! {"talos": "apply_rejected", "code": "invalid_argument", "message": "disk full", "count": 1}
//! {"talos": "apiserver_down", "server": "cp-1"}
//! {"talos": "call_fails", "call": "Bootstrap", "server": "cp-1", "count": 3}
//! {"talos": "reinstalled", "server": "cp-2", "with": "foreign_ca"}
//! ```
//!
//! `reinstalled` acts once, when it is added: the node's disk is wiped (its
//! etcd member stays listed, as after a reset without leaving) and the node
//! reboots in maintenance mode (`"with": "maintenance"`) or configured by
//! another cluster's secrets (`"with": "foreign_ca"`): what hct sees of a
//! server someone reinstalled behind its back.
//!
//! `server` is a name or an ID; without it the fault hits every node.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tonic::Code;

use crate::ids::Id;
use crate::resources::servers::Server;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ServerRef {
    Id(Id),
    Name(String),
}

impl ServerRef {
    pub(crate) fn matches(&self, server: &Server) -> bool {
        match self {
            Self::Id(id) => server.id == *id,
            Self::Name(name) => server.name == *name,
        }
    }
}

impl From<Id> for ServerRef {
    fn from(id: Id) -> Self {
        Self::Id(id)
    }
}

impl From<&str> for ServerRef {
    fn from(name: &str) -> Self {
        Self::Name(name.to_string())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "talos", rename_all = "snake_case", deny_unknown_fields)]
pub enum TalosFault {
    /// apid is not registered with the proxy: connections are refused.
    Unreachable {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
    },
    /// Every boot of the node takes this much longer.
    SlowBoot {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
        delay_ms: u64,
    },
    /// ApplyConfiguration answers with this status instead.
    ApplyRejected {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
        #[serde(default = "GrpcCode::default_rejection")]
        code: GrpcCode,
        #[serde(default)]
        message: Option<String>,
        /// How many calls are rejected; all when absent.
        #[serde(default)]
        count: Option<u32>,
    },
    /// The Kubernetes API server on the control plane is unhealthy: its
    /// `/readyz` answers 500 (`[-]etcd failed: injected`).
    ApiserverDown {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
    },
    /// Once, as it is added: the node is wiped and comes back in
    /// maintenance mode or configured by another cluster.
    Reinstalled { server: ServerRef, with: Reinstall },
    /// One machine API call (`Bootstrap`, `ServiceList`, …; any case)
    /// answers with this status instead of being carried out: by default
    /// `unavailable`, what a client sees of a node cut off mid-way.
    CallFails {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<ServerRef>,
        call: String,
        #[serde(default = "GrpcCode::default_cut_off")]
        code: GrpcCode,
        #[serde(default)]
        message: Option<String>,
        /// How many calls fail; all when absent.
        #[serde(default)]
        count: Option<u32>,
    },
}

/// What a reinstalled node comes back as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reinstall {
    Maintenance,
    ForeignCa,
}

impl TalosFault {
    fn server(&self) -> Option<&ServerRef> {
        match self {
            Self::Unreachable { server }
            | Self::SlowBoot { server, .. }
            | Self::ApplyRejected { server, .. }
            | Self::ApiserverDown { server }
            | Self::CallFails { server, .. } => server.as_ref(),
            Self::Reinstalled { server, .. } => Some(server),
        }
    }

    fn hits(&self, server: &Server) -> bool {
        self.server().is_none_or(|s| s.matches(server))
    }
}

/// Whether a fault keeps the node's apid off the network.
pub fn is_unreachable(faults: &[TalosFault], server: &Server) -> bool {
    faults
        .iter()
        .any(|f| matches!(f, TalosFault::Unreachable { .. }) && f.hits(server))
}

/// Whether a fault makes the node's Kubernetes API server unhealthy.
pub fn is_apiserver_down(faults: &[TalosFault], server: &Server) -> bool {
    faults
        .iter()
        .any(|f| matches!(f, TalosFault::ApiserverDown { .. }) && f.hits(server))
}

/// The extra time faults add to a boot of the node.
pub fn boot_delay(faults: &[TalosFault], server: &Server) -> Duration {
    faults
        .iter()
        .filter(|f| f.hits(server))
        .map(|f| match f {
            TalosFault::SlowBoot { delay_ms, .. } => Duration::from_millis(*delay_ms),
            _ => Duration::ZERO,
        })
        .fold(Duration::ZERO, Duration::saturating_add)
}

/// An injected rejection of ApplyConfiguration, using one up.
pub fn take_apply_rejection(
    faults: &mut Vec<TalosFault>,
    server: &Server,
) -> Option<(Code, String)> {
    let index = faults
        .iter()
        .position(|f| matches!(f, TalosFault::ApplyRejected { .. }) && f.hits(server))?;
    let TalosFault::ApplyRejected {
        code,
        message,
        count,
        ..
    } = &mut faults[index]
    else {
        return None;
    };
    let rejection = (
        code.0,
        message
            .clone()
            .unwrap_or_else(|| "configuration rejected (injected by hct-sim)".into()),
    );
    if let Some(n) = count {
        *n = n.saturating_sub(1);
        if *n == 0 {
            faults.remove(index);
        }
    }
    Some(rejection)
}

/// An injected failure of `call` (a machine API method name) on the node,
/// using one up.
pub fn take_call_failure(
    faults: &mut Vec<TalosFault>,
    server: &Server,
    call: &str,
) -> Option<(Code, String)> {
    let index = faults.iter().position(|f| {
        matches!(f, TalosFault::CallFails { call: c, .. } if c.eq_ignore_ascii_case(call))
            && f.hits(server)
    })?;
    let TalosFault::CallFails {
        code,
        message,
        count,
        ..
    } = &mut faults[index]
    else {
        return None;
    };
    let failure = (
        code.0,
        message
            .clone()
            .unwrap_or_else(|| format!("{call}: node unavailable (injected by hct-sim)")),
    );
    if let Some(n) = count {
        *n = n.saturating_sub(1);
        if *n == 0 {
            faults.remove(index);
        }
    }
    Some(failure)
}

/// Whether any fault fails machine API calls (a cheap check before
/// [`take_call_failure`] needs the world mutably).
pub fn fails_calls(faults: &[TalosFault]) -> bool {
    faults
        .iter()
        .any(|f| matches!(f, TalosFault::CallFails { .. }))
}

/// A gRPC status code, written as its name (`invalid_argument`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct GrpcCode(pub Code);

const CODE_NAMES: [(Code, &str); 17] = [
    (Code::Ok, "ok"),
    (Code::Cancelled, "cancelled"),
    (Code::Unknown, "unknown"),
    (Code::InvalidArgument, "invalid_argument"),
    (Code::DeadlineExceeded, "deadline_exceeded"),
    (Code::NotFound, "not_found"),
    (Code::AlreadyExists, "already_exists"),
    (Code::PermissionDenied, "permission_denied"),
    (Code::ResourceExhausted, "resource_exhausted"),
    (Code::FailedPrecondition, "failed_precondition"),
    (Code::Aborted, "aborted"),
    (Code::OutOfRange, "out_of_range"),
    (Code::Unimplemented, "unimplemented"),
    (Code::Internal, "internal"),
    (Code::Unavailable, "unavailable"),
    (Code::DataLoss, "data_loss"),
    (Code::Unauthenticated, "unauthenticated"),
];

impl GrpcCode {
    fn default_rejection() -> Self {
        Self(Code::InvalidArgument)
    }

    fn default_cut_off() -> Self {
        Self(Code::Unavailable)
    }

    fn name(self) -> &'static str {
        CODE_NAMES
            .iter()
            .find(|(code, _)| *code == self.0)
            .map_or("unknown", |(_, name)| name)
    }
}

impl fmt::Debug for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for GrpcCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for GrpcCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?.to_ascii_lowercase();
        CODE_NAMES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(code, _)| Self(*code))
            .ok_or_else(|| serde::de::Error::custom(format!("unknown gRPC status code {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::servers::ServerStatus;

    fn server(id: Id, name: &str) -> Server {
        serde_json::from_value::<Server>(serde_json::json!({
            "id": id, "name": name, "status": ServerStatus::Running, "created": 0,
            "server_type": "cx23", "location": "nbg1", "image": null, "primary_disk_size": 40,
            "public_ipv4": null, "public_ipv6": null, "private_net": [], "placement_group": null,
            "labels": {}, "rescue_enabled": false, "user_data": null, "ssh_keys": [],
            "delete_protected": false, "rebuild_protected": false, "boot": null,
            "talos": null,
        }))
        .unwrap()
    }

    fn parse(json: &str) -> TalosFault {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn parses_each_kind_and_names_servers_either_way() {
        let cp = server(5_000_001, "cp-1");
        let other = server(5_000_002, "cp-2");
        let by_name = parse(r#"{"talos": "unreachable", "server": "cp-1"}"#);
        let by_id = parse(r#"{"talos": "unreachable", "server": 5000001}"#);
        for fault in [by_name, by_id] {
            assert!(is_unreachable(std::slice::from_ref(&fault), &cp));
            assert!(!is_unreachable(&[fault], &other));
        }
        let slow = parse(r#"{"talos": "slow_boot", "delay_ms": 1500}"#);
        assert_eq!(boot_delay(&[slow], &other), Duration::from_millis(1500));
        let forever = TalosFault::SlowBoot {
            server: None,
            delay_ms: u64::MAX,
        };
        assert!(boot_delay(&[forever.clone(), forever], &other) > Duration::from_secs(1 << 40));
        assert!(serde_json::from_str::<TalosFault>(r#"{"talos": "slow_boot"}"#).is_err());
        assert!(
            serde_json::from_str::<TalosFault>(r#"{"talos": "unreachable", "extra": 1}"#).is_err()
        );
        let down = parse(r#"{"talos": "apiserver_down", "server": "cp-1"}"#);
        assert!(is_apiserver_down(std::slice::from_ref(&down), &cp));
        assert!(!is_apiserver_down(std::slice::from_ref(&down), &other));
        assert!(!is_unreachable(&[down], &cp));
        let everywhere = parse(r#"{"talos": "apiserver_down"}"#);
        assert!(is_apiserver_down(&[everywhere], &other));
        let rejected = parse(r#"{"talos": "apply_rejected", "code": "UNAVAILABLE"}"#);
        assert_eq!(
            serde_json::to_value(&rejected).unwrap(),
            serde_json::json!({"talos": "apply_rejected", "code": "unavailable", "message": null, "count": null})
        );
    }

    #[test]
    fn call_failures_hit_their_call_and_are_used_up() {
        let cp = server(5_000_001, "cp-1");
        let mut faults = vec![parse(
            r#"{"talos": "call_fails", "call": "bootstrap", "server": "cp-1", "count": 2}"#,
        )];
        assert!(fails_calls(&faults));
        assert_eq!(take_call_failure(&mut faults, &cp, "Version"), None);
        assert_eq!(
            take_call_failure(&mut faults, &server(9, "x"), "Bootstrap"),
            None
        );
        for _ in 0..2 {
            let (code, message) = take_call_failure(&mut faults, &cp, "Bootstrap").unwrap();
            assert_eq!(code, Code::Unavailable);
            assert!(message.contains("injected"), "{message}");
        }
        assert!(faults.is_empty() && !fails_calls(&faults));
        assert!(serde_json::from_str::<TalosFault>(r#"{"talos": "call_fails"}"#).is_err());
    }

    #[test]
    fn apply_rejections_are_used_up() {
        let cp = server(5_000_001, "cp-1");
        let mut faults = vec![parse(
            r#"{"talos": "apply_rejected", "server": "cp-1", "message": "no", "count": 2}"#,
        )];
        assert_eq!(take_apply_rejection(&mut faults, &server(9, "other")), None);
        for _ in 0..2 {
            assert_eq!(
                take_apply_rejection(&mut faults, &cp),
                Some((Code::InvalidArgument, "no".to_string()))
            );
        }
        assert!(faults.is_empty());
        assert!(
            serde_json::from_str::<TalosFault>(r#"{"talos": "apply_rejected", "code": "nope"}"#)
                .is_err()
        );
    }
}
