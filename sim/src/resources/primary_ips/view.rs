//! What the API shows of a Primary IP (no `datacenter`: Hetzner dropped it
//! for `location`).

use serde_json::{Value, json};

use super::{IpType, PrimaryIp};
use crate::catalog;

impl PrimaryIp {
    pub fn to_api(&self) -> Value {
        let dns_ptr = match self.kind {
            IpType::Ipv4 => {
                let reversed: Vec<&str> = self.ip.split('.').rev().collect();
                json!([{
                    "ip": self.ip,
                    "dns_ptr": format!("static.{}.clients.your-server.de", reversed.join(".")),
                }])
            }
            IpType::Ipv6 => json!([]),
        };
        json!({
            "id": self.id,
            "name": self.name,
            "type": self.kind.as_str(),
            "ip": self.ip,
            "location": catalog::location(&self.location).map(catalog::Location::to_api),
            "assignee_id": self.assignee,
            "assignee_type": "server",
            "auto_delete": self.auto_delete,
            "blocked": false,
            "dns_ptr": dns_ptr,
            "labels": self.labels,
            "created": self.created.rfc3339(),
            "protection": {"delete": self.delete_protected},
        })
    }
}
