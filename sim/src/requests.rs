//! The log of API requests, with counts per route (`POST /servers`,
//! `GET /servers/{id}`…) for tests that assert how a client behaved.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;
use serde_json::{Value, json};

use crate::clock::Timestamp;

/// Entries kept; counts cover every request.
const KEEP: usize = 10_000;

#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub at: String,
    pub method: String,
    pub path: String,
    pub route: String,
    pub status: u16,
    pub correlation_id: String,
}

#[derive(Debug, Default)]
pub struct RequestLog {
    total: u64,
    counts: BTreeMap<String, u64>,
    /// Requests per answer status, e.g. how many were refused with 429.
    statuses: BTreeMap<u16, u64>,
    entries: VecDeque<Entry>,
}

impl RequestLog {
    pub fn record(
        &mut self,
        method: &str,
        path: &str,
        route: &str,
        status: u16,
        correlation_id: &str,
    ) {
        self.total += 1;
        *self.counts.entry(route.to_string()).or_default() += 1;
        *self.statuses.entry(status).or_default() += 1;
        if self.entries.len() == KEEP {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            at: Timestamp::now().rfc3339(),
            method: method.to_string(),
            path: path.to_string(),
            route: route.to_string(),
            status,
            correlation_id: correlation_id.to_string(),
        });
    }

    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.counts.clone()
    }

    /// The kept requests, oldest first.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.iter().cloned().collect()
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    pub fn to_json(&self) -> Value {
        json!({
            "total": self.total,
            "counts": self.counts,
            "statuses": self.statuses,
            "requests": self.entries,
        })
    }
}
