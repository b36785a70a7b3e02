//! Routes: checking a requested route (its destination, and a gateway in
//! the network that is not the network's own), adding and deleting routes,
//! and taking away the route of a failed `add_route`.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::ranges::parse_cidr;
use super::{Network, Route, RouteSpec};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::{ApiError, FieldErrors};
use crate::ids::{Id, ResourceRef};
use crate::state::World;

impl World {
    pub(super) fn check_route(
        &self,
        network: &Network,
        spec: &RouteSpec,
    ) -> Result<Route, ApiError> {
        let mut errors = FieldErrors::default();
        let destination = parse_cidr(&spec.destination)
            .map_err(|message| errors.push("destination", message))
            .ok();
        let gateway = match spec.gateway.trim().parse::<Ipv4Addr>() {
            Ok(ip) if !network.ip_range.contains(&ip) => {
                errors.push(
                    "gateway",
                    format!("must be within the network's range {}", network.ip_range),
                );
                None
            }
            Ok(ip) if ip == network.gateway() || ip == network.ip_range.network() => {
                errors.push("gateway", format!("{ip} is reserved by the network"));
                None
            }
            Ok(ip) => Some(ip),
            Err(_) => {
                errors.push(
                    "gateway",
                    format!("'{}' is not an IPv4 address", spec.gateway),
                );
                None
            }
        };
        errors.into_result()?;
        match (destination, gateway) {
            (Some(destination), Some(gateway)) => Ok(Route {
                destination,
                gateway,
            }),
            _ => Err(ApiError::field("routes", "invalid route")),
        }
    }

    pub fn add_route(&mut self, id: Id, spec: RouteSpec, now: Timestamp) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let route = self.check_route(network, &spec)?;
        if network
            .routes
            .iter()
            .any(|r| r.destination == route.destination)
        {
            return Err(ApiError::Uniqueness {
                field: "destination",
            });
        }
        let destination = route.destination;
        self.network_mut(id)?.routes.push(route);
        let completion = Completion::RouteAdded {
            network: id,
            destination,
        };
        Ok(self.start_action(
            NewAction::on("add_route", ResourceRef::network(id), completion),
            now,
        ))
    }

    pub fn delete_route(
        &mut self,
        id: Id,
        spec: RouteSpec,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let route = self.check_route(network, &spec)?;
        if !network.routes.contains(&route) {
            return Err(ApiError::field(
                "destination",
                format!("no route to {} via {}", route.destination, route.gateway),
            ));
        }
        self.network_mut(id)?.routes.retain(|r| *r != route);
        Ok(self.start_action(
            NewAction::on(
                "delete_route",
                ResourceRef::network(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    /// A failed `add_route` takes the route away again.
    pub(crate) fn discard_route(&mut self, network: Id, destination: Ipv4Net) {
        if let Some(n) = self.networks.get_mut(&network) {
            n.routes.retain(|r| r.destination != destination);
        }
    }
}
