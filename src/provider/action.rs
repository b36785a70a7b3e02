//! Actions (protocol 6.10, Terraform ≥ 1.14; OpenTofu has none): an
//! operation a person invokes (`terraform apply -invoke=action.<type>.<name>`)
//! that changes no resource and leaves nothing in state. Terraform checks
//! its configuration at plan, then invokes it and prints the progress lines
//! it sends while it runs.

use async_trait::async_trait;
use tokio::sync::mpsc::UnboundedSender;

use super::Context;
use crate::tf::{Diagnostics, Schema, Value};

/// Where an action's progress lines go: Terraform's console.
#[derive(Clone)]
pub struct Progress(UnboundedSender<String>);

impl Progress {
    pub fn new(lines: UnboundedSender<String>) -> Self {
        Self(lines)
    }

    /// One line for the console (a Terraform that went away hears nothing).
    pub fn say(&self, line: impl Into<String>) {
        let _ = self.0.send(line.into());
    }
}

/// An action.
#[async_trait]
pub trait Action: Send + Sync {
    fn type_name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    /// Checks a configuration that may still hold unknown values.
    fn validate(&self, config: &Value) -> Diagnostics;
    /// Runs with a wholly known configuration.
    async fn invoke(&self, ctx: &Context, config: &Value, progress: &Progress) -> Diagnostics;
}
