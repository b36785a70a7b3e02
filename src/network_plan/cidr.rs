//! IPv4 range arithmetic, in the terms Terraform users know (`cidrhost`).

use std::net::Ipv4Addr;

use ipnet::{IpNet, Ipv4Net};

/// Why a CIDR string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CidrError {
    /// Not `address/prefix` at all.
    Unparsable,
    /// A valid IPv6 range; Hetzner networks are IPv4 only.
    NotIpv4,
    /// Host bits are set; this is the range the user most likely meant.
    NotCanonical(Ipv4Net),
}

/// Parses an IPv4 CIDR, accepting only its canonical spelling.
///
/// `10.0.128.17/28` is rejected rather than truncated: silently planning
/// `10.0.128.16/28` would assign addresses the user did not write down.
pub(crate) fn parse(text: &str) -> Result<Ipv4Net, CidrError> {
    match text.parse::<IpNet>() {
        Ok(IpNet::V4(net)) => {
            let canonical = net.trunc();
            // Comparing text also catches spellings like `10.0.0.0/08`.
            if canonical.to_string() == text {
                Ok(canonical)
            } else {
                Err(CidrError::NotCanonical(canonical))
            }
        }
        Ok(IpNet::V6(_)) => Err(CidrError::NotIpv4),
        Err(_) => Err(CidrError::Unparsable),
    }
}

/// Terraform's `cidrhost(net, n)`: the `n`th address of the range, counting
/// the network address as 0. `None` past the end of the range.
pub(crate) fn host(net: Ipv4Net, n: u32) -> Option<Ipv4Addr> {
    let offset = u64::from(n);
    if offset >= address_count(net.prefix_len()) {
        return None;
    }
    u32::from(net.network()).checked_add(n).map(Ipv4Addr::from)
}

/// The inverse of [`host`]: which `n` gives `addr`, if `addr` is in `net`.
pub(crate) fn offset_of(net: Ipv4Net, addr: Ipv4Addr) -> Option<u32> {
    net.contains(&addr)
        .then(|| u32::from(addr) - u32::from(net.network()))
}

/// How many addresses a range of this prefix length spans.
pub(crate) fn address_count(prefix_len: u8) -> u64 {
    1u64 << (32 - u32::from(prefix_len.min(32)))
}

pub(crate) fn overlaps(a: Ipv4Net, b: Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// Whether `outer` holds every address of `inner`.
pub(crate) fn covers(outer: Ipv4Net, inner: Ipv4Net) -> bool {
    outer.contains(&inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> Ipv4Net {
        text.parse().expect("test CIDR")
    }

    #[test]
    fn parse_accepts_only_canonical_ipv4() {
        let cases: &[(&str, Result<Ipv4Net, CidrError>)] = &[
            ("10.0.128.16/28", Ok(net("10.0.128.16/28"))),
            (
                "10.0.128.17/28",
                Err(CidrError::NotCanonical(net("10.0.128.16/28"))),
            ),
            (
                "10.0.0.0/08",
                Err(CidrError::NotCanonical(net("10.0.0.0/8"))),
            ),
            ("fd00::/64", Err(CidrError::NotIpv4)),
            ("10.0.0.0", Err(CidrError::Unparsable)),
            ("10.0.0.0/33", Err(CidrError::Unparsable)),
            ("", Err(CidrError::Unparsable)),
        ];
        for (text, expected) in cases {
            assert_eq!(&parse(text), expected, "{text}");
        }
    }

    #[test]
    fn host_matches_terraform_cidrhost() {
        assert_eq!(
            host(net("10.0.128.16/28"), 1),
            Some("10.0.128.17".parse().unwrap())
        );
        assert_eq!(
            host(net("10.0.128.16/28"), 15),
            Some("10.0.128.31".parse().unwrap())
        );
        assert_eq!(host(net("10.0.128.16/28"), 16), None);
        assert_eq!(host(net("255.255.255.255/32"), 1), None);
        assert_eq!(host(net("0.0.0.0/0"), u32::MAX), Some(Ipv4Addr::BROADCAST));
    }

    #[test]
    fn offset_of_inverts_host() {
        let group = net("10.0.128.32/27");
        assert_eq!(offset_of(group, "10.0.128.35".parse().unwrap()), Some(3));
        assert_eq!(offset_of(group, "10.0.128.64".parse().unwrap()), None);
    }

    #[test]
    fn overlap_and_cover() {
        assert!(overlaps(net("10.0.0.0/16"), net("10.0.128.0/24")));
        assert!(overlaps(net("10.0.128.0/24"), net("10.0.0.0/16")));
        assert!(!overlaps(net("10.0.192.0/21"), net("10.0.224.0/19")));
        assert!(covers(net("10.0.0.0/16"), net("10.0.128.0/24")));
        assert!(!covers(net("10.0.128.0/24"), net("10.0.0.0/16")));
        assert_eq!(address_count(0), 1 << 32);
        assert_eq!(address_count(28), 16);
    }
}
