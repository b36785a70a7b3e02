//! What a server belongs to: networks (its IP and alias IPs in each, picked
//! and checked here) and a placement group, with what the attach action
//! does when it finishes or fails.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::{Attachment, PrivateNet, Server, ServerStatus};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::events::SimEvent;
use crate::ids::{Id, ResourceRef};
use crate::resources::networks::{NETWORK_SERVER_LIMIT, Network};
use crate::state::World;

/// The MAC address of a server's interface in a network, the same every time.
pub fn mac_address(server: Id, network: Id) -> String {
    let n = (server as u64)
        .wrapping_mul(31)
        .wrapping_add(network as u64);
    format!(
        "86:00:00:{:02x}:{:02x}:{:02x}",
        (n >> 16) & 0xff,
        (n >> 8) & 0xff,
        n & 0xff
    )
}

impl World {
    /// Checks that `server` may have `ip` in `net`: inside the range, in a
    /// ready subnet of the server's zone, not reserved, not someone else's.
    fn free_for(
        &self,
        server: Id,
        net: &Network,
        zone: &str,
        ip: Ipv4Addr,
        field: &str,
    ) -> Result<Ipv4Addr, ApiError> {
        if !net.ip_range.contains(&ip) {
            return Err(ApiError::field(
                field,
                format!("{ip} is not within the network's range {}", net.ip_range),
            ));
        }
        if net.is_reserved(ip) {
            return Err(ApiError::IpNotAvailable(ip.to_string()));
        }
        match net.subnet_containing(ip) {
            Some(s) if s.ready && s.network_zone == zone => {}
            _ => return Err(ApiError::NoSubnetAvailable),
        }
        let taken = self.servers.values().any(|s| {
            s.id != server
                && s.private_net
                    .iter()
                    .any(|p| p.network == net.id && (p.ip == ip || p.alias_ips.contains(&ip)))
        });
        if taken || self.load_balancer_has_ip(net.id, ip) {
            return Err(ApiError::IpNotAvailable(ip.to_string()));
        }
        Ok(ip)
    }

    /// Picks the IP for an attachment and checks that it is free.
    pub(super) fn plan_attachment(
        &self,
        server: &Server,
        network: Id,
        request: &Attachment,
    ) -> Result<(Ipv4Addr, Vec<Ipv4Addr>), ApiError> {
        let net = self.network(network)?;
        if server.private_net.iter().any(|p| p.network == network) {
            return Err(ApiError::ServerAlreadyAttached {
                server: server.id,
                network,
            });
        }
        if self.network_members(network).len() >= NETWORK_SERVER_LIMIT {
            return Err(ApiError::ResourceLimit(format!(
                "network {network} already has {NETWORK_SERVER_LIMIT} servers attached"
            )));
        }
        let zone = server.network_zone();
        let usable = |ip: Ipv4Addr, field: &str| self.free_for(server.id, net, zone, ip, field);
        let parse = |text: &str, field: &str| -> Result<Ipv4Addr, ApiError> {
            text.trim()
                .parse()
                .map_err(|_| ApiError::field(field, format!("'{text}' is not an IPv4 address")))
        };
        let ip = match (&request.ip, &request.ip_range) {
            (Some(ip), _) => usable(parse(ip, "ip")?, "ip")?,
            (None, range) => {
                let within = range
                    .as_deref()
                    .map(|r| {
                        r.trim().parse::<Ipv4Net>().map_err(|_| {
                            ApiError::field("ip_range", format!("'{r}' is not a CIDR"))
                        })
                    })
                    .transpose()?;
                self.free_ip(net, zone, within)
                    .ok_or(ApiError::NoSubnetAvailable)?
            }
        };
        let mut alias_ips = Vec::new();
        for text in &request.alias_ips {
            let alias = usable(parse(text, "alias_ips")?, "alias_ips")?;
            if alias == ip || alias_ips.contains(&alias) {
                return Err(ApiError::IpNotAvailable(alias.to_string()));
            }
            alias_ips.push(alias);
        }
        Ok((ip, alias_ips))
    }

    pub fn attach_to_network(
        &mut self,
        id: Id,
        network: Id,
        request: Attachment,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        let (ip, alias_ips) = self.plan_attachment(server, network, &request)?;
        self.server_mut(id)?.private_net.push(PrivateNet {
            network,
            ip,
            alias_ips,
            mac_address: mac_address(id, network),
        });
        let action = NewAction::on(
            "attach_to_network",
            ResourceRef::server(id),
            Completion::Attached {
                server: id,
                network,
                ip,
            },
        )
        .also(ResourceRef::network(network));
        Ok(self.start_action(action, now))
    }

    pub fn detach_from_network(
        &mut self,
        id: Id,
        network: Id,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        self.network(network)?;
        let Some(attachment) = server.private_net.iter().find(|p| p.network == network) else {
            return Err(ApiError::field(
                "network",
                format!("server {id} is not attached to network {network}"),
            ));
        };
        let ip = attachment.ip;
        self.server_mut(id)?
            .private_net
            .retain(|p| p.network != network);
        self.emit(SimEvent::DetachedFromNetwork {
            server: id,
            network,
            ip,
        });
        let action = NewAction::on(
            "detach_from_network",
            ResourceRef::server(id),
            Completion::Nothing,
        )
        .also(ResourceRef::network(network));
        Ok(self.start_action(action, now))
    }

    pub fn change_alias_ips(
        &mut self,
        id: Id,
        network: Id,
        alias_ips: Vec<String>,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        let Some(current) = server
            .private_net
            .iter()
            .find(|p| p.network == network)
            .cloned()
        else {
            return Err(ApiError::field(
                "network",
                format!("server {id} is not attached to network {network}"),
            ));
        };
        let net = self.network(network)?;
        let zone = server.network_zone();
        let mut checked = Vec::new();
        for text in &alias_ips {
            let alias: Ipv4Addr = text.trim().parse().map_err(|_| {
                ApiError::field("alias_ips", format!("'{text}' is not an IPv4 address"))
            })?;
            let alias = self.free_for(id, net, zone, alias, "alias_ips")?;
            if alias == current.ip || checked.contains(&alias) {
                return Err(ApiError::IpNotAvailable(alias.to_string()));
            }
            checked.push(alias);
        }
        let alias_ips = checked;
        if let Some(p) = self
            .server_mut(id)?
            .private_net
            .iter_mut()
            .find(|p| p.network == network)
        {
            p.alias_ips = alias_ips;
        }
        let action = NewAction::on(
            "change_alias_ips",
            ResourceRef::server(id),
            Completion::Nothing,
        )
        .also(ResourceRef::network(network));
        Ok(self.start_action(action, now))
    }

    pub fn add_to_placement_group(
        &mut self,
        id: Id,
        group: Id,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        if server.status != ServerStatus::Off {
            return Err(ApiError::ServerNotStopped("placement group"));
        }
        if server.placement_group.is_some() {
            return Err(ApiError::field(
                "placement_group",
                "server is already in a placement group",
            ));
        }
        self.ensure_room_in_group(group)?;
        // The server moves to a host the group allows and comes up there:
        // Hetzner's action leaves it running.
        let server = self.server_mut(id)?;
        server.placement_group = Some(group);
        server.status = ServerStatus::Starting;
        let action = NewAction::on(
            "add_to_placement_group",
            ResourceRef::server(id),
            Completion::ServerBooted { server: id },
        )
        .also(ResourceRef::placement_group(group));
        Ok(self.start_action(action, now))
    }

    pub fn remove_from_placement_group(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        let Some(group) = server.placement_group else {
            return Err(ApiError::field(
                "placement_group",
                "server is not in a placement group",
            ));
        };
        self.server_mut(id)?.placement_group = None;
        let action = NewAction::on(
            "remove_from_placement_group",
            ResourceRef::server(id),
            Completion::Nothing,
        )
        .also(ResourceRef::placement_group(group));
        Ok(self.start_action(action, now))
    }

    /// `attach_to_network` finished.
    pub(crate) fn network_attached(&mut self, server: Id, network: Id, ip: Ipv4Addr) {
        self.emit(SimEvent::AttachedToNetwork {
            server,
            network,
            ip,
        });
    }

    /// A failed `attach_to_network` takes the server out of the network.
    pub(crate) fn discard_attachment(&mut self, server: Id, network: Id) {
        if let Some(s) = self.servers.get_mut(&server) {
            s.private_net.retain(|p| p.network != network);
        }
    }
}
