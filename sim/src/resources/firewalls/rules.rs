//! Checking firewall rules as the API does: direction and protocol from
//! their lists, ports only (and always) for TCP and UDP (a port, a range or
//! `any`), source IPs for incoming and destination IPs for outgoing rules,
//! CIDRs that name a network or one host, IPv6 in its canonical form
//! (RFC 5952).

use ipnet::IpNet;

use super::{Direction, Protocol, RULE_LIMIT, Rule, RuleSpec};
use crate::errors::{ApiError, FieldErrors};

/// CIDRs one rule may list.
const IPS_PER_RULE: usize = 100;

/// The rules of a request, checked; errors name `rules[i].field`.
pub fn checked_rules(specs: &[RuleSpec]) -> Result<Vec<Rule>, ApiError> {
    let mut errors = FieldErrors::default();
    if specs.len() > RULE_LIMIT {
        errors.push("rules", format!("at most {RULE_LIMIT} rules are allowed"));
    }
    let rules: Vec<Option<Rule>> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| checked_rule(spec, &format!("rules[{i}]."), &mut errors))
        .collect();
    errors.into_result()?;
    Ok(rules.into_iter().flatten().collect())
}

fn checked_rule(spec: &RuleSpec, at: &str, errors: &mut FieldErrors) -> Option<Rule> {
    let direction = match spec.direction.as_str() {
        "in" => Some(Direction::In),
        "out" => Some(Direction::Out),
        _ => {
            errors.push(format!("{at}direction"), "must be one of 'in', 'out'");
            None
        }
    };
    let protocol = match spec.protocol.as_str() {
        "tcp" => Some(Protocol::Tcp),
        "udp" => Some(Protocol::Udp),
        "icmp" => Some(Protocol::Icmp),
        "esp" => Some(Protocol::Esp),
        "gre" => Some(Protocol::Gre),
        _ => {
            errors.push(
                format!("{at}protocol"),
                "must be one of 'tcp', 'udp', 'icmp', 'esp', 'gre'",
            );
            None
        }
    };
    let port = match (protocol, &spec.port) {
        (Some(Protocol::Tcp | Protocol::Udp), None) => {
            errors.push(format!("{at}port"), "is required for tcp and udp");
            None
        }
        (Some(Protocol::Tcp | Protocol::Udp), Some(port)) => {
            if !valid_port(port) {
                errors.push(
                    format!("{at}port"),
                    "must be a port (1-65535), a range such as 1024-5000, or 'any'",
                );
            }
            Some(port.clone())
        }
        (Some(_), Some(_)) => {
            errors.push(format!("{at}port"), "is only allowed for tcp and udp");
            None
        }
        (_, _) => None,
    };
    let (wanted, unwanted) = match direction {
        Some(Direction::In) => (
            ("source_ips", &spec.source_ips),
            ("destination_ips", &spec.destination_ips),
        ),
        _ => (
            ("destination_ips", &spec.destination_ips),
            ("source_ips", &spec.source_ips),
        ),
    };
    if direction.is_some() {
        if wanted.1.is_empty() {
            errors.push(format!("{at}{}", wanted.0), "must not be empty");
        }
        if !unwanted.1.is_empty() {
            errors.push(
                format!("{at}{}", unwanted.0),
                format!("is not allowed for direction '{}'", spec.direction),
            );
        }
    }
    if wanted.1.len() > IPS_PER_RULE {
        errors.push(
            format!("{at}{}", wanted.0),
            format!("at most {IPS_PER_RULE} CIDRs are allowed"),
        );
    }
    let ips: Vec<String> = wanted
        .1
        .iter()
        .filter_map(|cidr| match canonical_cidr(cidr) {
            Some(canonical) => Some(canonical),
            None => {
                errors.push(
                    format!("{at}{}", wanted.0),
                    format!("'{cidr}' is not a network or host in CIDR notation"),
                );
                None
            }
        })
        .collect();
    if spec.description.as_ref().is_some_and(|d| d.len() > 255) {
        errors.push(format!("{at}description"), "must be at most 255 characters");
    }
    let direction = direction?;
    let (source_ips, destination_ips) = match direction {
        Direction::In => (ips, Vec::new()),
        Direction::Out => (Vec::new(), ips),
    };
    Some(Rule {
        direction,
        protocol: protocol?,
        port,
        source_ips,
        destination_ips,
        description: spec.description.clone(),
    })
}

/// `80`, `1024-5000` (within 1-65535, lower bound first), or `any` (every
/// port; kept as given).
fn valid_port(text: &str) -> bool {
    if text == "any" {
        return true;
    }
    let port = |s: &str| {
        s.parse::<u16>()
            .ok()
            .filter(|p| *p >= 1 && s == p.to_string())
    };
    match text.split_once('-') {
        None => port(text).is_some(),
        Some((low, high)) => matches!((port(low), port(high)), (Some(l), Some(h)) if l <= h),
    }
}

/// A CIDR with no host bits set (or one host), IPv6 in canonical form.
pub fn canonical_cidr(text: &str) -> Option<String> {
    let net: IpNet = text.parse().ok()?;
    if net.network() != net.addr() {
        return None;
    }
    Some(format!("{}/{}", net.addr(), net.prefix_len()))
}
