//! What the API shows of a firewall: its rules and what it is applied to
//! (servers, and label selectors with the servers they select).

use serde_json::{Value, json};

use super::{Direction, Firewall, Protocol, Rule};
use crate::state::World;

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
    /// `applied_to`: the servers it is applied to directly, then each label
    /// selector with the servers it stands for now.
    pub fn to_api(&self, world: &World) -> Value {
        let servers = self
            .servers
            .iter()
            .map(|id| json!({"type": "server", "server": {"id": id}}));
        let selectors = self.label_selectors.iter().map(|selector| {
            let resources: Vec<Value> = world
                .servers_selected(selector)
                .into_iter()
                .map(|id| json!({"type": "server", "server": {"id": id}}))
                .collect();
            json!({
                "type": "label_selector",
                "label_selector": {"selector": selector},
                "applied_to_resources": resources,
            })
        });
        json!({
            "id": self.id,
            "name": self.name,
            "labels": self.labels,
            "created": self.created.rfc3339(),
            "rules": self.rules.iter().map(Rule::to_api).collect::<Vec<_>>(),
            "applied_to": servers.chain(selectors).collect::<Vec<_>>(),
        })
    }
}
