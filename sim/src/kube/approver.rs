//! An in-cluster kubelet-serving CSR approver, as postfinance's
//! `kubelet-csr-approver` behaves: when a Deployment running its image is
//! stored (and a control plane's kubelet runs to host it), each pending
//! `kubernetes.io/kubelet-serving` CSR is checked against the settings
//! that Deployment gives it (flags, else environment, else its defaults),
//! in the approver's order:
//!
//! - `spec.username` must start with `system:node:` (else denied, or left
//!   alone with `IGNORE_NON_SYSTEM_NODE`);
//! - the request must name a DNS name or an IP, and its subject CN must be
//!   `spec.username`;
//! - at most `ALLOWED_DNS_NAMES` DNS names, each starting with the node's
//!   name (unless `BYPASS_HOSTNAME_CHECK`) and matching `PROVIDER_REGEX`;
//!   without `BYPASS_DNS_RESOLUTION` they must resolve, which names in a
//!   Hetzner private network never do here;
//! - every IP inside `PROVIDER_IP_PREFIXES`;
//! - `spec.expirationSeconds` at most `MAX_EXPIRATION_SEC`.
//!
//! What fails is denied, or left pending with `SKIP_DENY_STEP`. The rule
//! is read from the stored Deployment each time, never assumed.

use std::net::IpAddr;

use ipnet::IpNet;
use regex::Regex;
use serde_json::Value;

use super::csr;
use super::kinds::{self, Resource};
use super::store::ClusterStore;
use super::timestamp;

/// The image repository that makes a Deployment an approver here.
const IMAGE: &str = "postfinance/kubelet-csr-approver";

/// The settings of one approver Deployment.
#[derive(Debug, Clone)]
pub struct Rule {
    regex: Regex,
    prefixes: Vec<IpNet>,
    allowed_dns_names: usize,
    bypass_dns_resolution: bool,
    bypass_hostname_check: bool,
    ignore_non_system_node: bool,
    skip_deny: bool,
    max_expiration: u64,
}

/// What the approver does with one CSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Deny(String),
    Ignore,
}

fn resource(store: &ClusterStore, group: &str, plural: &str) -> Resource {
    kinds::find(&store.resources(), group, "v1", plural)
        .expect("built in")
        .clone()
}

/// A setting of the container: `-name=value` / `-name value` among its
/// args, else its env var `NAME` (`provider-regex` → `PROVIDER_REGEX`).
fn setting(container: &Value, flag: &str) -> Option<String> {
    let args: Vec<&str> = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (n, arg) in args.iter().enumerate() {
        let name = arg.trim_start_matches('-');
        if !arg.starts_with('-') {
            continue;
        }
        if let Some(value) = name.strip_prefix(&format!("{flag}=")) {
            return Some(value.to_string());
        }
        if name == flag {
            // A bool flag alone is true; others take the next argument.
            return Some(
                args.get(n + 1)
                    .filter(|v| !v.starts_with('-'))
                    .map_or("true".to_string(), |v| v.to_string()),
            );
        }
    }
    let env = flag.replace('-', "_").to_uppercase();
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == env.as_str())?["value"]
        .as_str()
        .map(str::to_string)
}

/// Go's strconv.ParseBool.
fn go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl Rule {
    /// The approver's settings from its container; None when they would
    /// not let it start (a bad regex or prefix).
    pub fn of(container: &Value) -> Option<Self> {
        let flag = |name: &str| setting(container, name);
        let boolean = |name: &str| flag(name).map_or(Some(false), |v| go_bool(&v));
        let prefixes = flag("provider-ip-prefixes").unwrap_or_else(|| "0.0.0.0/0,::/0".into());
        Some(Self {
            regex: Regex::new(&flag("provider-regex").unwrap_or_else(|| ".*".into())).ok()?,
            prefixes: prefixes
                .split(',')
                .map(|p| p.trim().parse().ok())
                .collect::<Option<_>>()?,
            allowed_dns_names: flag("allowed-dns-names").map_or(Some(1), |v| v.parse().ok())?,
            bypass_dns_resolution: boolean("bypass-dns-resolution")?,
            bypass_hostname_check: boolean("bypass-hostname-check")?,
            ignore_non_system_node: boolean("ignore-non-system-node")?,
            skip_deny: boolean("skip-deny-step")?,
            max_expiration: flag("max-expiration-sec")
                .map_or(Some(367 * 24 * 3600), |v| v.parse().ok())?,
        })
    }

    /// The approver's checks on a pending kubelet-serving CSR.
    pub fn verdict(&self, request: &Value) -> Verdict {
        let spec = &request["spec"];
        if spec["signerName"] != csr::KUBELET_SERVING || !csr::is_pending(request) {
            return Verdict::Ignore;
        }
        let Some(requested) = csr::requested(request) else {
            return Verdict::Ignore;
        };
        let username = spec["username"].as_str().unwrap_or_default();
        let Some(node) = username.strip_prefix("system:node:") else {
            return if self.ignore_non_system_node {
                Verdict::Ignore
            } else {
                Verdict::Deny("CSR Spec.Username is not prefixed with system:node:".into())
            };
        };
        let deny = |why: &str| Verdict::Deny(why.to_string());
        if requested.dns_names.is_empty() && requested.ips.is_empty() {
            return deny("the request names neither an IP address nor a DNS name");
        }
        if requested.common_name != username {
            return deny("CSR username does not match the request's common name");
        }
        if requested.dns_names.len() > self.allowed_dns_names {
            return deny("more DNS names than allowed");
        }
        for name in &requested.dns_names {
            if !name.starts_with(node) && !self.bypass_hostname_check {
                return deny("a DNS name is not prefixed by the node name");
            }
            if !self.regex.is_match(name) {
                return deny("a DNS name is not allowed by the provider regex");
            }
        }
        if !requested.dns_names.is_empty() && !self.bypass_dns_resolution {
            return deny("the DNS name could not be resolved");
        }
        if !requested.ips.iter().all(|ip| self.allows_ip(*ip)) {
            return deny("an IP address is outside the allowed prefixes");
        }
        if spec["expirationSeconds"]
            .as_u64()
            .is_some_and(|s| s > self.max_expiration)
        {
            return deny("expirationSeconds is longer than allowed");
        }
        Verdict::Approve
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        self.prefixes.iter().any(|p| p.contains(&ip))
    }
}

/// The rules of the approver Deployments stored (one per container that
/// runs the approver's image).
pub fn rules(store: &ClusterStore) -> Vec<Rule> {
    let deployments = resource(store, "apps", "deployments");
    store
        .list(&deployments, None, &Default::default(), &[])
        .iter()
        .filter(|d| d["spec"]["replicas"].as_u64() != Some(0))
        .flat_map(|d| {
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|c| {
            c["image"]
                .as_str()
                .is_some_and(|image| image.contains(IMAGE))
        })
        .filter_map(|c| Rule::of(&c))
        .collect()
}

/// Runs the stored approvers over the pending CSRs, when a control plane
/// can host them (`hosted`).
pub fn run(store: &mut ClusterStore, hosted: bool) {
    let rules = rules(store);
    if rules.is_empty() || !hosted {
        return;
    }
    let csrs = resource(store, "certificates.k8s.io", "certificatesigningrequests");
    let now = timestamp(store.now);
    let pending: Vec<Value> = store
        .list(&csrs, None, &Default::default(), &[])
        .into_iter()
        .filter(|c| csr::is_pending(c))
        .cloned()
        .collect();
    for request in pending {
        let Some(verdict) = rules
            .iter()
            .map(|r| (r.verdict(&request), r.skip_deny))
            .find_map(|(v, skip_deny)| match v {
                Verdict::Ignore => None,
                Verdict::Deny(_) if skip_deny => None,
                other => Some(other),
            })
        else {
            continue;
        };
        let mut updated = request.clone();
        match verdict {
            Verdict::Approve => csr::add_condition(
                &mut updated,
                "Approved",
                "kubelet-serving cert validated",
                "CSR complied with kubelet-csr-approver validation process",
                &now,
            ),
            Verdict::Deny(why) => csr::add_condition(
                &mut updated,
                "Denied",
                "kubelet-serving cert denied",
                &format!(
                    "CSR not complying with kubelet-csr-approver validation process. Reason: {why}"
                ),
                &now,
            ),
            Verdict::Ignore => continue,
        }
        store.replace(&csrs, &request, updated);
    }
}

#[cfg(test)]
#[path = "approver_tests.rs"]
mod tests;
