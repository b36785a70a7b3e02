//! Data centers: one per location today, with Hetzner's IDs (the list is by
//! ID, so Nuremberg comes first) and the server types each supports and
//! sells, as the catalog's offers say.

use serde_json::{Value, json};

use super::server_type_list::listed_server_types;
use super::{Location, location};

#[derive(Debug)]
pub struct Datacenter {
    pub id: i64,
    pub name: &'static str,
    pub description: &'static str,
    pub location: &'static str,
}

pub const DATACENTERS: &[Datacenter] = &[
    Datacenter {
        id: 2,
        name: "nbg1-dc3",
        description: "Nuremberg 1 virtual DC 3",
        location: "nbg1",
    },
    Datacenter {
        id: 3,
        name: "hel1-dc2",
        description: "Helsinki 1 virtual DC 2",
        location: "hel1",
    },
    Datacenter {
        id: 4,
        name: "fsn1-dc14",
        description: "Falkenstein 1 virtual DC 14",
        location: "fsn1",
    },
    Datacenter {
        id: 5,
        name: "ash-dc1",
        description: "Ashburn virtual DC 1",
        location: "ash",
    },
    Datacenter {
        id: 6,
        name: "hil-dc1",
        description: "Hillsboro virtual DC 1",
        location: "hil",
    },
    Datacenter {
        id: 7,
        name: "sin-dc1",
        description: "Singapore virtual DC 1",
        location: "sin",
    },
];

impl Datacenter {
    pub fn location(&self) -> Option<&'static Location> {
        location(self.location)
    }

    pub fn to_api(&self) -> Value {
        // Supported: sold here at all; available: orderable now (a type
        // withdrawn from here stays supported until it is retired).
        let supported: Vec<i64> = listed_server_types()
            .filter(|t| t.offer(self.location).is_some())
            .map(|t| t.id)
            .collect();
        let available: Vec<i64> = listed_server_types()
            .filter(|t| t.orderable_in(self.location))
            .map(|t| t.id)
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "location": self.location().map(Location::to_api),
            "server_types": {
                "supported": supported,
                "available": available.clone(),
                "available_for_migration": available,
            },
        })
    }
}

/// A data center by ID or name, as request bodies may give either.
pub fn datacenter(id_or_name: &str) -> Option<&'static Datacenter> {
    DATACENTERS
        .iter()
        .find(|d| d.name == id_or_name || d.id.to_string() == id_or_name)
}
