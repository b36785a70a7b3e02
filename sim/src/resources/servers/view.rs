//! What the API shows of a server: its JSON, with its type, location,
//! image and placement group spelled out and its lock looked up.

use serde_json::{Value, json};

use super::Server;
use crate::catalog::{self, ServerType};
use crate::clock::Timestamp;
use crate::ids::ResourceRef;
use crate::state::World;

impl Server {
    pub fn to_api(&self, world: &World, _now: Timestamp) -> Value {
        let server_type = self.server_type();
        let ipv4 = self.public_ipv4.as_ref().map(|p| {
            let reversed: Vec<&str> = p.ip.split('.').rev().collect();
            json!({
                "id": p.id,
                "ip": p.ip,
                "blocked": false,
                "dns_ptr": format!("static.{}.clients.your-server.de", reversed.join(".")),
            })
        });
        let ipv6 = self
            .public_ipv6
            .as_ref()
            .map(|p| json!({"id": p.id, "ip": p.ip, "blocked": false, "dns_ptr": []}));
        let private_net: Vec<Value> = self
            .private_net
            .iter()
            .map(|p| {
                json!({
                    "network": p.network,
                    "ip": p.ip.to_string(),
                    "alias_ips": p.alias_ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "mac_address": p.mac_address,
                })
            })
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "status": self.status.as_str(),
            "created": self.created.rfc3339(),
            "public_net": {
                "ipv4": ipv4,
                "ipv6": ipv6,
                "floating_ips": [],
                "firewalls": world
                    .firewalls_of(self.id)
                    .into_iter()
                    .map(|id| json!({"id": id, "status": "applied"}))
                    .collect::<Vec<_>>(),
            },
            "private_net": private_net,
            "server_type": server_type.map(ServerType::to_api),
            "location": catalog::location(&self.location).map(catalog::Location::to_api),
            "image": self.image.and_then(|id| world.images.get(&id)).map(|i| i.to_api(world)),
            "iso": self.iso.and_then(|id| catalog::iso(&id.to_string())).map(catalog::Iso::to_api),
            "rescue_enabled": self.rescue_enabled,
            "locked": world.is_locked(ResourceRef::server(self.id)),
            "backup_window": self.backup_window,
            "outgoing_traffic": 0,
            "ingoing_traffic": 0,
            "included_traffic": server_type.and_then(|t| t.included_traffic(&self.location)),
            "protection": {"delete": self.delete_protected, "rebuild": self.rebuild_protected},
            "labels": self.labels,
            "volumes": [],
            "load_balancers": [],
            "primary_disk_size": self.primary_disk_size,
            "placement_group": self
                .placement_group
                .and_then(|id| world.placement_groups.get(&id))
                .map(|g| g.to_api(world)),
        })
    }
}
