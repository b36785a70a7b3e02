//! Firewalls: rules for the public interfaces of the servers they are
//! applied to (Hetzner's firewalls never filter private networks). This file
//! holds the records only; the rest is in the file named after it:
//!
//! - `rules`: checking the rules of a request;
//! - `create`: creating, renaming or relabelling, setting rules, deleting;
//! - `apply`: applying to and removing from servers, directly or through
//!   label selectors, and what a failed `apply_firewall` or
//!   `remove_firewall` action undoes;
//! - `view`: the firewall as the API shows it.
//!
//! Nothing is filtered: hct-sim sends no traffic to public addresses.

mod apply;
mod create;
mod rules;
#[cfg(test)]
mod tests;
mod view;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::Id;
use crate::labels::Labels;
use crate::pagination::{SortKey, Sortable};

/// Rules a firewall may have.
pub const RULE_LIMIT: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    In,
    Out,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Tcp,
    Udp,
    Icmp,
    Esp,
    Gre,
}

/// One rule, as checked (IP ranges in the form the API answers with).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub direction: Direction,
    pub protocol: Protocol,
    pub port: Option<String>,
    pub source_ips: Vec<String>,
    pub destination_ips: Vec<String>,
    pub description: Option<String>,
}

/// A rule as a request gives it, before checking.
#[derive(Debug, Clone, Default)]
pub struct RuleSpec {
    pub direction: String,
    pub protocol: String,
    pub port: Option<String>,
    pub source_ips: Vec<String>,
    pub destination_ips: Vec<String>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Firewall {
    pub id: Id,
    pub name: String,
    pub labels: Labels,
    pub created: Timestamp,
    pub rules: Vec<Rule>,
    /// Servers it is applied to directly, in the order they were added.
    pub servers: Vec<Id>,
    /// Label selectors it is applied through, as given, in the order they
    /// were added: it applies to every server with a public interface whose
    /// labels match, now and later.
    #[serde(default)]
    pub label_selectors: Vec<String>,
}

/// What `apply_to` and `remove_from` name: a server, or a label selector
/// (checked against the selector grammar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Server(Id),
    LabelSelector(String),
}

impl Sortable for Firewall {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => SortKey::Text(self.name.clone()),
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}
