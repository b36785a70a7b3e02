//! A load balancer on a private network (one network, at one IP: given,
//! or the lowest free one of the zone's subnets) and its public interface,
//! which may only be off while it is on a network.

use std::net::Ipv4Addr;

use axum::http::StatusCode;
use ipnet::Ipv4Net;

use super::{LoadBalancer, LoadBalancerNet};
use crate::actions::{Completion, NewAction};
use crate::catalog::location;
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceRef};
use crate::state::World;

fn not_attached() -> ApiError {
    ApiError::operation(
        StatusCode::UNPROCESSABLE_ENTITY,
        "load_balancer_not_attached_to_network",
        "the load balancer is not attached to a network",
    )
}

impl World {
    /// True when a load balancer has `ip` in `network`.
    pub fn load_balancer_has_ip(&self, network: Id, ip: Ipv4Addr) -> bool {
        self.load_balancers
            .values()
            .any(|lb| lb.private_ip_in(network) == Some(ip))
    }

    /// The IP `lb` gets in `network`: `ip` checked (in a ready subnet of
    /// the load balancer's zone, not reserved, not taken), or the lowest
    /// free one (within `ip_range` when given).
    pub(super) fn load_balancer_ip(
        &self,
        lb: &LoadBalancer,
        network: Id,
        ip: Option<&str>,
        ip_range: Option<&str>,
    ) -> Result<Ipv4Addr, ApiError> {
        let net = self.network(network)?;
        if !lb.private_net.is_empty() {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "load_balancer_already_attached",
                format!("load balancer {} is already attached to a network", lb.id),
            ));
        }
        let zone = location(&lb.location).map_or("", |l| l.network_zone);
        let Some(text) = ip else {
            let within = ip_range
                .map(|r| {
                    r.trim()
                        .parse::<Ipv4Net>()
                        .map_err(|_| ApiError::field("ip_range", format!("'{r}' is not a CIDR")))
                })
                .transpose()?;
            return self
                .free_ip(net, zone, within)
                .ok_or(ApiError::NoSubnetAvailable);
        };
        let ip: Ipv4Addr = text
            .trim()
            .parse()
            .map_err(|_| ApiError::field("ip", format!("'{text}' is not an IPv4 address")))?;
        if !net.ip_range.contains(&ip) {
            return Err(ApiError::field(
                "ip",
                format!("{ip} is not within the network's range {}", net.ip_range),
            ));
        }
        // In the order a server's attachment checks them.
        if net.is_reserved(ip) {
            return Err(ApiError::IpNotAvailable(ip.to_string()));
        }
        match net.subnet_containing(ip) {
            Some(s) if s.ready && s.network_zone == zone => {}
            _ => return Err(ApiError::NoSubnetAvailable),
        }
        if self.ip_in_use(network, ip) {
            return Err(ApiError::IpNotAvailable(ip.to_string()));
        }
        Ok(ip)
    }

    pub fn attach_load_balancer(
        &mut self,
        id: Id,
        network: Id,
        ip: Option<String>,
        ip_range: Option<String>,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        let ip = self.load_balancer_ip(lb, network, ip.as_deref(), ip_range.as_deref())?;
        self.load_balancer_mut(id)?
            .private_net
            .push(LoadBalancerNet { network, ip });
        let action = NewAction::on(
            "attach_to_network",
            ResourceRef::load_balancer(id),
            Completion::LoadBalancerAttached {
                load_balancer: id,
                network,
            },
        )
        .also(ResourceRef::network(network));
        Ok(self.start_action(action, now))
    }

    /// Leaving the network turns the public interface back on if it was
    /// off (a load balancer needs one interface) and drops private targets'
    /// reach; the targets stay listed.
    pub fn detach_load_balancer(
        &mut self,
        id: Id,
        network: Id,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        self.network(network)?;
        if lb.private_ip_in(network).is_none() {
            return Err(ApiError::field(
                "network",
                format!("load balancer {id} is not attached to network {network}"),
            ));
        }
        if !lb.public_enabled {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "load_balancer_public_interface_disabled",
                "enable the public interface before detaching the last network",
            ));
        }
        self.load_balancer_mut(id)?
            .private_net
            .retain(|p| p.network != network);
        let action = NewAction::on(
            "detach_from_network",
            ResourceRef::load_balancer(id),
            Completion::Nothing,
        )
        .also(ResourceRef::network(network));
        Ok(self.start_action(action, now))
    }

    pub fn set_load_balancer_public_interface(
        &mut self,
        id: Id,
        enabled: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let lb = self.actionable_load_balancer(id)?;
        if !enabled {
            if lb.private_net.is_empty() {
                return Err(not_attached());
            }
            if lb.targets.iter().any(|t| !t.use_private_ip) {
                return Err(ApiError::operation(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "targets_without_use_private_ip",
                    "the load balancer has targets that use the public IP",
                ));
            }
        }
        self.load_balancer_mut(id)?.public_enabled = enabled;
        let command = if enabled {
            "enable_public_interface"
        } else {
            "disable_public_interface"
        };
        Ok(self.start_action(
            NewAction::on(command, ResourceRef::load_balancer(id), Completion::Nothing),
            now,
        ))
    }

    /// A create without a network cannot start with the interface off.
    pub(super) fn check_interfaces(lb: &LoadBalancer) -> Result<(), ApiError> {
        if !lb.public_enabled && lb.private_net.is_empty() {
            return Err(not_attached());
        }
        Ok(())
    }

    /// A failed `attach_to_network` takes the load balancer off the network.
    pub(crate) fn discard_load_balancer_attachment(&mut self, load_balancer: Id, network: Id) {
        if let Some(lb) = self.load_balancers.get_mut(&load_balancer) {
            lb.private_net.retain(|p| p.network != network);
            if lb.private_net.is_empty() {
                lb.public_enabled = true;
            }
        }
    }
}
