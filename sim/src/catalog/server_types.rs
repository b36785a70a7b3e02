//! A server type as the API shows it: where it is sold and at what price,
//! and when it (or its offer in one location) stops being sold. A type past
//! its own `unavailable_after` is retired: the list no longer shows it, but
//! it can still be read by ID, as Hetzner keeps answering for old types.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::{Architecture, location};

/// When something stops being sold (both in Hetzner's `+00:00` form).
#[derive(Debug)]
pub struct Deprecation {
    pub announced: &'static str,
    pub unavailable_after: &'static str,
}

impl Deprecation {
    pub fn to_api(&self) -> Value {
        json!({"announced": self.announced, "unavailable_after": self.unavailable_after})
    }

    /// Whether `unavailable_after` has passed (by the wall clock, as the
    /// provider judges it).
    pub fn has_passed(&self) -> bool {
        let zulu = self.unavailable_after.replace("+00:00", "Z");
        humantime::parse_rfc3339(&zulu).is_ok_and(|after| SystemTime::now() > after)
    }
}

/// Where a server type is sold and at what price there.
#[derive(Debug)]
pub struct Offer {
    pub location: &'static str,
    pub hourly: f64,
    pub monthly: f64,
    pub included_tb: f64,
    pub per_tb: f64,
    /// The type is being withdrawn from this location only.
    pub deprecation: Option<Deprecation>,
}

impl Offer {
    /// An offer in a European location (20 TB included).
    pub const fn eu(location: &'static str, monthly: f64) -> Self {
        Self::new(location, monthly, 20.0, 1.0)
    }

    /// An offer in a US location (1 TB included).
    pub const fn us(location: &'static str, monthly: f64) -> Self {
        Self::new(location, monthly, 1.0, 1.0)
    }

    /// An offer in Singapore (0.5 TB included, dearer traffic).
    pub const fn sg(monthly: f64) -> Self {
        Self::new("sin", monthly, 0.5, 7.4)
    }

    const fn new(location: &'static str, monthly: f64, included_tb: f64, per_tb: f64) -> Self {
        Self {
            location,
            hourly: monthly / 624.0,
            monthly,
            included_tb,
            per_tb,
            deprecation: None,
        }
    }

    /// The same offer, being withdrawn from its location.
    pub const fn withdrawn(self, deprecation: Deprecation) -> Self {
        Self {
            deprecation: Some(deprecation),
            ..self
        }
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

    /// No longer sold anywhere: its own deprecation has passed.
    pub fn is_retired(&self) -> bool {
        self.deprecation
            .as_ref()
            .is_some_and(Deprecation::has_passed)
    }

    /// Whether a server of this type can be ordered in `location` now.
    pub fn orderable_in(&self, location: &str) -> bool {
        !self.is_retired()
            && self
                .offer(location)
                .is_some_and(|o| !o.deprecation.as_ref().is_some_and(Deprecation::has_passed))
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
            .filter_map(|offer| location(offer.location).map(|l| (offer, l)))
            .map(|(offer, l)| {
                let withdrawn = offer.deprecation.as_ref().or(self.deprecation.as_ref());
                json!({
                    "id": l.id,
                    "name": l.name,
                    "deprecation": withdrawn.map(Deprecation::to_api),
                    "available": self.orderable_in(l.name),
                    "recommended": withdrawn.is_none(),
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
