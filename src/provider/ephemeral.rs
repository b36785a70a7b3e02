//! Ephemeral resources (protocol v6, Terraform ≥ 1.10, OpenTofu ≥ 1.11):
//! values made for one run and never stored in plan or state, such as
//! short-lived credentials for other providers. Terraform opens one when a
//! provider block or another ephemeral value needs it, and closes it after.

use std::time::SystemTime;

use async_trait::async_trait;

use super::Context;
use crate::tf::{Diagnostics, Schema, Value};

/// What opening an ephemeral resource gave.
#[derive(Default)]
pub struct Opened {
    /// The whole result object (config values and computed values).
    pub result: Value,
    /// When Terraform should ask for a renewal; None: never.
    pub renew_at: Option<SystemTime>,
    /// Carried to Renew and Close.
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

/// An ephemeral resource.
#[async_trait]
pub trait EphemeralResource: Send + Sync {
    fn type_name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    /// Checks a configuration that may still hold unknown values.
    fn validate(&self, config: &Value) -> Diagnostics;
    /// Opens with a wholly known configuration.
    async fn open(&self, ctx: &Context, config: &Value) -> Opened;
    /// Renews what `open` returned (called only if it set `renew_at`).
    async fn renew(&self, ctx: &Context, private: &[u8]) -> Opened;
    /// Releases what `open` made.
    async fn close(&self, ctx: &Context, private: &[u8]) -> Diagnostics;
}
