//! What every request passes through before its handler: a correlation ID,
//! the request log, authentication, the rate limit and injected faults.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::{AppState, lock};
use crate::clock::Timestamp;
use crate::errors::ApiError;

/// The route a request matched, e.g. `GET /servers/{id}`, for the log.
#[derive(Debug, Clone)]
struct RouteName(String);

fn correlation_id() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// Outermost layer: tags every response with `X-Correlation-Id` and logs
/// API requests (admin calls are not counted).
pub async fn correlate(State(sim): State<AppState>, request: Request, next: Next) -> Response {
    let id = correlation_id();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("X-Correlation-Id", value);
    }
    if !path.starts_with("/_sim") {
        let route = response
            .extensions()
            .get::<RouteName>()
            .map_or_else(|| format!("{method} {path}"), |r| r.0.clone());
        lock(&sim.requests).record(
            method.as_str(),
            &path,
            &route,
            response.status().as_u16(),
            &id,
        );
    }
    response
}

pub fn authorized(sim: &AppState, headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|token| token.trim() == sim.token)
}

/// Around every API route: authentication, the rate limit, faults.
pub async fn gate(
    State(sim): State<AppState>,
    matched: MatchedPath,
    request: Request,
    next: Next,
) -> Response {
    let template = matched
        .as_str()
        .strip_prefix("/v1")
        .unwrap_or(matched.as_str());
    let route = format!("{} {template}", request.method());
    let mut response = guarded(&sim, &route, request, next).await;
    response.extensions_mut().insert(RouteName(route));
    response
}

async fn guarded(sim: &AppState, route: &str, request: Request, next: Next) -> Response {
    if !authorized(sim, request.headers()) {
        return ApiError::Unauthorized.into_response();
    }
    let budget = lock(&sim.limiter).take(Instant::now(), Timestamp::now());
    let headers = match budget {
        Ok(headers) => headers,
        Err(headers) => {
            let mut response = ApiError::RateLimited.into_response();
            headers.apply(response.headers_mut());
            return response;
        }
    };
    let verdict = lock(&sim.faults).check(route);
    if !verdict.latency.is_zero() {
        tokio::time::sleep(verdict.latency).await;
    }
    let mut response = match verdict.failure {
        Some(failure) if verdict.after_handling => {
            let _lost = next.run(request).await;
            failure.into_response()
        }
        Some(failure) => failure.into_response(),
        None => next.run(request).await,
    };
    headers.apply(response.headers_mut());
    response
}

/// Unknown paths: `unauthorized` without a valid token, else `not_found`.
pub async fn fallback(State(sim): State<AppState>, headers: HeaderMap) -> Response {
    if !authorized(&sim, &headers) {
        return ApiError::Unauthorized.into_response();
    }
    ApiError::UnknownRoute.into_response()
}
