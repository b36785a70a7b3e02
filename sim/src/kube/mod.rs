//! A little Kubernetes behind the emulated kube-apiserver: one object store
//! per cluster (keyed by the Talos `cluster.id`), kept as JSON, with the
//! behaviour kubectl and hct rely on. It knows nothing of Talos or Hetzner:
//! the caller (`talos::kube_api`) tells it which nodes run a kubelet and
//! which manifests Talos applies at bootstrap, and hands it requests.
//!
//! - `kinds`: the resources served and the discovery documents;
//! - `store`: objects, their metadata, create/get/list/update/delete;
//! - `fields`: which field manager owns which fields (`managedFields`);
//! - `apply`: server-side apply with field managers and conflicts;
//! - `nodes`: Node objects, the CNI rule for `Ready`, static pods;
//! - `csr`: kubelet serving CertificateSigningRequests and their approval;
//! - `approver`: an in-cluster CSR approver (kubelet-csr-approver) run on
//!   them, by the settings of its stored Deployment;
//! - `api`: the REST paths, mapped onto the store;
//! - `manifests`: multi-document YAML, Talos' create-if-absent bootstrap;
//! - `openapi`: the OpenAPI v3 index kubectl checks for server-side
//!   field validation;
//! - `protobuf`: the protobuf bodies of kubectl's typed clients (CSR
//!   approval only; other protobuf bodies get a 415).
//!
//! Not emulated: watches, admission beyond name checks, garbage
//! collection (deleting a namespace deletes its objects at once), list
//! merging by key in server-side apply (lists are atomic here).

pub mod api;
pub mod apply;
pub mod approver;
pub mod csr;
pub mod fields;
pub mod kinds;
pub mod manifests;
pub mod nodes;
pub mod openapi;
pub mod protobuf;
pub mod store;

use serde_json::{Value, json};

pub use self::store::{ClusterStore, Stores};

/// Why a request failed, as kube-apiserver reports it in a `Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    #[error("{resource} \"{name}\" not found")]
    NotFound {
        resource: String,
        group: String,
        name: String,
    },
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists {
        resource: String,
        group: String,
        name: String,
    },
    /// A stale resourceVersion on update.
    #[error(
        "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; \
         please apply your changes to the latest version and try again"
    )]
    Modified {
        resource: String,
        group: String,
        name: String,
    },
    /// Server-side apply met fields other managers own.
    #[error("Apply failed with {} conflict{}: {}", .conflicts.len(), if .conflicts.len() == 1 { "" } else { "s" }, conflict_list(.conflicts))]
    ApplyConflict { conflicts: Vec<(String, String)> },
    #[error("{kind} \"{name}\" is invalid: {field}: {reason}")]
    Invalid {
        kind: String,
        group: String,
        name: String,
        field: String,
        reason: String,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("the server could not find the requested resource")]
    NoRoute,
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    #[error("the body of the request was in an unknown format - accepted media types include: {0}")]
    UnsupportedMediaType(String),
}

fn conflict_list(conflicts: &[(String, String)]) -> String {
    conflicts
        .iter()
        .map(|(manager, field)| format!("conflict with \"{manager}\": {field}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl KubeError {
    pub fn not_found(resource: &kinds::Resource, name: &str) -> Self {
        Self::NotFound {
            resource: resource.qualified(),
            group: resource.group.clone(),
            name: name.to_string(),
        }
    }

    pub fn code(&self) -> u16 {
        match self {
            Self::NotFound { .. } | Self::NoRoute => 404,
            Self::AlreadyExists { .. } | Self::Modified { .. } | Self::ApplyConflict { .. } => 409,
            Self::Invalid { .. } => 422,
            Self::BadRequest(_) => 400,
            Self::MethodNotAllowed => 405,
            Self::UnsupportedMediaType(_) => 415,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::NoRoute => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Modified { .. } | Self::ApplyConflict { .. } => "Conflict",
            Self::Invalid { .. } => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::UnsupportedMediaType(_) => "UnsupportedMediaType",
        }
    }

    /// The `metav1.Status` kube-apiserver answers with.
    pub fn status(&self) -> Value {
        let mut details = json!({});
        let plural = |resource: &str, group: &str| {
            resource
                .strip_suffix(&format!(".{group}"))
                .unwrap_or(resource)
                .to_string()
        };
        match self {
            Self::NotFound {
                resource,
                group,
                name,
            }
            | Self::AlreadyExists {
                resource,
                group,
                name,
            }
            | Self::Modified {
                resource,
                group,
                name,
            } => {
                details["name"] = json!(name);
                if !group.is_empty() {
                    details["group"] = json!(group);
                }
                details["kind"] = json!(plural(resource, group));
            }
            Self::Invalid {
                kind,
                group,
                name,
                field,
                reason,
            } => {
                details["name"] = json!(name);
                if !group.is_empty() {
                    details["group"] = json!(group);
                }
                details["kind"] = json!(kind);
                details["causes"] = json!([{
                    "reason": "FieldValueInvalid",
                    "message": reason,
                    "field": field,
                }]);
            }
            Self::ApplyConflict { conflicts } => {
                details["causes"] = conflicts
                    .iter()
                    .map(|(manager, field)| {
                        json!({
                            "reason": "FieldManagerConflict",
                            "message": format!("conflict with \"{manager}\""),
                            "field": field,
                        })
                    })
                    .collect();
            }
            _ => {}
        }
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "details": details,
            "code": self.code(),
        })
    }
}

/// A timestamp as Kubernetes writes it: `2026-01-30T23:55:00Z`.
pub fn timestamp(unix_seconds: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix_seconds);
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(test)]
mod tests;
