//! A load balancer's services as the API checks them: TCP, HTTP and HTTPS
//! services with their defaults (the listen port by protocol, port 80 on
//! the targets for HTTP and HTTPS, a health check of the service's kind),
//! the `http` options (sticky sessions and their cookie, the idle timeout,
//! redirects and certificates for HTTPS) and TCP or HTTP health checks.
//! A request gives a `ServiceSpec`: every field it names replaces the
//! service's, on `add_service` over the defaults, on `update_service` over
//! the service as it is.

use axum::http::StatusCode;

use super::{
    HealthCheck, HealthCheckHttp, HealthCheckSpec, LoadBalancer, Protocol, Service, ServiceHttp,
    ServiceHttpSpec, ServiceSpec,
};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::Id;
use crate::load_balancer_types::load_balancer_type;
use crate::state::World;

/// The defaults Hetzner fills in for what a request leaves out.
const INTERVAL: u32 = 15;
const TIMEOUT: u32 = 10;
const RETRIES: u32 = 3;
const COOKIE_NAME: &str = "HCLBSTICKY";
const COOKIE_LIFETIME: u32 = 300;
const TIMEOUT_IDLE: u32 = 60;
/// The idle timeout's range in seconds.
const TIMEOUT_IDLE_RANGE: std::ops::RangeInclusive<u32> = 30..=300;

fn port(value: i64, field: &str) -> Result<u16, ApiError> {
    u16::try_from(value)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::field(field, format!("{value} is not a port (1 to 65535)")))
}

fn positive(value: i64, field: &str) -> Result<u32, ApiError> {
    u32::try_from(value)
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| ApiError::field(field, format!("{value} must be a positive number")))
}

fn protocol(text: &str, field: &str) -> Result<Protocol, ApiError> {
    match text {
        "tcp" => Ok(Protocol::Tcp),
        "http" => Ok(Protocol::Http),
        "https" => Ok(Protocol::Https),
        other => Err(ApiError::field(
            field,
            format!("unknown protocol '{other}' (tcp, http or https)"),
        )),
    }
}

fn default_http() -> ServiceHttp {
    ServiceHttp {
        cookie_name: COOKIE_NAME.to_string(),
        cookie_lifetime: COOKIE_LIFETIME,
        certificates: Vec::new(),
        redirect_http: false,
        sticky_sessions: false,
        timeout_idle: TIMEOUT_IDLE,
    }
}

fn default_check_http() -> HealthCheckHttp {
    HealthCheckHttp {
        domain: None,
        path: "/".to_string(),
        response: String::new(),
        status_codes: vec!["2??".to_string(), "3??".to_string()],
        tls: false,
    }
}

/// The health check a service gets when the request has none: of the
/// service's kind (HTTP for HTTP and HTTPS), on the destination port.
fn default_check(protocol: Protocol, destination: u16) -> HealthCheck {
    HealthCheck {
        protocol: match protocol {
            Protocol::Tcp => Protocol::Tcp,
            Protocol::Http | Protocol::Https => Protocol::Http,
        },
        port: destination,
        interval: INTERVAL,
        timeout: TIMEOUT,
        retries: RETRIES,
        http: (protocol != Protocol::Tcp).then(default_check_http),
    }
}

/// `spec` over `check`; a change of protocol brings the new kind's
/// `http` options (or drops them).
fn patched_check(mut check: HealthCheck, spec: &HealthCheckSpec) -> Result<HealthCheck, ApiError> {
    if let Some(text) = &spec.protocol {
        check.protocol = match protocol(text, "health_check.protocol")? {
            Protocol::Https => {
                return Err(ApiError::field(
                    "health_check.protocol",
                    "a health check is 'tcp' or 'http' (with http.tls for HTTPS)",
                ));
            }
            other => other,
        };
    }
    if let Some(p) = spec.port {
        check.port = port(p, "health_check.port")?;
    }
    if let Some(v) = spec.interval {
        check.interval = positive(v, "health_check.interval")?;
    }
    if let Some(v) = spec.timeout {
        check.timeout = positive(v, "health_check.timeout")?;
    }
    if let Some(v) = spec.retries {
        check.retries = positive(v, "health_check.retries")?;
    }
    match check.protocol {
        Protocol::Tcp => {
            if spec.http.is_some() {
                return Err(ApiError::field(
                    "health_check.http",
                    "only a health check with protocol 'http' takes http options",
                ));
            }
            check.http = None;
        }
        _ => {
            let mut http = check.http.take().unwrap_or_else(default_check_http);
            if let Some(given) = &spec.http {
                if let Some(domain) = &given.domain {
                    if domain.contains([' ', '%', '\\']) {
                        return Err(ApiError::field(
                            "health_check.http.domain",
                            "may not contain spaces, percent or backslash symbols",
                        ));
                    }
                    http.domain = Some(domain.clone()).filter(|d| !d.is_empty());
                }
                if let Some(path) = &given.path {
                    if path.contains(' ') {
                        return Err(ApiError::field(
                            "health_check.http.path",
                            "may not contain spaces (percent-encode them)",
                        ));
                    }
                    path.clone_into(&mut http.path);
                }
                if let Some(response) = &given.response {
                    response.clone_into(&mut http.response);
                }
                if let Some(codes) = &given.status_codes {
                    http.status_codes.clone_from(codes);
                }
                if let Some(tls) = given.tls {
                    http.tls = tls;
                }
            }
            check.http = Some(http);
        }
    }
    Ok(check)
}

fn patched_http(
    mut http: ServiceHttp,
    spec: &ServiceHttpSpec,
    protocol: Protocol,
) -> Result<ServiceHttp, ApiError> {
    if let Some(name) = &spec.cookie_name {
        if name.is_empty() {
            return Err(ApiError::field("http.cookie_name", "may not be empty"));
        }
        name.clone_into(&mut http.cookie_name);
    }
    if let Some(v) = spec.cookie_lifetime {
        http.cookie_lifetime = positive(v, "http.cookie_lifetime")?;
    }
    if let Some(v) = spec.timeout_idle {
        let seconds = positive(v, "http.timeout_idle")?;
        if !TIMEOUT_IDLE_RANGE.contains(&seconds) {
            return Err(ApiError::field(
                "http.timeout_idle",
                format!("{seconds} is not within 30 to 300 seconds"),
            ));
        }
        http.timeout_idle = seconds;
    }
    if let Some(v) = spec.sticky_sessions {
        http.sticky_sessions = v;
    }
    if let Some(v) = spec.redirect_http {
        if v && protocol != Protocol::Https {
            return Err(ApiError::field(
                "http.redirect_http",
                "only an 'https' service redirects HTTP",
            ));
        }
        http.redirect_http = v;
    }
    if let Some(certificates) = &spec.certificates {
        if !certificates.is_empty() && protocol != Protocol::Https {
            return Err(ApiError::field(
                "http.certificates",
                "only an 'https' service takes certificates",
            ));
        }
        // hct-sim keeps no certificates: every ID is unknown.
        if let Some(id) = certificates.first() {
            return Err(ApiError::not_found("certificate", *id));
        }
        http.certificates.clone_from(certificates);
    }
    if protocol == Protocol::Https && http.certificates.is_empty() {
        return Err(ApiError::field(
            "http.certificates",
            "an 'https' service needs at least one certificate",
        ));
    }
    Ok(http)
}

/// `spec` over `service` (its protocol, ports, options and health check).
fn patched(mut service: Service, spec: &ServiceSpec) -> Result<Service, ApiError> {
    if let Some(text) = &spec.protocol {
        service.protocol = protocol(text, "protocol")?;
    }
    if let Some(p) = spec.destination_port {
        service.destination_port = port(p, "destination_port")?;
    }
    if let Some(v) = spec.proxyprotocol {
        service.proxyprotocol = v;
    }
    if service.protocol == Protocol::Tcp {
        if spec.http.is_some() {
            return Err(ApiError::field(
                "http",
                "only 'http' and 'https' services take http options",
            ));
        }
        service.http = None;
    } else {
        let http = service.http.take().unwrap_or_else(default_http);
        let given = spec.http.clone().unwrap_or_default();
        service.http = Some(patched_http(http, &given, service.protocol)?);
    }
    if let Some(check) = &spec.health_check {
        service.health_check = patched_check(service.health_check, check)?;
    }
    Ok(service)
}

/// A new service: `spec` over the defaults of its protocol.
pub(super) fn checked_service(spec: &ServiceSpec) -> Result<Service, ApiError> {
    let text = spec
        .protocol
        .as_deref()
        .ok_or_else(|| ApiError::field("protocol", "is required"))?;
    let kind = protocol(text, "protocol")?;
    let listen_port = match (spec.listen_port, kind) {
        (Some(p), _) => port(p, "listen_port")?,
        (None, Protocol::Http) => 80,
        (None, Protocol::Https) => 443,
        (None, Protocol::Tcp) => return Err(ApiError::field("listen_port", "is required")),
    };
    let destination_port = match (spec.destination_port, kind) {
        (Some(p), _) => port(p, "destination_port")?,
        (None, Protocol::Tcp) => {
            return Err(ApiError::field("destination_port", "is required"));
        }
        (None, _) => 80,
    };
    if let Some(check) = &spec.health_check
        && check.protocol.is_none()
    {
        return Err(ApiError::field("health_check.protocol", "is required"));
    }
    if let Some(check) = &spec.health_check
        && check.port.is_none()
    {
        return Err(ApiError::field("health_check.port", "is required"));
    }
    let base = Service {
        protocol: kind,
        listen_port,
        destination_port,
        proxyprotocol: false,
        http: None,
        health_check: default_check(kind, destination_port),
    };
    patched(base, spec)
}

fn port_used(port: u16) -> ApiError {
    ApiError::operation(
        StatusCode::UNPROCESSABLE_ENTITY,
        "source_port_already_used",
        format!("listen port {port} is already used by a service"),
    )
}

pub(super) fn too_many(what: &str, limit: usize) -> ApiError {
    ApiError::ResourceLimit(format!(
        "the load balancer type allows at most {limit} {what}"
    ))
}

fn no_service(listen_port: u16) -> ApiError {
    ApiError::operation(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no service listens on port {listen_port}"),
    )
}

pub(super) fn checked_services(
    specs: &[ServiceSpec],
    limit: usize,
) -> Result<Vec<Service>, ApiError> {
    let mut services: Vec<Service> = Vec::new();
    for spec in specs {
        let service = checked_service(spec)?;
        if services
            .iter()
            .any(|s| s.listen_port == service.listen_port)
        {
            return Err(port_used(service.listen_port));
        }
        services.push(service);
    }
    if services.len() > limit {
        return Err(too_many("services", limit));
    }
    Ok(services)
}

impl World {
    pub fn add_load_balancer_service(
        &mut self,
        id: Id,
        spec: &ServiceSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let service = checked_service(spec)?;
        if lb.service(service.listen_port).is_some() {
            return Err(port_used(service.listen_port));
        }
        let limit = load_balancer_type(&lb.load_balancer_type).map_or(0, |t| t.max_services);
        if lb.services.len() >= limit {
            return Err(too_many("services", limit));
        }
        self.load_balancer_mut(id)?.services.push(service);
        Ok(self.load_balancer_action(id, "add_service", now))
    }

    /// `update_service`: the service on `listen_port`, changed where `spec`
    /// says (its listen port stays: a new one is a new service).
    pub fn update_load_balancer_service(
        &mut self,
        id: Id,
        listen_port: u16,
        spec: &ServiceSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let current = lb
            .service(listen_port)
            .cloned()
            .ok_or_else(|| no_service(listen_port))?;
        let updated = patched(current, spec)?;
        let lb = self.load_balancer_mut(id)?;
        if let Some(service) = lb
            .services
            .iter_mut()
            .find(|s| s.listen_port == listen_port)
        {
            *service = updated;
        }
        Ok(self.load_balancer_action(id, "update_service", now))
    }

    pub fn delete_load_balancer_service(
        &mut self,
        id: Id,
        listen_port: u16,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        self.actionable_load_balancer(id)?;
        let lb = self.load_balancer_mut(id)?;
        let before = lb.services.len();
        lb.services.retain(|s| s.listen_port != listen_port);
        if lb.services.len() == before {
            return Err(no_service(listen_port));
        }
        Ok(self.load_balancer_action(id, "delete_service", now))
    }
}

impl LoadBalancer {
    pub fn service(&self, listen_port: u16) -> Option<&Service> {
        self.services.iter().find(|s| s.listen_port == listen_port)
    }
}
