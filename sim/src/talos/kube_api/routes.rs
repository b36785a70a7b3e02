//! What the emulated API server answers, path by path, as kube-apiserver
//! does for an authenticated admin: the health checks (`/livez`, `/readyz`,
//! `/healthz`, `?verbose`), `/version`, the API paths (`/api…`, `/apis…`,
//! answered from the cluster's store by `crate::kube`), and
//! `metav1.Status` errors for the rest (401 for strangers, 404 for paths
//! it does not serve).

use serde_json::Value;

use super::http::{self, Head, Reply};
use crate::kube::api::{self, Answer, ApiRequest};
use crate::talos::auth::Caller;

/// The answer to one request with its body: the API paths go to `serve`,
/// the rest to [`answer`].
pub fn route(
    head: &Head,
    body: Result<Vec<u8>, Reply>,
    caller: &Caller,
    served: &Served,
    health: impl FnOnce() -> Result<(), String>,
    serve: impl FnOnce(&ApiRequest) -> Answer,
) -> Reply {
    if let Ok(request) = http::parse(head)
        && matches!(caller, Caller::Verified { .. })
        && api::serves(request.path)
    {
        let body = match body {
            Ok(body) => body,
            Err(reply) => return reply,
        };
        let answer = serve(&ApiRequest {
            method: request.method,
            path: request.path,
            query: request.query,
            content_type: request.content_type,
            body: &body,
            server_address: request.host.unwrap_or_default(),
        });
        return Reply::json(answer.code, &answer.body);
    }
    answer(head, caller, served, health)
}

/// What a server answers with that does not change while it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// The `/version` document.
    pub version: Value,
}

/// The answer to one request, asking `health` only for the checks that
/// need the world.
pub fn answer(
    head: &Head,
    caller: &Caller,
    served: &Served,
    health: impl FnOnce() -> Result<(), String>,
) -> Reply {
    let request = match http::parse(head) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    if !matches!(caller, Caller::Verified { .. }) {
        return Reply::status(401, "Unauthorized", "Unauthorized");
    }
    let check = match request.path {
        "/livez" => "livez",
        "/readyz" => "readyz",
        "/healthz" => "healthz",
        "/version" => {
            return match request.method {
                "GET" => Reply::json_indented(200, &served.version),
                _ => method_not_allowed(),
            };
        }
        _ => return not_found(),
    };
    if request.method != "GET" {
        return Reply::text(405, "405 method not allowed\n");
    }
    let etcd = if check == "livez" { Ok(()) } else { health() };
    match (etcd, request.has_parameter("verbose")) {
        (Ok(()), false) => Reply::text(200, "ok"),
        (Ok(()), true) => {
            let etcd_line = if check == "livez" { "" } else { "[+]etcd ok\n" };
            Reply::text(
                200,
                format!("[+]ping ok\n{etcd_line}{check} check passed\n"),
            )
        }
        (Err(reason), _) => Reply::text(
            500,
            format!("[+]ping ok\n[-]etcd failed: {reason}\n{check} check failed\n"),
        ),
    }
}

/// kube-apiserver's answer for a path nothing serves.
fn not_found() -> Reply {
    Reply::status(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn method_not_allowed() -> Reply {
    Reply::status(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )
}
