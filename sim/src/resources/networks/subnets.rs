//! Subnets: checking a requested subnet (its type, zone and range, or the
//! first free /24), adding and deleting subnets, and what a finished or
//! failed `add_subnet` action does.

use axum::http::StatusCode;
use ipnet::Ipv4Net;

use super::ranges::{overlaps, parse_cidr};
use super::{Network, Subnet, SubnetSpec, SubnetType};
use crate::actions::{Completion, NewAction};
use crate::catalog::is_network_zone;
use crate::clock::Timestamp;
use crate::errors::{ApiError, FieldErrors};
use crate::ids::{Id, ResourceRef};
use crate::state::World;

impl World {
    pub(super) fn check_subnet(
        &self,
        network: &Network,
        spec: &SubnetSpec,
        taken: &[Subnet],
    ) -> Result<Subnet, ApiError> {
        let mut errors = FieldErrors::default();
        let kind = SubnetType::parse(&spec.kind);
        match kind {
            None => errors.push("type", "must be one of cloud, server, vswitch"),
            Some(SubnetType::Vswitch) => errors.push(
                "type",
                "vswitch subnets need a Robot vSwitch, which hct-sim does not emulate",
            ),
            Some(_) => {}
        }
        if !is_network_zone(&spec.network_zone) {
            errors.push(
                "network_zone",
                format!("unknown network zone '{}'", spec.network_zone),
            );
        }
        let ip_range = match &spec.ip_range {
            Some(text) => match parse_cidr(text) {
                Ok(range) if !network.ip_range.contains(&range) => {
                    errors.push(
                        "ip_range",
                        format!("must be within the network's range {}", network.ip_range),
                    );
                    None
                }
                Ok(range) if taken.iter().any(|s| overlaps(s.ip_range, range)) => {
                    errors.push("ip_range", "overlaps with an existing subnet");
                    None
                }
                Ok(range) if range.prefix_len() > 30 => {
                    errors.push("ip_range", "subnets must be /30 or larger");
                    None
                }
                Ok(range) => Some(range),
                Err(message) => {
                    errors.push("ip_range", message);
                    None
                }
            },
            // The first free /24, as the API picks it.
            None => match network
                .ip_range
                .subnets(24.max(network.ip_range.prefix_len()))
            {
                Ok(mut candidates) => {
                    let free = candidates.find(|c| !taken.iter().any(|s| overlaps(s.ip_range, *c)));
                    if free.is_none() {
                        errors.push("ip_range", "no free range left in the network");
                    }
                    free
                }
                Err(_) => {
                    errors.push("ip_range", "no free range left in the network");
                    None
                }
            },
        };
        errors.into_result()?;
        match (kind, ip_range) {
            (Some(kind), Some(ip_range)) => Ok(Subnet {
                kind,
                ip_range,
                network_zone: spec.network_zone.clone(),
                ready: true,
            }),
            _ => Err(ApiError::field("subnets", "invalid subnet")),
        }
    }

    pub fn add_subnet(&mut self, id: Id, spec: SubnetSpec, now: Timestamp) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let mut subnet = self.check_subnet(network, &spec, &network.subnets)?;
        subnet.ready = false;
        let ip_range = subnet.ip_range;
        self.network_mut(id)?.subnets.push(subnet);
        let completion = Completion::SubnetReady {
            network: id,
            ip_range,
        };
        Ok(self.start_action(
            NewAction::on("add_subnet", ResourceRef::network(id), completion),
            now,
        ))
    }

    pub fn delete_subnet(
        &mut self,
        id: Id,
        ip_range: &str,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let network = self.network(id)?;
        self.ensure_unlocked(ResourceRef::network(id))?;
        let range = parse_cidr(ip_range).map_err(|m| ApiError::field("ip_range", m))?;
        if !network.subnets.iter().any(|s| s.ip_range == range) {
            return Err(ApiError::field(
                "ip_range",
                format!("no subnet {range} in this network"),
            ));
        }
        let in_use = self.servers.values().any(|s| {
            s.private_net
                .iter()
                .any(|p| p.network == id && range.contains(&p.ip))
        });
        // Hetzner answers this with a `service_error` whose message the
        // provider looks for ("servers are attached") to retry the delete.
        if in_use {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "service_error",
                format!("servers are attached to subnet {range}; detach them first"),
            ));
        }
        self.network_mut(id)?
            .subnets
            .retain(|s| s.ip_range != range);
        Ok(self.start_action(
            NewAction::on(
                "delete_subnet",
                ResourceRef::network(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    /// `add_subnet` finished: the subnet takes servers.
    pub(crate) fn subnet_ready(&mut self, network: Id, ip_range: Ipv4Net) {
        if let Some(n) = self.networks.get_mut(&network)
            && let Some(subnet) = n.subnets.iter_mut().find(|s| s.ip_range == ip_range)
        {
            subnet.ready = true;
        }
    }

    /// A failed `add_subnet` takes the subnet away again.
    pub(crate) fn discard_subnet(&mut self, network: Id, ip_range: Ipv4Net) {
        if let Some(n) = self.networks.get_mut(&network) {
            n.subnets.retain(|s| s.ip_range != ip_range);
        }
    }
}
