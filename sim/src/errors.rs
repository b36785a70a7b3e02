//! The API's error envelope, `{"error": {"code", "message", "details"}}`,
//! every error code the emulator answers with, and the error of a failed
//! action. A leaf: `crate::api` turns an `ApiError` into its HTTP answer.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One field of an `invalid_input` (or `uniqueness_error`) answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub name: String,
    pub messages: Vec<String>,
}

impl FieldError {
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            messages: vec![message.into()],
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("invalid input in fields '{}'", field_names(.0))]
    InvalidInput(Vec<FieldError>),
    #[error("{0}")]
    InvalidInputMessage(String),
    #[error("unable to parse JSON body: {0}")]
    Json(String),
    #[error("unable to authenticate")]
    Unauthorized,
    #[error("the requested resource was not found")]
    UnknownRoute,
    #[error("{kind} with ID {id} not found")]
    NotFound { kind: &'static str, id: String },
    #[error("{0}")]
    Forbidden(String),
    #[error("{kind} is locked")]
    Locked { kind: &'static str },
    #[error("{kind} is delete protected")]
    Protected { kind: &'static str },
    #[error("{field} is already used")]
    Uniqueness { field: &'static str },
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    ResourceLimit(String),
    #[error("{0}")]
    ResourceInUse(String),
    #[error("server {server} is already attached to network {network}")]
    ServerAlreadyAttached { server: i64, network: i64 },
    #[error("IP {0} is not available")]
    IpNotAvailable(String),
    #[error("no subnet or IP available")]
    NoSubnetAvailable,
    #[error("server must be stopped before changing its {0}")]
    ServerNotStopped(&'static str),
    #[error("{0}")]
    InvalidServerType(String),
    #[error("placement group with ID {0} contains already 10 servers")]
    PlacementGroupFull(i64),
    #[error("rate limit exceeded")]
    RateLimited,
    /// A failure chosen by fault injection.
    #[error("{message}")]
    Injected {
        status: StatusCode,
        code: String,
        message: String,
    },
    /// An error of one operation, with the status and code Hetzner
    /// documents for it (e.g. `firewall_already_applied`).
    #[error("{message}")]
    Operation {
        status: StatusCode,
        code: &'static str,
        message: String,
    },
    #[error("{0}")]
    Internal(String),
}

fn field_names(fields: &[FieldError]) -> String {
    fields
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl ApiError {
    pub fn not_found(kind: &'static str, id: impl ToString) -> Self {
        Self::NotFound {
            kind,
            id: id.to_string(),
        }
    }

    pub fn operation(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self::Operation {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn field(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidInput(vec![FieldError::new(name, message)])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidInput(_) | Self::InvalidInputMessage(_) | Self::Json(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::ResourceLimit(_) => StatusCode::FORBIDDEN,
            Self::NotFound { .. } | Self::UnknownRoute => StatusCode::NOT_FOUND,
            Self::Uniqueness { .. } | Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Locked { .. } | Self::Protected { .. } => StatusCode::LOCKED,
            Self::ResourceInUse(_)
            | Self::ServerAlreadyAttached { .. }
            | Self::IpNotAvailable(_)
            | Self::NoSubnetAvailable
            | Self::ServerNotStopped(_)
            | Self::InvalidServerType(_)
            | Self::PlacementGroupFull(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::Injected { status, .. } | Self::Operation { status, .. } => *status,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &str {
        match self {
            Self::InvalidInput(_) | Self::InvalidInputMessage(_) => "invalid_input",
            Self::Json(_) => "json_error",
            Self::Unauthorized => "unauthorized",
            Self::NotFound { .. } | Self::UnknownRoute => "not_found",
            Self::Forbidden(_) => "forbidden",
            Self::Locked { .. } => "locked",
            Self::Protected { .. } => "protected",
            Self::Uniqueness { .. } => "uniqueness_error",
            Self::Conflict(_) => "conflict",
            Self::ResourceLimit(_) => "resource_limit_exceeded",
            Self::ResourceInUse(_) => "resource_in_use",
            Self::ServerAlreadyAttached { .. } => "server_already_attached",
            Self::IpNotAvailable(_) => "ip_not_available",
            Self::NoSubnetAvailable => "no_subnet_available",
            Self::ServerNotStopped(_) => "server_not_stopped",
            Self::InvalidServerType(_) => "invalid_server_type",
            Self::PlacementGroupFull(_) => "placement_group_member_limit_reached",
            Self::RateLimited => "rate_limit_exceeded",
            Self::Injected { code, .. } => code,
            Self::Operation { code, .. } => code,
            Self::Internal(_) => "server_error",
        }
    }

    pub fn details(&self) -> Value {
        match self {
            Self::InvalidInput(fields) => json!({ "fields": fields }),
            Self::Uniqueness { field } => json!({ "fields": [{ "name": field }] }),
            _ => json!({}),
        }
    }

    pub fn envelope(&self) -> Value {
        json!({
            "error": {
                "code": self.code(),
                "message": self.to_string(),
                "details": self.details(),
            }
        })
    }
}

/// The `error` of an action that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionError {
    pub code: String,
    pub message: String,
}

/// Collects field errors so one answer can name every bad field, as the API does.
#[derive(Debug, Default)]
pub struct FieldErrors(Vec<FieldError>);

impl FieldErrors {
    pub fn push(&mut self, name: impl Into<String>, message: impl Into<String>) {
        let name = name.into();
        let message = message.into();
        match self.0.iter_mut().find(|f| f.name == name) {
            Some(field) => field.messages.push(message),
            None => self.0.push(FieldError::new(name, message)),
        }
    }

    pub fn into_fields(self) -> Vec<FieldError> {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_result(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::InvalidInput(self.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_input_lists_fields() {
        let mut errors = FieldErrors::default();
        errors.push("user_data", "is too long");
        errors.push("name", "is required");
        errors.push("user_data", "must be UTF-8");
        let err = errors.into_result().unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        let envelope = err.envelope();
        assert_eq!(envelope["error"]["code"], "invalid_input");
        let fields = &envelope["error"]["details"]["fields"];
        assert_eq!(fields[0]["name"], "user_data");
        assert_eq!(fields[0]["messages"].as_array().map(Vec::len), Some(2));
        assert_eq!(fields[1]["name"], "name");
    }

    #[test]
    fn codes_and_statuses() {
        let cases = [
            (ApiError::Locked { kind: "server" }, 423, "locked"),
            (ApiError::not_found("server", 7), 404, "not_found"),
            (
                ApiError::Uniqueness { field: "name" },
                409,
                "uniqueness_error",
            ),
            (ApiError::Unauthorized, 401, "unauthorized"),
            (ApiError::Json("eof".into()), 400, "json_error"),
            (ApiError::RateLimited, 429, "rate_limit_exceeded"),
            (
                ApiError::PlacementGroupFull(3),
                422,
                "placement_group_member_limit_reached",
            ),
            (
                ApiError::ResourceLimit("x".into()),
                403,
                "resource_limit_exceeded",
            ),
        ];
        for (err, status, code) in cases {
            assert_eq!(err.status().as_u16(), status, "{code}");
            assert_eq!(err.code(), code);
            assert_eq!(err.envelope()["error"]["code"], code);
            assert!(err.envelope()["error"]["message"].is_string());
        }
    }

    #[test]
    fn uniqueness_names_the_field() {
        let envelope = ApiError::Uniqueness { field: "name" }.envelope();
        assert_eq!(envelope["error"]["details"]["fields"][0]["name"], "name");
    }
}
