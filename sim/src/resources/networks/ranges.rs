//! Address ranges as requests write them: CIDRs that must be network
//! addresses, the RFC 1918 ranges a network may use, and overlaps.

use ipnet::Ipv4Net;

const PRIVATE_RANGES: [&str; 3] = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

/// A CIDR written as a network address (`10.0.0.0/16`, not `10.0.0.7/16`).
pub fn parse_cidr(text: &str) -> Result<Ipv4Net, String> {
    let net: Ipv4Net = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not an IPv4 CIDR"))?;
    if net != net.trunc() {
        return Err(format!(
            "'{text}' is not a network address; did you mean {}?",
            net.trunc()
        ));
    }
    Ok(net)
}

pub(super) fn parse_network_range(text: &str) -> Result<Ipv4Net, String> {
    let net = parse_cidr(text)?;
    let private = PRIVATE_RANGES
        .iter()
        .filter_map(|r| r.parse::<Ipv4Net>().ok())
        .any(|r| r.contains(&net));
    if !private {
        return Err("must be within an RFC 1918 private range".into());
    }
    if !(8..=30).contains(&net.prefix_len()) {
        return Err("prefix length must be between /8 and /30".into());
    }
    Ok(net)
}

pub(super) fn overlaps(a: Ipv4Net, b: Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}
