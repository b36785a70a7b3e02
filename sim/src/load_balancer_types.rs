//! The Load Balancer types Hetzner sells, with the locations each is sold
//! in (a type missing from a location's prices cannot be created there).
//! Prices are net euros, close to the published ones; nothing should depend
//! on their exact values.

use serde_json::{Value, json};

const VAT: f64 = 1.19;
const TB: u64 = 1_099_511_627_776;

#[derive(Debug)]
pub struct LoadBalancerType {
    pub id: i64,
    pub name: &'static str,
    pub description: &'static str,
    pub max_connections: u32,
    pub max_services: usize,
    pub max_targets: usize,
    pub max_assigned_certificates: u32,
    pub monthly: f64,
    pub included_tb: u64,
    pub locations: &'static [&'static str],
}

/// Where the emulated catalog sells load balancers.
const EVERYWHERE: &[&str] = &["fsn1", "nbg1", "hel1", "ash", "hil", "sin"];

pub const LOAD_BALANCER_TYPES: &[LoadBalancerType] = &[
    LoadBalancerType {
        id: 1,
        name: "lb11",
        description: "LB11",
        max_connections: 10_000,
        max_services: 5,
        max_targets: 25,
        max_assigned_certificates: 10,
        monthly: 5.39,
        included_tb: 1,
        locations: EVERYWHERE,
    },
    LoadBalancerType {
        id: 2,
        name: "lb21",
        description: "LB21",
        max_connections: 20_000,
        max_services: 15,
        max_targets: 75,
        max_assigned_certificates: 25,
        monthly: 16.40,
        included_tb: 2,
        locations: EVERYWHERE,
    },
    LoadBalancerType {
        id: 3,
        name: "lb31",
        description: "LB31",
        max_connections: 40_000,
        max_services: 30,
        max_targets: 150,
        max_assigned_certificates: 50,
        monthly: 32.90,
        included_tb: 3,
        // Not sold in Singapore in the emulated catalog, so that a type
        // missing at a location can be tested.
        locations: &["fsn1", "nbg1", "hel1", "ash", "hil"],
    },
];

fn price(net: f64) -> Value {
    json!({"net": format!("{net:.10}"), "gross": format!("{:.10}", net * VAT)})
}

impl LoadBalancerType {
    pub fn sold_at(&self, location: &str) -> bool {
        self.locations.contains(&location)
    }

    /// Traffic included per month, in bytes.
    pub fn included_traffic(&self) -> u64 {
        self.included_tb * TB
    }

    pub fn to_api(&self) -> Value {
        let prices: Vec<Value> = self
            .locations
            .iter()
            .map(|location| {
                json!({
                    "location": location,
                    "price_hourly": price(self.monthly / 672.0),
                    "price_monthly": price(self.monthly),
                    "included_traffic": self.included_traffic(),
                    "price_per_tb_traffic": price(1.0),
                })
            })
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "max_connections": self.max_connections,
            "max_services": self.max_services,
            "max_targets": self.max_targets,
            "max_assigned_certificates": self.max_assigned_certificates,
            "deprecated": null,
            "prices": prices,
        })
    }
}

/// By ID or name, as requests may give either.
pub fn load_balancer_type(id_or_name: &str) -> Option<&'static LoadBalancerType> {
    LOAD_BALANCER_TYPES
        .iter()
        .find(|t| t.name == id_or_name || t.id.to_string() == id_or_name)
}
