//! Kubelet serving certificates: with `rotate-server-certificates` each
//! kubelet asks for its serving certificate with a CertificateSigningRequest
//! of signer `kubernetes.io/kubelet-serving`, as `system:node:<name>` in
//! group `system:nodes`, for its name and its node IP. It stays pending
//! until someone approves it (`PUT …/approval`, as `kubectl certificate
//! approve` does); [`safe_to_approve`] is the rule an approver that only
//! signs what a node may claim applies.

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};
use serde_json::{Value, json};
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

/// The signer of kubelet serving certificates.
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";

/// A PEM `CERTIFICATE REQUEST` as kubelet makes it: subject
/// `O=system:nodes, CN=system:node:<node>`, SANs the DNS names and IPs.
pub fn request_pem(node: &str, dns_names: &[&str], ips: &[IpAddr]) -> String {
    request_with_key(node, dns_names, ips).0
}

/// The same request and its private key (PEM), for a kubelet that will use
/// the certificate (its TLS bootstrap's client certificate).
pub fn request_with_key(node: &str, dns_names: &[&str], ips: &[IpAddr]) -> (String, String) {
    let key = KeyPair::generate().expect("a P-256 key");
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::OrganizationName, "system:nodes");
    subject.push(DnType::CommonName, format!("system:node:{node}"));
    params.distinguished_name = subject;
    params.subject_alt_names = dns_names
        .iter()
        .filter_map(|n| Some(SanType::DnsName((*n).try_into().ok()?)))
        .chain(ips.iter().map(|ip| SanType::IpAddress(*ip)))
        .collect();
    let request = params
        .serialize_request(&key)
        .and_then(|r| r.pem())
        .expect("a certificate request");
    (request, key.serialize_pem())
}

/// What a certificate request asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requested {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub ips: Vec<IpAddr>,
    /// SANs of other kinds (email, URI).
    pub others: usize,
}

/// Parses `spec.request` (base64 of a PEM certificate request).
pub fn requested(csr: &Value) -> Option<Requested> {
    let pem_text = STANDARD.decode(csr["spec"]["request"].as_str()?).ok()?;
    let block = pem::parse(pem_text).ok()?;
    if block.tag() != "CERTIFICATE REQUEST" {
        return None;
    }
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(block.contents())
            .ok()?;
    let subject = &request.certification_request_info.subject;
    let mut out = Requested {
        common_name: subject
            .iter_common_name()
            .filter_map(|c| c.as_str().ok())
            .next()
            .unwrap_or_default()
            .to_string(),
        organizations: subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect(),
        ..Requested::default()
    };
    for extension in request.requested_extensions().into_iter().flatten() {
        if let ParsedExtension::SubjectAlternativeName(san) = extension {
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(n) => out.dns_names.push(n.to_string()),
                    GeneralName::IPAddress(b) if b.len() == 4 => {
                        out.ips.push(IpAddr::from(<[u8; 4]>::try_from(*b).ok()?))
                    }
                    GeneralName::IPAddress(b) if b.len() == 16 => {
                        out.ips.push(IpAddr::from(<[u8; 16]>::try_from(*b).ok()?))
                    }
                    _ => out.others += 1,
                }
            }
        }
    }
    Some(out)
}

/// The CSR a node's kubelet files, named `csr-xxxxx` as kube-apiserver's
/// generateName makes them.
pub fn kubelet_csr(node: &str, ip: IpAddr) -> Value {
    let pem_text = request_pem(node, &[node], &[ip]);
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": format!("csr-{}", suffix())},
        "spec": {
            "request": STANDARD.encode(pem_text),
            "signerName": KUBELET_SERVING,
            "usages": ["digital signature", "server auth"],
            "username": format!("system:node:{node}"),
            "groups": ["system:nodes", "system:authenticated"],
        },
        "status": {},
    })
}

fn suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// The node a CSR of kubelet's was filed for (`spec.username`).
pub fn requester(csr: &Value) -> Option<&str> {
    csr["spec"]["username"]
        .as_str()?
        .strip_prefix("system:node:")
}

fn has_condition(csr: &Value, kind: &str) -> bool {
    csr["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

pub fn is_approved(csr: &Value) -> bool {
    has_condition(csr, "Approved")
}

/// Neither approved nor denied.
pub fn is_pending(csr: &Value) -> bool {
    !has_condition(csr, "Approved")
        && !has_condition(csr, "Denied")
        && !has_condition(csr, "Failed")
}

/// Whether approving is safe: signer kubelet-serving, filed by the node
/// itself (`system:node:<name>`, group `system:nodes`), a request whose
/// subject is that node and whose SANs are only its name and `node_ip`
/// (the node's InternalIP; None when no such node is registered).
pub fn safe_to_approve(csr: &Value, node_ip: Option<IpAddr>) -> bool {
    let spec = &csr["spec"];
    let Some(node) = requester(csr) else {
        return false;
    };
    let in_nodes = spec["groups"]
        .as_array()
        .is_some_and(|g| g.iter().any(|g| g == "system:nodes"));
    let (Some(ip), Some(request)) = (node_ip, requested(csr)) else {
        return false;
    };
    spec["signerName"] == KUBELET_SERVING
        && in_nodes
        && request.common_name == format!("system:node:{node}")
        && request.organizations == ["system:nodes"]
        && request.others == 0
        && !(request.dns_names.is_empty() && request.ips.is_empty())
        && request.dns_names.iter().all(|n| n == node)
        && request.ips.iter().all(|i| *i == ip)
}

/// Adds the condition an approval (or denial) writes.
pub fn add_condition(csr: &mut Value, kind: &str, reason: &str, message: &str, now: &str) {
    if !csr["status"].is_object() {
        csr["status"] = json!({});
    }
    let condition = json!({
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    });
    match csr["status"]["conditions"].as_array_mut() {
        Some(conditions) => conditions.push(condition),
        None => csr["status"]["conditions"] = json!([condition]),
    }
}
