//! The routes of a config: those of `machine.network.interfaces` (and
//! their VLANs) and those of the link documents, as Talos v1.12 reads them.

use std::net::IpAddr;

use ipnet::IpNet;
use serde_yaml_ng::Value;

use super::documents::{LegacyRoute, LinkDocument, Machine};
use super::{ConfigError, non_empty, typed};
use crate::talos::network::{PRIVATE_LINK, Route};

fn legacy_route(
    route: &LegacyRoute,
    field: String,
    link: Option<&str>,
) -> Result<Route, ConfigError> {
    let destination = match route.network.trim() {
        "" => None,
        text => Some(text.parse::<IpNet>().map_err(|_| {
            ConfigError::invalid(
                format!("{field}.network"),
                format!("{text:?} is not a CIDR"),
            )
        })?),
    };
    let gateway = match route.gateway.trim() {
        "" => None,
        text => Some(text.parse::<IpAddr>().map_err(|_| {
            ConfigError::invalid(
                format!("{field}.gateway"),
                format!("{text:?} is not an IP address"),
            )
        })?),
    };
    if destination.is_none() && gateway.is_none() {
        return Err(ConfigError::invalid(
            field,
            "either network or gateway should be set",
        ));
    }
    Ok(Route {
        destination,
        gateway,
        link: link.map(str::to_string),
    })
}

/// Routes of the link documents. Talos v1.12 takes a route without a
/// destination as the default route and rejects `0.0.0.0/0` written out.
fn link_routes(kind: &str, value: Value) -> Result<Vec<Route>, ConfigError> {
    let link: LinkDocument = typed(value, kind)?;
    let name = non_empty(link.name.as_ref())
        .ok_or_else(|| ConfigError::invalid(kind, "name is required"))?
        .to_string();
    let at = |i: usize| format!("{kind} {name}: route {i}");
    link.routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let destination = match non_empty(route.destination.as_ref()) {
                None => None,
                Some(text) => match text.parse::<IpNet>() {
                    Ok(net) if !net.addr().is_unspecified() => Some(net),
                    _ => {
                        return Err(ConfigError::invalid(
                            at(i),
                            format!(
                                "destination {text:?} must be a valid IP prefix (leave it out \
                                 for a default route)"
                            ),
                        ));
                    }
                },
            };
            let gateway = match non_empty(route.gateway.as_ref()) {
                None => None,
                Some(text) => match text.parse::<IpAddr>() {
                    Ok(ip) if !ip.is_unspecified() => Some(ip),
                    _ => {
                        return Err(ConfigError::invalid(
                            at(i),
                            format!("gateway {text:?} must be a valid IP address"),
                        ));
                    }
                },
            };
            Ok(Route {
                destination,
                gateway,
                link: Some(name.clone()),
            })
        })
        .collect()
}

pub(super) fn routes(
    machine: &Machine,
    links: Vec<(String, Value)>,
) -> Result<Vec<Route>, ConfigError> {
    let mut routes = Vec::new();
    for (i, interface) in machine
        .network
        .iter()
        .flat_map(|n| &n.interfaces)
        .enumerate()
    {
        let prefix = format!("machine.network.interfaces[{i}]");
        // A device selector can only pick the server's one NIC.
        let link = non_empty(interface.interface.as_ref())
            .or(interface.device_selector.is_some().then_some(PRIVATE_LINK));
        for (j, route) in interface.routes.iter().enumerate() {
            routes.push(legacy_route(route, format!("{prefix}.routes[{j}]"), link)?);
        }
        for (v, vlan) in interface.vlans.iter().enumerate() {
            // A VLAN is a link of its own, named after its parent and id.
            let vlan_link = format!("{}.vlan{v}", link.unwrap_or("?"));
            for (j, route) in vlan.routes.iter().enumerate() {
                routes.push(legacy_route(
                    route,
                    format!("{prefix}.vlans[{v}].routes[{j}]"),
                    Some(&vlan_link),
                )?);
            }
        }
    }
    for (kind, value) in links {
        routes.extend(link_routes(&kind, value)?);
    }
    Ok(routes)
}
