//! The HTTP core: authentication, the request budget, retries with backoff,
//! error envelopes and pagination. Endpoint methods live in their own modules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};
use url::Url;

use super::error::{ApiError, HcloudError};
use super::models::Pagination;
use super::ratelimit::RateBudget;
use super::watcher::Watcher;
use crate::pace::Pace;
use crate::secret::Secret;

/// Hetzner's largest page.
const PER_PAGE: usize = 50;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts for transient failures (5xx, connection errors, 429).
const MAX_ATTEMPTS: u32 = 8;
/// Attempts when a resource is `locked` by a running action.
const MAX_LOCKED_ATTEMPTS: u32 = 20;
/// Attempts when the network has no subnet for the IP yet (one being added).
const MAX_NO_SUBNET_ATTEMPTS: u32 = 5;
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(8);

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub endpoint: Url,
    pub token: Secret,
    /// The first polling interval for actions (waits back off from there),
    /// when to poll an action of a kind this client has not seen finish
    /// yet, and how long retries wait.
    pub pace: Pace,
}

/// A Hetzner Cloud API client. Cheap to clone: clones share the connection
/// pool, the request budget and what was learned about action durations.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    cancel: CancellationToken,
}

struct Inner {
    http: reqwest::Client,
    endpoint: Url,
    token: Secret,
    budget: RateBudget,
    pace: Pace,
    /// Observed duration per action command, for the first poll of the next one.
    pub(super) action_durations: Mutex<HashMap<String, Duration>>,
    watcher: Watcher,
}

/// How a request may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Reads and idempotent writes: retry transient failures.
    Transient,
    /// Actions on a resource: also wait out `locked` (the action did not start).
    AlsoLocked,
    /// Attaching to a network: also wait out `locked` and `no_subnet_available`
    /// (a subnet that is still being created).
    AlsoLockedAndSubnet,
    /// A write that must not be sent twice (it would make a second object):
    /// wait out `locked` and the rate limit, which prove it was not carried
    /// out, and return every answer that leaves that open
    /// ([`HcloudError::is_ambiguous`]) to the caller, who looks first.
    OnlyIfNotDone,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, HcloudError> {
        let http = crate::net::http_client()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| HcloudError::Transport {
                endpoint: config.endpoint.to_string(),
                reason: e.to_string(),
            })?;
        let mut endpoint = config.endpoint;
        if !endpoint.path().ends_with('/') {
            endpoint.set_path(&format!("{}/", endpoint.path()));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                endpoint,
                token: config.token,
                budget: RateBudget::default(),
                pace: config.pace,
                action_durations: Mutex::new(HashMap::new()),
                watcher: Watcher::default(),
            }),
            cancel: CancellationToken::new(),
        })
    }

    /// This client, stopping its waits when `cancel` fires.
    pub fn with_cancel(&self, cancel: CancellationToken) -> Self {
        Self {
            inner: self.inner.clone(),
            cancel,
        }
    }

    pub(crate) fn watcher(&self) -> &Watcher {
        &self.inner.watcher
    }

    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(crate) fn pace(&self) -> Pace {
        self.inner.pace
    }

    pub(crate) fn poll_interval(&self) -> Duration {
        self.inner.pace.poll_interval()
    }

    pub(crate) fn estimated_duration(&self, command: &str) -> Option<Duration> {
        self.inner
            .action_durations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(command)
            .copied()
    }

    pub(crate) fn record_duration(&self, command: &str, observed: Duration) {
        let mut durations = self
            .inner
            .action_durations
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let estimate = durations.entry(command.to_string()).or_insert(observed);
        // Smooth, so one slow action does not slow every later first poll.
        *estimate = (*estimate * 3 + observed) / 4;
    }

    /// Sleeps unless Terraform stops us first.
    pub(crate) async fn sleep(&self, duration: Duration, what: &str) -> Result<(), HcloudError> {
        tokio::select! {
            () = tokio::time::sleep(duration) => Ok(()),
            () = self.cancel.cancelled() => Err(HcloudError::Cancelled { what: what.to_string() }),
        }
    }

    /// Sends one API call, retrying what is safe to retry, and decodes the answer.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Json>,
        retry: Retry,
    ) -> Result<T, HcloudError> {
        let json = self.call_json(method, path, query, body, retry).await?;
        serde_json::from_value(json).map_err(|e| HcloudError::Decode {
            context: path.to_string(),
            reason: e.to_string(),
        })
    }

    pub(crate) async fn call_json(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Json>,
        retry: Retry,
    ) -> Result<Json, HcloudError> {
        let url = self
            .inner
            .endpoint
            .join(path)
            .map_err(|e| HcloudError::Decode {
                context: path.to_string(),
                reason: e.to_string(),
            })?;
        let what = format!("{method} /{path}");
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.inner.budget.acquire().await;
            let mut request = self
                .inner
                .http
                .request(method.clone(), url.clone())
                .bearer_auth(self.inner.token.expose())
                .query(query);
            if let Some(body) = body {
                request = request.json(body);
            }
            let sent = tokio::select! {
                sent = request.send() => sent,
                () = self.cancel.cancelled() => return Err(HcloudError::Cancelled { what }),
            };
            let failure = match sent {
                Ok(response) => match self.read_response(response, &what).await {
                    Ok(json) => return Ok(json),
                    Err(failure) => failure,
                },
                Err(e) => Failure::Transport(HcloudError::Transport {
                    endpoint: self.inner.endpoint.to_string(),
                    reason: e.without_url().to_string(),
                }),
            };
            let wait = match self.retry_wait(&failure, retry, attempt).await {
                Some(wait) => wait,
                None => return Err(failure.into_error()),
            };
            debug!(
                attempt,
                wait_ms = wait.as_millis() as u64,
                "{what}: retrying after {}",
                failure.describe()
            );
            self.sleep(wait, &what).await?;
        }
    }

    async fn read_response(
        &self,
        response: reqwest::Response,
        what: &str,
    ) -> Result<Json, Failure> {
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let number = |name: &str| header(name).and_then(|v| v.parse::<i64>().ok());
        self.inner
            .budget
            .observe(number("RateLimit-Limit"), number("RateLimit-Remaining"))
            .await;
        let reset_in = number("RateLimit-Reset").map(|reset| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs() as i64;
            Duration::from_secs(reset.saturating_sub(now).max(0) as u64)
        });
        let correlation_id = header("X-Correlation-Id");
        let bytes = response.bytes().await.map_err(|e| {
            Failure::Transport(HcloudError::Transport {
                endpoint: self.inner.endpoint.to_string(),
                reason: e.to_string(),
            })
        })?;
        if status.is_success() {
            if bytes.is_empty() {
                return Ok(Json::Null);
            }
            return serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Final(HcloudError::Decode {
                    context: what.to_string(),
                    reason: e.to_string(),
                })
            });
        }
        let envelope: Json = serde_json::from_slice(&bytes).unwrap_or(Json::Null);
        let error = &envelope["error"];
        let code = error["code"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| default_code(status));
        let fields = error["details"]["fields"]
            .as_array()
            .map(|fields| {
                fields
                    .iter()
                    .map(|f| {
                        let name = f["name"].as_str().unwrap_or_default().to_string();
                        let messages = f["messages"]
                            .as_array()
                            .map(|m| {
                                m.iter()
                                    .filter_map(|s| s.as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default();
                        (name, messages)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Err(Failure::Api {
            error: ApiError {
                status: status.as_u16(),
                message: error["message"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_string()),
                code,
                fields,
                details: error["details"].clone(),
                correlation_id,
            },
            reset_in,
        })
    }

    /// How long to wait before another attempt, or None to give up.
    async fn retry_wait(&self, failure: &Failure, retry: Retry, attempt: u32) -> Option<Duration> {
        let backoff = || {
            let pace = self.inner.pace;
            let exponential = pace
                .scaled(BACKOFF_BASE)
                .saturating_mul(1 << attempt.min(10))
                .min(pace.scaled(BACKOFF_CAP));
            // Jitter (50–100 %) keeps parallel callers from retrying in lockstep.
            exponential.mul_f64(0.5 + fastrand::f64() / 2.0)
        };
        match failure {
            Failure::Transport(_) if retry == Retry::OnlyIfNotDone => None,
            Failure::Transport(_) if attempt < MAX_ATTEMPTS => Some(backoff()),
            Failure::Api { error, .. } if retry == Retry::OnlyIfNotDone && error.is_ambiguous() => {
                None
            }
            Failure::Api { error, reset_in } => match error.code.as_str() {
                "rate_limit_exceeded" if attempt < MAX_ATTEMPTS => {
                    warn!("Hetzner rate limit reached: slowing down");
                    // The budget's wait as the API reports it, whatever the pace.
                    Some(self.inner.budget.backoff_after_429(*reset_in).await + backoff())
                }
                "conflict" | "timeout" | "unavailable" | "bad_gateway" | "service_error"
                | "maintenance"
                    if attempt < MAX_ATTEMPTS =>
                {
                    Some(backoff())
                }
                "locked" if retry != Retry::Transient && attempt < MAX_LOCKED_ATTEMPTS => {
                    Some(backoff())
                }
                "no_subnet_available"
                    if retry == Retry::AlsoLockedAndSubnet && attempt < MAX_NO_SUBNET_ATTEMPTS =>
                {
                    Some(backoff())
                }
                _ if matches!(error.status, 500 | 502..=504) && attempt < MAX_ATTEMPTS => {
                    Some(backoff())
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Every item of a list endpoint, following `meta.pagination.next_page`.
    pub(crate) async fn list<T: DeserializeOwned>(
        &self,
        path: &str,
        key: &str,
        query: &[(&str, String)],
    ) -> Result<Vec<T>, HcloudError> {
        let mut items = Vec::new();
        let mut page = 1i64;
        loop {
            let mut paged: Vec<(&str, String)> = query.to_vec();
            paged.push(("page", page.to_string()));
            paged.push(("per_page", PER_PAGE.to_string()));
            let mut json = self
                .call_json(Method::GET, path, &paged, None, Retry::Transient)
                .await?;
            let batch: Vec<T> =
                serde_json::from_value(json[key].take()).map_err(|e| HcloudError::Decode {
                    context: format!("GET /{path} ({key})"),
                    reason: e.to_string(),
                })?;
            items.extend(batch);
            let pagination: Pagination =
                serde_json::from_value(json["meta"]["pagination"].take()).unwrap_or_default();
            match pagination.next_page {
                Some(next) if next > page => page = next,
                _ => return Ok(items),
            }
        }
    }
}

/// Why an attempt failed, with what the retry decision needs.
enum Failure {
    Transport(HcloudError),
    Api {
        error: ApiError,
        reset_in: Option<Duration>,
    },
    Final(HcloudError),
}

impl Failure {
    fn describe(&self) -> String {
        match self {
            Failure::Transport(e) | Failure::Final(e) => e.to_string(),
            Failure::Api { error, .. } => format!("{} ({})", error.code, error.status),
        }
    }

    fn into_error(self) -> HcloudError {
        match self {
            Failure::Transport(e) | Failure::Final(e) => e,
            Failure::Api { error, .. } => HcloudError::Api(Box::new(error)),
        }
    }
}

/// A code for answers that lack the error envelope (e.g. a proxy's 502).
fn default_code(status: StatusCode) -> String {
    match status.as_u16() {
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        423 => "locked",
        429 => "rate_limit_exceeded",
        502 => "bad_gateway",
        503 => "unavailable",
        504 => "timeout",
        _ => "unknown_error",
    }
    .to_string()
}
