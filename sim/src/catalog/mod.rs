//! What Hetzner sells: locations, their data centers, server types and ISOs, as
//! the API listed them in 2026, with Hetzner's IDs and order. Prices are net
//! euros; gross adds German VAT. They are close to the published ones but
//! nothing should depend on their exact values.

mod datacenters;
mod isos;
mod server_type_list;
mod server_types;

pub use datacenters::{DATACENTERS, Datacenter, datacenter};
pub use isos::{ISOS, Iso, iso};
pub use server_type_list::{SERVER_TYPES, listed_server_types, server_type};
pub use server_types::{Deprecation, Offer, ServerType};

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    X86,
    Arm,
}

impl Architecture {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::X86 => "x86",
            Self::Arm => "arm",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "x86" => Some(Self::X86),
            "arm" => Some(Self::Arm),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub struct Location {
    pub id: i64,
    pub name: &'static str,
    pub description: &'static str,
    pub country: &'static str,
    pub city: &'static str,
    pub latitude: f64,
    pub longitude: f64,
    pub network_zone: &'static str,
}

impl Location {
    pub fn to_api(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "country": self.country,
            "city": self.city,
            "latitude": self.latitude,
            "longitude": self.longitude,
            "network_zone": self.network_zone,
        })
    }
}

pub const LOCATIONS: &[Location] = &[
    Location {
        id: 1,
        name: "fsn1",
        description: "Falkenstein DC Park 1",
        country: "DE",
        city: "Falkenstein",
        latitude: 50.47612,
        longitude: 12.370071,
        network_zone: "eu-central",
    },
    Location {
        id: 2,
        name: "nbg1",
        description: "Nuremberg DC Park 1",
        country: "DE",
        city: "Nuremberg",
        latitude: 49.452102,
        longitude: 11.076665,
        network_zone: "eu-central",
    },
    Location {
        id: 3,
        name: "hel1",
        description: "Helsinki DC Park 1",
        country: "FI",
        city: "Helsinki",
        latitude: 60.169855,
        longitude: 24.938379,
        network_zone: "eu-central",
    },
    Location {
        id: 4,
        name: "ash",
        description: "Ashburn, VA",
        country: "US",
        city: "Ashburn, VA",
        latitude: 39.045821,
        longitude: -77.487073,
        network_zone: "us-east",
    },
    Location {
        id: 5,
        name: "hil",
        description: "Hillsboro, OR",
        country: "US",
        city: "Hillsboro, OR",
        latitude: 45.54222,
        longitude: -122.951924,
        network_zone: "us-west",
    },
    Location {
        id: 6,
        name: "sin",
        description: "Singapore",
        country: "SG",
        city: "Singapore",
        latitude: 1.283333,
        longitude: 103.833333,
        network_zone: "ap-southeast",
    },
];

/// A location by ID or name, as request bodies may give either.
pub fn location(id_or_name: &str) -> Option<&'static Location> {
    LOCATIONS
        .iter()
        .find(|l| l.name == id_or_name || l.id.to_string() == id_or_name)
}

pub fn is_network_zone(zone: &str) -> bool {
    LOCATIONS.iter().any(|l| l.network_zone == zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_id_or_name() {
        assert_eq!(location("fsn1").map(|l| l.id), Some(1));
        assert_eq!(location("6").map(|l| l.name), Some("sin"));
        assert_eq!(
            server_type("cax11").map(|t| t.architecture),
            Some(Architecture::Arm)
        );
        assert_eq!(server_type("115").map(|t| t.name), Some("cx33"));
        assert_eq!(server_type("109").map(|t| t.name), Some("cpx22"));
        assert_eq!(server_type("cpx12").map(|t| t.id), Some(108));
        assert_eq!(datacenter("4").map(|d| d.name), Some("fsn1-dc14"));
        assert_eq!(datacenter("hel1-dc2").map(|d| d.location), Some("hel1"));
    }

    #[test]
    fn deprecated_type_says_so() {
        let cx22 = server_type("cx22").unwrap().to_api();
        assert_eq!(cx22["deprecated"], true);
        assert!(cx22["deprecation"]["unavailable_after"].is_string());
        let cx23 = server_type("cx23").unwrap().to_api();
        assert!(cx23["deprecation"].is_null());
        assert_eq!(cx23["locations"].as_array().map(Vec::len), Some(3));
        assert_eq!(cx23["prices"][0]["price_monthly"]["net"], "2.9900000000");
    }

    #[test]
    fn retired_type_is_read_by_id_but_not_listed() {
        let cx11 = server_type("1").unwrap();
        assert!(cx11.is_retired());
        assert!(!cx11.orderable_in("fsn1"));
        assert!(listed_server_types().all(|t| t.name != "cx11"));
        let first: Vec<&str> = listed_server_types().take(2).map(|t| t.name).collect();
        assert_eq!(first, ["cpx11", "cpx21"]);
    }

    #[test]
    fn withdrawn_offer_is_unavailable_there_only() {
        let cpx11 = server_type("cpx11").unwrap();
        assert!(!cpx11.orderable_in("fsn1"));
        assert!(cpx11.orderable_in("ash"));
        let api = cpx11.to_api();
        assert_eq!(api["deprecated"], false);
        assert!(api["locations"][0]["deprecation"]["unavailable_after"].is_string());
        assert_eq!(api["locations"][0]["available"], false);
        assert!(api["locations"][3]["deprecation"].is_null());
    }

    #[test]
    fn datacenters_match_locations() {
        for dc in DATACENTERS {
            let location = dc.location().unwrap();
            assert!(dc.name.starts_with(location.name));
        }
        let fsn1 = datacenter("fsn1-dc14").unwrap().to_api();
        let supported = fsn1["server_types"]["supported"].as_array().unwrap();
        let available = fsn1["server_types"]["available"].as_array().unwrap();
        assert!(supported.contains(&json!(22)) && !available.contains(&json!(22)));
        assert!(available.contains(&json!(114)) && !supported.contains(&json!(1)));
    }

    #[test]
    fn ids_and_names_are_unique_and_ordered() {
        for (i, a) in SERVER_TYPES.iter().enumerate() {
            for b in &SERVER_TYPES[i + 1..] {
                assert!(a.id < b.id);
                assert_ne!(a.name, b.name);
            }
        }
        for pair in DATACENTERS.windows(2) {
            assert!(pair[0].id < pair[1].id);
        }
    }
}
