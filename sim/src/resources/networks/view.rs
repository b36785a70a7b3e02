//! What the API shows of a network: its JSON, with every subnet's gateway
//! and the attached servers.

use serde_json::{Value, json};

use super::Network;
use crate::state::World;

impl Network {
    pub fn to_api(&self, world: &World) -> Value {
        let gateway = self.gateway().to_string();
        let subnets: Vec<Value> = self
            .subnets
            .iter()
            .map(|s| {
                json!({
                    "type": s.kind.as_str(),
                    "ip_range": s.ip_range.to_string(),
                    "network_zone": s.network_zone,
                    "gateway": gateway,
                    "vswitch_id": null,
                })
            })
            .collect();
        let routes: Vec<Value> = self
            .routes
            .iter()
            .map(|r| json!({"destination": r.destination.to_string(), "gateway": r.gateway.to_string()}))
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "ip_range": self.ip_range.to_string(),
            "subnets": subnets,
            "routes": routes,
            "servers": world.network_members(self.id),
            "load_balancers": [],
            "protection": {"delete": self.delete_protected},
            "labels": self.labels,
            "created": self.created.rfc3339(),
            "expose_routes_to_vswitch": self.expose_routes_to_vswitch,
        })
    }
}
