//! What Hetzner sells: locations and server types, as the API listed them in
//! 2026. Prices are net euros; gross adds German VAT. They are close to the
//! published ones but nothing should depend on their exact values.

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

/// Where a server type is sold and at what price there.
#[derive(Debug)]
pub struct Offer {
    pub location: &'static str,
    pub hourly: f64,
    pub monthly: f64,
    pub included_tb: f64,
    pub per_tb: f64,
}

#[derive(Debug)]
pub struct Deprecation {
    pub announced: &'static str,
    pub unavailable_after: &'static str,
}

impl Deprecation {
    fn to_api(&self) -> Value {
        json!({"announced": self.announced, "unavailable_after": self.unavailable_after})
    }
}

#[derive(Debug)]
pub struct ServerType {
    pub id: i64,
    pub name: &'static str,
    pub description: &'static str,
    pub category: &'static str,
    pub cores: u32,
    pub memory: f64,
    pub disk: u32,
    pub cpu_type: &'static str,
    pub architecture: Architecture,
    pub deprecation: Option<Deprecation>,
    pub offers: &'static [Offer],
}

const VAT: f64 = 1.19;
const TB: f64 = 1_099_511_627_776.0;

fn price(net: f64) -> Value {
    json!({"net": format!("{net:.10}"), "gross": format!("{:.10}", net * VAT)})
}

impl ServerType {
    pub fn offer(&self, location: &str) -> Option<&Offer> {
        self.offers.iter().find(|o| o.location == location)
    }

    /// Traffic included per month at `location`, in bytes.
    pub fn included_traffic(&self, location: &str) -> Option<u64> {
        self.offer(location).map(|o| (o.included_tb * TB) as u64)
    }

    pub fn to_api(&self) -> Value {
        let deprecation = self.deprecation.as_ref().map(Deprecation::to_api);
        let locations: Vec<Value> = self
            .offers
            .iter()
            .filter_map(|offer| location(offer.location))
            .map(|l| {
                json!({
                    "id": l.id,
                    "name": l.name,
                    "deprecation": deprecation,
                    "available": true,
                    "recommended": self.deprecation.is_none(),
                })
            })
            .collect();
        let prices: Vec<Value> = self
            .offers
            .iter()
            .map(|o| {
                json!({
                    "location": o.location,
                    "price_hourly": price(o.hourly),
                    "price_monthly": price(o.monthly),
                    "included_traffic": (o.included_tb * TB) as u64,
                    "price_per_tb_traffic": price(o.per_tb),
                })
            })
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "category": self.category,
            "cores": self.cores,
            "memory": self.memory,
            "disk": self.disk,
            "prices": prices,
            "storage_type": "local",
            "cpu_type": self.cpu_type,
            "architecture": self.architecture.as_str(),
            "deprecated": self.deprecation.is_some(),
            "deprecation": deprecation,
            "locations": locations,
        })
    }
}

macro_rules! eu_offers {
    ($hourly:expr, $monthly:expr) => {
        &[
            Offer {
                location: "fsn1",
                hourly: $hourly,
                monthly: $monthly,
                included_tb: 20.0,
                per_tb: 1.0,
            },
            Offer {
                location: "nbg1",
                hourly: $hourly,
                monthly: $monthly,
                included_tb: 20.0,
                per_tb: 1.0,
            },
            Offer {
                location: "hel1",
                hourly: $hourly,
                monthly: $monthly,
                included_tb: 20.0,
                per_tb: 1.0,
            },
        ]
    };
}

macro_rules! world_offers {
    ($hourly:expr, $monthly:expr, $us_monthly:expr, $sg_monthly:expr) => {
        &[
            Offer {
                location: "fsn1",
                hourly: $hourly,
                monthly: $monthly,
                included_tb: 20.0,
                per_tb: 1.0,
            },
            Offer {
                location: "nbg1",
                hourly: $hourly,
                monthly: $monthly,
                included_tb: 20.0,
                per_tb: 1.0,
            },
            Offer {
                location: "hel1",
                hourly: $hourly,
                monthly: $monthly,
                included_tb: 20.0,
                per_tb: 1.0,
            },
            Offer {
                location: "ash",
                hourly: $us_monthly / 624.0,
                monthly: $us_monthly,
                included_tb: 1.0,
                per_tb: 1.0,
            },
            Offer {
                location: "hil",
                hourly: $us_monthly / 624.0,
                monthly: $us_monthly,
                included_tb: 1.0,
                per_tb: 1.0,
            },
            Offer {
                location: "sin",
                hourly: $sg_monthly / 624.0,
                monthly: $sg_monthly,
                included_tb: 0.5,
                per_tb: 7.4,
            },
        ]
    };
}

pub const SERVER_TYPES: &[ServerType] = &[
    ServerType {
        id: 104,
        name: "cx22",
        description: "CX22",
        category: "cost_optimized",
        cores: 2,
        memory: 4.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: Some(Deprecation {
            announced: "2025-10-16T06:00:00+00:00",
            unavailable_after: "2027-01-01T00:00:00+00:00",
        }),
        offers: eu_offers!(0.0061, 3.79),
    },
    ServerType {
        id: 114,
        name: "cx23",
        description: "CX23",
        category: "cost_optimized",
        cores: 2,
        memory: 4.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: eu_offers!(0.0048, 2.99),
    },
    ServerType {
        id: 115,
        name: "cx33",
        description: "CX33",
        category: "cost_optimized",
        cores: 4,
        memory: 8.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: eu_offers!(0.008, 4.99),
    },
    ServerType {
        id: 116,
        name: "cx43",
        description: "CX43",
        category: "cost_optimized",
        cores: 8,
        memory: 16.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: eu_offers!(0.0144, 8.99),
    },
    ServerType {
        id: 117,
        name: "cx53",
        description: "CX53",
        category: "cost_optimized",
        cores: 16,
        memory: 32.0,
        disk: 320,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: eu_offers!(0.0272, 16.99),
    },
    ServerType {
        id: 108,
        name: "cpx22",
        description: "CPX22",
        category: "regular_purpose",
        cores: 2,
        memory: 4.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: world_offers!(0.0096, 5.99, 7.99, 10.99),
    },
    ServerType {
        id: 109,
        name: "cpx32",
        description: "CPX32",
        category: "regular_purpose",
        cores: 4,
        memory: 8.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: world_offers!(0.0168, 10.49, 13.99, 19.99),
    },
    ServerType {
        id: 45,
        name: "cax11",
        description: "CAX11",
        category: "cost_optimized",
        cores: 2,
        memory: 4.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::Arm,
        deprecation: None,
        offers: eu_offers!(0.0061, 3.79),
    },
    ServerType {
        id: 93,
        name: "cax21",
        description: "CAX21",
        category: "cost_optimized",
        cores: 4,
        memory: 8.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::Arm,
        deprecation: None,
        offers: eu_offers!(0.0104, 6.49),
    },
];

/// A server type by ID or name.
pub fn server_type(id_or_name: &str) -> Option<&'static ServerType> {
    SERVER_TYPES
        .iter()
        .find(|t| t.name == id_or_name || t.id.to_string() == id_or_name)
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
        assert!(server_type("cx11").is_none());
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
    fn ids_and_names_are_unique() {
        for (i, a) in SERVER_TYPES.iter().enumerate() {
            for b in &SERVER_TYPES[i + 1..] {
                assert_ne!(a.id, b.id);
                assert_ne!(a.name, b.name);
            }
        }
    }
}
