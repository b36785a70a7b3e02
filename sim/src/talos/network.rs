//! The node's view of its network. Hetzner gives a private-only server its
//! address and a route to the network, but no default route: traffic out
//! (image pulls) flows only if the machine config routes 0.0.0.0/0 via the
//! network's gateway, the first host of its range, and the network routes
//! 0.0.0.0/0 on to a NAT gateway: a running server attached to it at the
//! route's gateway address (checked in `services::egress`).

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

/// A route from the machine config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// None for a default route (link documents leave the destination out).
    pub destination: Option<IpNet>,
    /// None for a link-scope route.
    pub gateway: Option<IpAddr>,
    /// The link it is configured on; None when the config picks the link
    /// by a device selector.
    pub link: Option<String>,
}

/// The link a Hetzner cloud server's private network arrives on: a
/// private-only server has one NIC, eth0.
pub const PRIVATE_LINK: &str = "eth0";

impl Route {
    pub fn is_default(&self) -> bool {
        self.destination.is_none_or(|d| d.prefix_len() == 0)
    }
}

/// Why a node cannot reach the internet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoEgress {
    #[error("the node is not attached to a private network")]
    Detached,
    #[error(
        "no default route: the configuration has no route 0.0.0.0/0 via the network gateway \
         {gateway}, so pulling images fails"
    )]
    NoDefaultRoute { gateway: Ipv4Addr },
    #[error(
        "the default route is on link {link}, but the private network is on {PRIVATE_LINK} (the \
         server's only NIC), so pulling images fails"
    )]
    WrongLink { link: String },
    #[error(
        "the default route goes via {via}, but only the network gateway {gateway} forwards \
         traffic out of the private network, so pulling images fails"
    )]
    WrongGateway { via: IpAddr, gateway: Ipv4Addr },
    #[error(
        "network {network} has no route 0.0.0.0/0 to a NAT gateway, so traffic leaving via \
         {gateway} goes nowhere and pulling images fails (no egress)"
    )]
    NoNetworkRoute { network: String, gateway: Ipv4Addr },
    #[error(
        "network {network} routes 0.0.0.0/0 to {nat}, but no running server of the network \
         is at that address, so pulling images fails (no egress)"
    )]
    NatGatewayDown { network: String, nat: Ipv4Addr },
}

/// The gateway the node's traffic leaves through, given the gateways of
/// the networks it is attached to.
pub fn egress(routes: &[Route], gateways: &[Ipv4Addr]) -> Result<Ipv4Addr, NoEgress> {
    let first = *gateways.first().ok_or(NoEgress::Detached)?;
    let all_defaults = routes
        .iter()
        .filter(|r| r.is_default() && r.gateway.is_some());
    let mut defaults = all_defaults
        .clone()
        .filter(|r| r.link.as_deref() == Some(PRIVATE_LINK));
    let Some(default) = defaults.clone().next() else {
        return Err(match all_defaults.clone().next() {
            Some(elsewhere) => NoEgress::WrongLink {
                link: elsewhere
                    .link
                    .clone()
                    .unwrap_or_else(|| "picked by a device selector".into()),
            },
            None => NoEgress::NoDefaultRoute { gateway: first },
        });
    };
    defaults
        .find_map(|r| match r.gateway {
            Some(IpAddr::V4(via)) if gateways.contains(&via) => Some(via),
            _ => None,
        })
        .ok_or(NoEgress::WrongGateway {
            via: default.gateway.unwrap_or(IpAddr::V4(first)),
            gateway: first,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(destination: Option<&str>, gateway: Option<&str>) -> Route {
        Route {
            destination: destination.map(|d| d.parse().unwrap()),
            gateway: gateway.map(|g| g.parse().unwrap()),
            link: Some(PRIVATE_LINK.into()),
        }
    }

    #[test]
    fn only_routes_on_the_private_link_count() {
        let mut elsewhere = route(None, Some("10.0.0.1"));
        elsewhere.link = Some("eth7".into());
        let err = egress(&[elsewhere], &[GATEWAY]).unwrap_err();
        assert_eq!(
            err,
            NoEgress::WrongLink {
                link: "eth7".into()
            }
        );
        assert!(err.to_string().contains("on link eth7"), "{err}");
    }

    const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    #[test]
    fn default_routes_via_the_gateway_give_egress() {
        for default in [
            route(Some("0.0.0.0/0"), Some("10.0.0.1")),
            route(None, Some("10.0.0.1")),
        ] {
            let routes = [route(Some("10.0.0.0/16"), Some("10.0.0.1")), default];
            assert_eq!(egress(&routes, &[GATEWAY]), Ok(GATEWAY));
        }
    }

    #[test]
    fn explains_missing_egress() {
        let network_only = [route(Some("10.0.0.0/16"), Some("10.0.0.1"))];
        let err = egress(&network_only, &[GATEWAY]).unwrap_err();
        assert_eq!(err, NoEgress::NoDefaultRoute { gateway: GATEWAY });
        assert!(err.to_string().contains("no default route"));

        let via_nat_box = [route(Some("0.0.0.0/0"), Some("10.0.128.2"))];
        assert!(matches!(
            egress(&via_nat_box, &[GATEWAY]),
            Err(NoEgress::WrongGateway { .. })
        ));
        let link_scope = [route(None, None)];
        assert!(matches!(
            egress(&link_scope, &[GATEWAY]),
            Err(NoEgress::NoDefaultRoute { .. })
        ));
        let good = [route(None, Some("10.0.0.1"))];
        assert_eq!(egress(&good, &[]), Err(NoEgress::Detached));
    }
}
