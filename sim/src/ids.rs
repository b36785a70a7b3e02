//! IDs and typed references to resources: the vocabulary every module
//! shares. A leaf: it uses nothing else of the crate.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub type Id = i64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    Server,
    Network,
    Image,
    PlacementGroup,
    SshKey,
    Firewall,
    PrimaryIp,
    LoadBalancer,
}

impl ResourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Network => "network",
            Self::Image => "image",
            Self::PlacementGroup => "placement_group",
            Self::SshKey => "ssh_key",
            Self::Firewall => "firewall",
            Self::PrimaryIp => "primary_ip",
            Self::LoadBalancer => "load_balancer",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceRef {
    pub kind: ResourceKind,
    pub id: Id,
}

impl ResourceRef {
    pub fn server(id: Id) -> Self {
        Self {
            kind: ResourceKind::Server,
            id,
        }
    }

    pub fn network(id: Id) -> Self {
        Self {
            kind: ResourceKind::Network,
            id,
        }
    }

    pub fn image(id: Id) -> Self {
        Self {
            kind: ResourceKind::Image,
            id,
        }
    }

    pub fn placement_group(id: Id) -> Self {
        Self {
            kind: ResourceKind::PlacementGroup,
            id,
        }
    }

    pub fn firewall(id: Id) -> Self {
        Self {
            kind: ResourceKind::Firewall,
            id,
        }
    }

    pub fn primary_ip(id: Id) -> Self {
        Self {
            kind: ResourceKind::PrimaryIp,
            id,
        }
    }

    pub fn load_balancer(id: Id) -> Self {
        Self {
            kind: ResourceKind::LoadBalancer,
            id,
        }
    }

    pub fn to_api(self) -> Value {
        json!({"id": self.id, "type": self.kind.as_str()})
    }
}
