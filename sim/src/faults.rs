//! Fault injection: answers replaced by errors (at random or for the next N
//! requests of a route), added latency, and actions that end in an error.
//! Faults are written as JSON, the same for `--fault` and `POST /_sim/faults`:
//!
//! ```json
//! {"route": "POST /servers", "respond": 503, "probability": 0.1}
//! {"route": "GET /servers/{id}", "respond": "rate_limited", "count": 2}
//! {"route": "*", "latency_ms": 200}
//! {"action": "create_image", "count": 1, "code": "action_failed"}
//! {"action": "start_server", "server": "noreturn-cp-1", "count": 1}
//! {"rescue": "download_fails", "count": 1}
//! ```

use std::time::Duration;

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::errors::{ActionError, ApiError};
use crate::resources::servers::Server;
use crate::talos::faults::ServerRef;

/// An action command that is to end in an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionFailure {
    /// The command, e.g. `create_image`, or `*` for any.
    pub action: String,
    /// How many actions fail; every one when absent.
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default = "default_action_code")]
    pub code: String,
    #[serde(default)]
    pub message: Option<String>,
    /// Only actions on this server (by id or name); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerRef>,
}

fn default_action_code() -> String {
    "action_failed".into()
}

impl ActionFailure {
    pub fn new(command: &str, count: Option<u32>) -> Self {
        Self {
            action: command.into(),
            count,
            code: default_action_code(),
            message: None,
            server: None,
        }
    }

    /// Whether an action of `command` on `servers` (the servers among its
    /// resources) is to fail.
    pub fn matches<'a>(
        &self,
        command: &str,
        mut servers: impl Iterator<Item = &'a Server>,
    ) -> bool {
        (self.action == "*" || self.action == command)
            && self
                .server
                .as_ref()
                .is_none_or(|wanted| servers.any(|s| wanted.matches(s)))
    }

    pub fn error(&self) -> ActionError {
        ActionError {
            code: self.code.clone(),
            message: self
                .message
                .clone()
                .unwrap_or_else(|| "Action failed (injected by hct-sim)".into()),
        }
    }

    /// Uses one failure up; true when none are left.
    pub fn consume(&mut self) -> bool {
        match &mut self.count {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n == 0
            }
            None => false,
        }
    }
}

/// The answer a faulty route gives instead of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Respond {
    Named(NamedFailure),
    Status(u16),
    Custom {
        status: u16,
        code: String,
        #[serde(default)]
        message: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NamedFailure {
    RateLimited,
    Unavailable,
    Locked,
    Conflict,
    ServerError,
    BadGateway,
    Timeout,
}

impl NamedFailure {
    fn status(self) -> u16 {
        match self {
            Self::RateLimited => 429,
            Self::Unavailable => 503,
            Self::Locked => 423,
            Self::Conflict => 409,
            Self::ServerError => 500,
            Self::BadGateway => 502,
            Self::Timeout => 504,
        }
    }
}

/// The error code Hetzner pairs with an HTTP status.
fn code_for_status(status: u16) -> &'static str {
    match status {
        409 => "conflict",
        423 => "locked",
        429 => "rate_limit_exceeded",
        502 => "bad_gateway",
        503 => "unavailable",
        504 => "timeout",
        400..=499 => "invalid_input",
        _ => "server_error",
    }
}

impl Respond {
    pub fn to_error(&self) -> ApiError {
        let (status, code, message) = match self {
            Self::Named(named) => (
                named.status(),
                code_for_status(named.status()).to_string(),
                None,
            ),
            Self::Status(status) => (*status, code_for_status(*status).to_string(), None),
            Self::Custom {
                status,
                code,
                message,
            } => (*status, code.clone(), message.clone()),
        };
        if status == 429 && code == "rate_limit_exceeded" {
            return ApiError::RateLimited;
        }
        ApiError::Injected {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            message: message.unwrap_or_else(|| format!("{code} (injected by hct-sim)")),
            code,
        }
    }
}

/// A fault on requests to a route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteFault {
    /// `METHOD /path/{id}` as in the request log, `METHOD *`, or `*`.
    #[serde(default = "any_route")]
    pub route: String,
    #[serde(default)]
    pub respond: Option<Respond>,
    /// Chance that a request is affected; every request when absent.
    #[serde(default)]
    pub probability: Option<f64>,
    /// How many requests are affected; all when absent.
    #[serde(default)]
    pub count: Option<u32>,
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// The request is carried out, and then its answer is lost: the client
    /// gets `respond` instead, as from a proxy that timed out while the API
    /// did the work. A client that retries then meets what it did.
    #[serde(default)]
    pub after_handling: bool,
}

fn any_route() -> String {
    "*".into()
}

impl RouteFault {
    pub fn matches(&self, route: &str) -> bool {
        let wanted = self.route.trim();
        if wanted == "*" {
            return true;
        }
        let wanted = wanted.replacen(" /v1/", " /", 1);
        match wanted.split_once(' ') {
            Some((method, "*")) => route.split(' ').next() == Some(method),
            _ => wanted == route,
        }
    }
}

/// Any kind of fault, as accepted by `--fault` and the admin API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FaultSpec {
    Action(ActionFailure),
    /// A fault of the emulated Talos nodes (`{"talos": "unreachable", …}`).
    Talos(crate::talos::faults::TalosFault),
    /// A fault of the emulated rescue systems (`{"rescue": "slow_ssh", …}`).
    Rescue(crate::rescue::RescueFault),
    Route(RouteFault),
}

impl FaultSpec {
    pub fn parse(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| format!("invalid fault '{json}': {e}"))
    }
}

/// What the faults decided for one request.
#[derive(Debug, Default)]
pub struct Verdict {
    pub latency: Duration,
    pub failure: Option<ApiError>,
    /// The failure replaces the answer of a request that was carried out.
    pub after_handling: bool,
}

#[derive(Debug)]
pub struct RouteFaults {
    rules: Vec<RouteFault>,
    rng: fastrand::Rng,
}

impl RouteFaults {
    pub fn new(rules: Vec<RouteFault>, seed: Option<u64>) -> Self {
        let rng = seed.map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed);
        Self { rules, rng }
    }

    pub fn add(&mut self, rule: RouteFault) {
        self.rules.push(rule);
    }

    pub fn clear(&mut self) {
        self.rules.clear();
    }

    pub fn rules(&self) -> &[RouteFault] {
        &self.rules
    }

    pub fn check(&mut self, route: &str) -> Verdict {
        let mut verdict = Verdict::default();
        let mut used_up = Vec::new();
        for (index, rule) in self.rules.iter_mut().enumerate() {
            if !rule.matches(route) {
                continue;
            }
            if let Some(p) = rule.probability
                && self.rng.f64() >= p
            {
                continue;
            }
            if verdict.failure.is_some() && rule.respond.is_some() {
                continue; // one failure per request; leave this rule's count alone
            }
            if let Some(ms) = rule.latency_ms {
                verdict.latency += Duration::from_millis(ms);
            }
            if let Some(respond) = &rule.respond {
                verdict.failure = Some(respond.to_error());
                verdict.after_handling = rule.after_handling;
            }
            if let Some(n) = &mut rule.count {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    used_up.push(index);
                }
            }
        }
        for index in used_up.into_iter().rev() {
            self.rules.remove(index);
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(json: &str) -> RouteFault {
        match FaultSpec::parse(json).unwrap() {
            FaultSpec::Route(r) => r,
            other => panic!("not a route fault: {other:?}"),
        }
    }

    #[test]
    fn parses_both_kinds() {
        assert!(matches!(
            FaultSpec::parse(r#"{"action": "create_image", "count": 1}"#).unwrap(),
            FaultSpec::Action(ActionFailure { count: Some(1), .. })
        ));
        let r =
            route(r#"{"route": "POST /servers", "respond": "unavailable", "probability": 0.5}"#);
        assert_eq!(r.respond, Some(Respond::Named(NamedFailure::Unavailable)));
        let r = route(r#"{"route": "GET *", "respond": {"status": 500, "code": "boom"}}"#);
        assert!(matches!(
            r.respond,
            Some(Respond::Custom { status: 500, .. })
        ));
        assert!(FaultSpec::parse(r#"{"rout": "x"}"#).is_err());
    }

    #[test]
    fn forced_failures_are_counted() {
        let mut faults = RouteFaults::new(
            vec![route(
                r#"{"route": "POST /servers", "respond": 429, "count": 2}"#,
            )],
            Some(1),
        );
        assert!(faults.check("GET /servers").failure.is_none());
        for _ in 0..2 {
            let failure = faults.check("POST /servers").failure.unwrap();
            assert_eq!(failure.code(), "rate_limit_exceeded");
        }
        assert!(faults.check("POST /servers").failure.is_none());
        assert!(faults.rules().is_empty());
    }

    #[test]
    fn probability_gates_failures() {
        let mut faults = RouteFaults::new(
            vec![route(
                r#"{"route": "*", "respond": 503, "probability": 0.3}"#,
            )],
            Some(42),
        );
        let failed = (0..1000)
            .filter(|_| faults.check("GET /servers").failure.is_some())
            .count();
        assert!((200..400).contains(&failed), "{failed} of 1000 failed");
    }

    #[test]
    fn latency_adds_up_and_method_wildcards_match() {
        let mut faults = RouteFaults::new(
            vec![
                route(r#"{"route": "*", "latency_ms": 20}"#),
                route(r#"{"route": "POST *", "latency_ms": 30, "respond": "locked"}"#),
            ],
            None,
        );
        let get = faults.check("GET /networks");
        assert_eq!(get.latency, Duration::from_millis(20));
        assert!(get.failure.is_none());
        let post = faults.check("POST /servers/{id}/actions/poweron");
        assert_eq!(post.latency, Duration::from_millis(50));
        assert_eq!(
            post.failure.map(|f| f.code().to_string()),
            Some("locked".into())
        );
    }

    #[test]
    fn action_failures_are_used_up() {
        let mut f = ActionFailure::new("create_image", Some(2));
        let none = std::iter::empty;
        assert!(f.matches("create_image", none()) && !f.matches("create_server", none()));
        assert!(!f.consume());
        assert!(f.consume());
        let mut always = ActionFailure::new("*", None);
        assert!(always.matches("anything", none()) && !always.consume());
        // One aimed at a server fails no action that is not on it.
        let aimed: ActionFailure = serde_json::from_value(
            serde_json::json!({"action": "start_server", "server": "noreturn-cp-1"}),
        )
        .unwrap();
        assert!(!aimed.matches("start_server", none()));
    }
}
