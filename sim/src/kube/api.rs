//! The REST paths of kube-apiserver that the store answers: discovery,
//! and for every served resource `GET` (one object or a list, with
//! `labelSelector` and `fieldSelector` on `metadata.name` /
//! `metadata.namespace`), `POST`, `PUT` (with the CSR `approval` and the
//! `status` subresources), `PATCH` (server-side apply, merge and
//! strategic merge patches) and `DELETE`; and the OpenAPI v3 index.
//! A write with `dryRun=All` answers as the write would, on a copy of the
//! store.

use serde_json::{Value, json};

use super::KubeError;
use super::apply::{self, merge_patch};
use super::kinds::{self, Resource};
use super::store::ClusterStore;
use crate::labels::Selector;

/// One request, as the HTTP layer read it.
#[derive(Debug, Clone, Copy)]
pub struct ApiRequest<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub content_type: Option<&'a str>,
    pub body: &'a [u8],
    /// `host:port` clients reach this server at (for `/api`).
    pub server_address: &'a str,
}

/// The status code and JSON body of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub code: u16,
    pub body: Value,
}

impl Answer {
    fn ok(body: Value) -> Self {
        Self { code: 200, body }
    }
}

impl From<KubeError> for Answer {
    fn from(e: KubeError) -> Self {
        Self {
            code: e.code(),
            body: e.status(),
        }
    }
}

/// Whether the store serves the path at all (the rest is the HTTP layer's).
pub fn serves(path: &str) -> bool {
    path == "/api"
        || path == "/apis"
        || path.starts_with("/api/")
        || path.starts_with("/apis/")
        || path == "/openapi/v3"
        || path.starts_with("/openapi/v3/")
}

pub fn handle(store: &mut ClusterStore, request: &ApiRequest) -> Answer {
    let dry_run = match parameter(request.query, "dryRun") {
        Some(value) if value != "All" => {
            return KubeError::BadRequest(format!(
                "Invalid dry run value: {value:?}: supported values: \"All\""
            ))
            .into();
        }
        value => request.method != "GET" && value.is_some(),
    };
    let mut copy;
    let store = if dry_run {
        copy = store.clone();
        &mut copy
    } else {
        store
    };
    match route(store, request) {
        Ok(answer) => answer,
        Err(e) => e.into(),
    }
}

/// Where a path points.
struct Target {
    resource: Resource,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn route(store: &mut ClusterStore, request: &ApiRequest) -> Result<Answer, KubeError> {
    let resources = store.resources();
    let segments: Vec<&str> = request.path.split('/').filter(|s| !s.is_empty()).collect();
    let get_only = |body: Option<Value>| match (request.method, body) {
        ("GET", Some(body)) => Ok(Answer::ok(body)),
        (_, None) => Err(KubeError::NoRoute),
        _ => Err(KubeError::MethodNotAllowed),
    };
    if let Some(key) = request.path.strip_prefix("/openapi/v3") {
        let key = key.trim_start_matches('/');
        let document = if key.is_empty() {
            Some(super::openapi::root(&resources))
        } else {
            super::openapi::for_path(&resources, key)
        };
        return get_only(document);
    }
    let (group, version, rest) = match segments.as_slice() {
        ["api"] => return get_only(Some(kinds::core_versions(request.server_address))),
        ["apis"] => return get_only(Some(kinds::group_list(&resources))),
        ["api", "v1"] => return get_only(kinds::resource_list(&resources, "", "v1")),
        ["apis", group] => return get_only(kinds::group(&resources, group)),
        ["apis", group, version] => {
            return get_only(kinds::resource_list(&resources, group, version));
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(KubeError::NoRoute),
    };
    let find = |plural: &str| kinds::find(&resources, group, version, plural).cloned();
    let namespaced_target = match rest {
        ["namespaces", namespace, plural, tail @ ..] => find(plural)
            .filter(|r| r.namespaced)
            .map(|r| (r, Some(namespace.to_string()), tail)),
        _ => None,
    };
    let (resource, namespace, tail) = match namespaced_target {
        Some(found) => found,
        None => match rest {
            [plural, tail @ ..] => (find(plural).ok_or(KubeError::NoRoute)?, None, tail),
            [] => return Err(KubeError::NoRoute),
        },
    };
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, sub] if kinds::subresources(&resource).contains(sub) => {
            (Some(name.to_string()), Some(sub.to_string()))
        }
        _ => return Err(KubeError::NoRoute),
    };
    let target = Target {
        resource,
        namespace,
        name,
        subresource,
    };
    match (request.method, &target.name) {
        ("GET", None) => list(store, &target, request.query),
        ("GET", Some(name)) => Ok(Answer::ok(
            store
                .get_or_404(&target.resource, ns(&target), name)?
                .clone(),
        )),
        ("POST", None) => {
            let object = body(request)?;
            let manager = parameter(request.query, "fieldManager").unwrap_or_default();
            let created = store.create(&target.resource, ns(&target), object, &manager)?;
            Ok(Answer {
                code: 201,
                body: created,
            })
        }
        ("PUT", Some(name)) => {
            let protobuf = request
                .content_type
                .is_some_and(|t| t.starts_with(super::protobuf::CONTENT_TYPE));
            if protobuf && target.subresource.is_none() {
                return Err(KubeError::UnsupportedMediaType(
                    "application/json, application/yaml".into(),
                ));
            }
            put(store, &target, name, body(request)?)
        }
        ("PATCH", Some(name)) => patch(store, &target, name, request),
        ("DELETE", Some(name)) => {
            let deleted = store.delete(&target.resource, ns(&target), name)?;
            let mut details = json!({"name": name, "kind": target.resource.plural});
            if !target.resource.group.is_empty() {
                details["group"] = json!(target.resource.group);
            }
            details["uid"] = deleted["metadata"]["uid"].clone();
            Ok(Answer::ok(json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            })))
        }
        _ => Err(KubeError::MethodNotAllowed),
    }
}

fn ns(target: &Target) -> &str {
    target.namespace.as_deref().unwrap_or("")
}

fn parameter(query: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn body(request: &ApiRequest) -> Result<Value, KubeError> {
    let media = request
        .content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    if media == super::protobuf::CONTENT_TYPE {
        return super::protobuf::decode(request.body).ok_or_else(|| {
            KubeError::UnsupportedMediaType("application/json, application/yaml".into())
        });
    }
    serde_json::from_slice(request.body)
        .map_err(|e| KubeError::BadRequest(format!("the object provided is unrecognized: {e}")))
}

fn list(store: &ClusterStore, target: &Target, query: &str) -> Result<Answer, KubeError> {
    let labels = match parameter(query, "labelSelector") {
        Some(text) => Selector::parse(&text)
            .map_err(|e| KubeError::BadRequest(format!("unable to parse requirement: {e}")))?,
        None => Selector::default(),
    };
    let mut fields = Vec::new();
    if let Some(text) = parameter(query, "fieldSelector") {
        for requirement in text.split(',').filter(|r| !r.is_empty()) {
            let (field, value) = requirement
                .split_once("==")
                .or_else(|| requirement.split_once('='))
                .ok_or_else(|| {
                    KubeError::BadRequest(format!("invalid selector: '{requirement}'"))
                })?;
            if !matches!(field, "metadata.name" | "metadata.namespace") {
                return Err(KubeError::BadRequest(format!(
                    "field label not supported: {field}"
                )));
            }
            fields.push((field.to_string(), value.to_string()));
        }
    }
    let items: Vec<Value> = store
        .list(
            &target.resource,
            target.namespace.as_deref(),
            &labels,
            &fields,
        )
        .into_iter()
        .cloned()
        .collect();
    Ok(Answer::ok(json!({
        "kind": format!("{}List", target.resource.kind),
        "apiVersion": target.resource.api_version(),
        "metadata": {"resourceVersion": store.revision()},
        "items": items,
    })))
}

fn put(
    store: &mut ClusterStore,
    target: &Target,
    name: &str,
    object: Value,
) -> Result<Answer, KubeError> {
    let resource = &target.resource;
    let Some(sub) = &target.subresource else {
        let updated = store.update(resource, ns(target), name, object)?;
        return Ok(Answer::ok(updated));
    };
    // A subresource takes only its part of the body: the conditions for a
    // CSR's approval, the status for status.
    let old = store.get_or_404(resource, ns(target), name)?.clone();
    if let Some(given) = object["metadata"]["resourceVersion"].as_str()
        && Some(given) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(KubeError::Modified {
            resource: resource.qualified(),
            group: resource.group.clone(),
            name: name.to_string(),
        });
    }
    let mut updated = old.clone();
    match sub.as_str() {
        "approval" => {
            updated["status"]["conditions"] = object["status"]["conditions"].clone();
        }
        _ => updated["status"] = object["status"].clone(),
    }
    Ok(Answer::ok(store.replace(resource, &old, updated)))
}

fn patch(
    store: &mut ClusterStore,
    target: &Target,
    name: &str,
    request: &ApiRequest,
) -> Result<Answer, KubeError> {
    let resource = &target.resource;
    let content_type = request
        .content_type
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    match content_type {
        "application/apply-patch+yaml" => {
            let text = std::str::from_utf8(request.body)
                .map_err(|_| KubeError::BadRequest("the body is not UTF-8".into()))?;
            let applied: Value = serde_yaml_ng::from_str(text)
                .map_err(|e| KubeError::BadRequest(format!("error decoding YAML: {e}")))?;
            let manager = parameter(request.query, "fieldManager").unwrap_or_default();
            let force = parameter(request.query, "force").as_deref() == Some("true");
            let (object, created) =
                apply::apply(store, resource, ns(target), name, applied, &manager, force)?;
            Ok(Answer {
                code: if created { 201 } else { 200 },
                body: object,
            })
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let patch = body(request)?;
            let old = store.get_or_404(resource, ns(target), name)?.clone();
            let mut updated = old.clone();
            merge_patch(&mut updated, &patch);
            if target.subresource.is_some() {
                let status = updated["status"].clone();
                updated = old.clone();
                updated["status"] = status;
            }
            let updated = store.admit(resource, ns(target), Some(name), updated)?;
            Ok(Answer::ok(store.replace(resource, &old, updated)))
        }
        _ => Err(KubeError::UnsupportedMediaType(
            "application/apply-patch+yaml, application/merge-patch+json, \
             application/strategic-merge-patch+json"
                .into(),
        )),
    }
}
