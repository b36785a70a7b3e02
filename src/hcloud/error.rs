//! Errors from the Hetzner Cloud API, carrying what a user needs to act:
//! the API's code and message, the offending fields, and the correlation id
//! Hetzner support asks for.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::tf::Diagnostic;

#[derive(Debug, Clone, thiserror::Error)]
pub enum HcloudError {
    /// The API answered with its error envelope.
    #[error("Hetzner Cloud API error {} (HTTP {}): {}", .0.code, .0.status, .0.message)]
    Api(Box<ApiError>),
    /// No usable answer: connection refused, reset, timed out.
    #[error("could not reach the Hetzner Cloud API at {endpoint}: {reason}")]
    Transport { endpoint: String, reason: String },
    /// An answer that is not what the API documents.
    #[error("unexpected answer from the Hetzner Cloud API ({context}): {reason}")]
    Decode { context: String, reason: String },
    /// An action (e.g. creating a server) finished with an error.
    #[error("Hetzner action {command} #{id} failed: {code}: {message}")]
    ActionFailed {
        id: i64,
        command: String,
        code: String,
        message: String,
        resources: Vec<String>,
    },
    /// An image being made went away or failed (status `gone` when it went).
    #[error("Hetzner image {id} is {status} instead of available")]
    ImageFailed { id: i64, status: String },
    /// Waiting took longer than allowed.
    #[error("gave up waiting after {}: {what}", crate::duration::format(*.waited))]
    Timeout { what: String, waited: Duration },
    /// Terraform asked the provider to stop.
    #[error("stopped by Terraform (Ctrl-C) while {what}")]
    Cancelled { what: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// `details.fields`: field name → messages (for `invalid_input`).
    pub fields: BTreeMap<String, Vec<String>>,
    pub details: serde_json::Value,
    pub correlation_id: Option<String>,
}

impl ApiError {
    /// A gateway's answer, or the API's own failure: the request may have
    /// been carried out before it.
    pub fn is_ambiguous(&self) -> bool {
        matches!(self.status, 500 | 502 | 504)
            || matches!(
                self.code.as_str(),
                "timeout" | "bad_gateway" | "service_error"
            )
    }
}

impl HcloudError {
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            HcloudError::Api(api) => Some(api),
            _ => None,
        }
    }

    /// The API error code, e.g. `locked`, if the API answered with one.
    pub fn code(&self) -> Option<&str> {
        self.api().map(|api| api.code.as_str())
    }

    /// The request may have been carried out although no answer says so:
    /// the connection broke, or a gateway timed out or failed on the way.
    pub fn is_ambiguous(&self) -> bool {
        match self {
            HcloudError::Transport { .. } => true,
            HcloudError::Api(api) => api.is_ambiguous(),
            _ => false,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some("not_found")
    }

    /// A diagnostic that says what happened and what to do about it.
    pub fn to_diagnostic(&self, doing: &str) -> Diagnostic {
        let summary = format!("Hetzner Cloud: {doing} failed");
        let detail = match self {
            HcloudError::Api(api) => {
                let mut detail = format!("{} ({}): {}", api.code, api.status, api.message);
                for (field, messages) in &api.fields {
                    detail += &format!("\n  - {field}: {}", messages.join("; "));
                }
                if let Some(advice) = advice(&api.code) {
                    detail += &format!("\n\n{advice}");
                }
                if let Some(id) = &api.correlation_id {
                    detail += &format!(
                        "\n\nHetzner correlation id: {id} (quote it when you contact Hetzner support)."
                    );
                }
                detail
            }
            HcloudError::ActionFailed {
                code,
                message,
                resources,
                command,
                ..
            } => {
                let mut detail = format!("The {command} action ended with {code}: {message}.");
                if !resources.is_empty() {
                    detail += &format!(" Resources: {}.", resources.join(", "));
                }
                if let Some(advice) = advice(code) {
                    detail += &format!("\n\n{advice}");
                }
                detail
            }
            HcloudError::Transport { .. } => format!(
                "{self}.\n\nCheck hcloud_endpoint / HCLOUD_ENDPOINT and your network. hct retried \
                 before giving up; run the command again once the API is reachable."
            ),
            HcloudError::Timeout { .. } => format!(
                "{self}.\n\nHetzner may be slow right now; run the command again (nothing is lost: \
                 what exists is in the state), or raise the resource's timeouts."
            ),
            other => other.to_string(),
        };
        Diagnostic::error(summary, detail)
    }
}

/// `not_found` as `None`: for reads and deletes of things that may be gone.
pub trait Missing<T> {
    fn or_missing(self) -> Result<Option<T>, HcloudError>;
}

impl<T> Missing<T> for Result<T, HcloudError> {
    fn or_missing(self) -> Result<Option<T>, HcloudError> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// What a user can do about an error code.
fn advice(code: &str) -> Option<&'static str> {
    Some(match code {
        "unauthorized" => {
            "The API token was rejected. Check hcloud_token / HCLOUD_TOKEN: it must belong to the \
             project and must not be revoked."
        }
        "forbidden" => "The API token is read-only. Create a token with read & write permission.",
        "rate_limit_exceeded" => {
            "Hetzner's rate limit (3600 requests per hour per project) ran out and did not recover \
             while hct waited. Wait a few minutes, or run Terraform with lower -parallelism."
        }
        "resource_limit_exceeded" => {
            "Your project hit a Hetzner limit (e.g. the number of servers). Ask Hetzner support to \
             raise it, or use fewer or smaller servers."
        }
        "uniqueness_error" => {
            "A resource with this name already exists in the project. Choose another name, or \
             import the existing resource."
        }
        "resource_unavailable" => {
            "The server type is sold out in this location right now. Choose another location or \
             server type, or try again later."
        }
        "placement_group_member_limit_reached" => {
            "A spread placement group holds at most 10 servers. hct spreads larger pools over \
             several groups; if you created this group yourself, split the servers."
        }
        "ip_not_available" => {
            "The fixed private IP is taken by another server. Check the network plan's node CIDRs \
             against the servers already attached to the network."
        }
        "no_subnet_available" => {
            "The network has no subnet that contains the IP, in this server's network zone. Add a \
             cloud subnet equal to the plan's node_subnet in the location's network zone."
        }
        "server_not_stopped" => {
            "The server must be powered off for this; hct shuts it down first when it can."
        }
        "locked" => {
            "Another action is still running on this resource; it stayed locked longer than hct waited."
        }
        "maintenance" => "Hetzner Cloud is in maintenance. Try again later.",
        _ => return None,
    })
}
