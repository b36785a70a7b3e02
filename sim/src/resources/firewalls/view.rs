//! What the API shows of a firewall: its rules and the servers it is
//! applied to.

use serde_json::{Value, json};

use super::{Direction, Firewall, Protocol, Rule};

impl Rule {
    pub fn to_api(&self) -> Value {
        json!({
            "direction": match self.direction {
                Direction::In => "in",
                Direction::Out => "out",
            },
            "protocol": match self.protocol {
                Protocol::Tcp => "tcp",
                Protocol::Udp => "udp",
                Protocol::Icmp => "icmp",
                Protocol::Esp => "esp",
                Protocol::Gre => "gre",
            },
            "port": self.port,
            "source_ips": self.source_ips,
            "destination_ips": self.destination_ips,
            "description": self.description,
        })
    }
}

impl Firewall {
    pub fn to_api(&self) -> Value {
        let applied_to: Vec<Value> = self
            .servers
            .iter()
            .map(|id| json!({"type": "server", "server": {"id": id}}))
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "labels": self.labels,
            "created": self.created.rfc3339(),
            "rules": self.rules.iter().map(Rule::to_api).collect::<Vec<_>>(),
            "applied_to": applied_to,
        })
    }
}
