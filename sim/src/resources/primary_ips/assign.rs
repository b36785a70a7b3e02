//! Assigning Primary IPs to servers and unassigning them (the server must
//! be off, as on Hetzner), and what a server's creation and deletion do to
//! its Primary IPs.

use axum::http::StatusCode;

use super::{IpType, PrimaryIp};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::resources::servers::{PublicIp, ServerStatus};
use crate::state::World;

fn server_has(kind: IpType, server: Id) -> ApiError {
    let (code, family) = match kind {
        IpType::Ipv4 => ("server_has_ipv4", "an IPv4"),
        IpType::Ipv6 => ("server_has_ipv6", "an IPv6"),
    };
    ApiError::operation(
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        format!("server {server} already has {family} address"),
    )
}

impl World {
    /// A server that can take a Primary IP of `kind` now: off, and without one.
    pub(crate) fn check_primary_ip_assignee(
        &self,
        server: Id,
        kind: IpType,
    ) -> Result<(), ApiError> {
        let found = self.server(server)?;
        if found.status != ServerStatus::Off {
            return Err(ApiError::ServerNotStopped("primary IPs"));
        }
        let has = match kind {
            IpType::Ipv4 => found.public_ipv4.is_some(),
            IpType::Ipv6 => found.public_ipv6.is_some(),
        };
        if has {
            return Err(server_has(kind, server));
        }
        Ok(())
    }

    /// Gives the server the address and starts `assign_primary_ip`.
    pub(crate) fn start_assign_primary_ip(&mut self, id: Id, server: Id, now: Timestamp) -> Id {
        self.put_primary_ip_on(id, server);
        let action = NewAction::on(
            "assign_primary_ip",
            ResourceRef::primary_ip(id),
            Completion::Nothing,
        )
        .also(ResourceRef::server(server));
        self.start_action(action, now)
    }

    fn put_primary_ip_on(&mut self, id: Id, server: Id) {
        let Some(ip) = self.primary_ips.get_mut(&id) else {
            return;
        };
        ip.assignee = Some(server);
        let public = PublicIp {
            id,
            ip: ip.ip.clone(),
        };
        let kind = ip.kind;
        if let Some(s) = self.servers.get_mut(&server) {
            match kind {
                IpType::Ipv4 => s.public_ipv4 = Some(public),
                IpType::Ipv6 => s.public_ipv6 = Some(public),
            }
        }
    }

    /// `assign`: to a powered-off server of its location.
    pub fn assign_primary_ip(
        &mut self,
        id: Id,
        server: Id,
        assignee_type: &str,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        if assignee_type != "server" {
            return Err(ApiError::field("assignee_type", "must be 'server'"));
        }
        let ip = self.primary_ip(id)?;
        self.ensure_unlocked(ResourceRef::primary_ip(id))?;
        if ip.assignee.is_some() {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "primary_ip_already_assigned",
                format!("primary IP {id} is already assigned to a server"),
            ));
        }
        let (kind, location) = (ip.kind, ip.location.clone());
        self.check_primary_ip_assignee(server, kind)?;
        self.check_primary_ip_location(&location, server)?;
        Ok(self.start_assign_primary_ip(id, server, now))
    }

    fn check_primary_ip_location(&self, location: &str, server: Id) -> Result<(), ApiError> {
        let at = &self.server(server)?.location;
        if at != location {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "primary_ip_datacenter_mismatch",
                format!("the primary IP is in {location}, server {server} in {at}"),
            ));
        }
        Ok(())
    }

    /// `unassign`: from its powered-off server.
    pub fn unassign_primary_ip(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        let ip = self.primary_ip(id)?;
        self.ensure_unlocked(ResourceRef::primary_ip(id))?;
        let Some(server) = ip.assignee else {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "primary_ip_not_assigned",
                format!("primary IP {id} is not assigned"),
            ));
        };
        if self.server(server)?.status != ServerStatus::Off {
            return Err(ApiError::ServerNotStopped("primary IPs"));
        }
        self.take_primary_ip_off(id);
        let action = NewAction::on(
            "unassign_primary_ip",
            ResourceRef::primary_ip(id),
            Completion::Nothing,
        )
        .also(ResourceRef::server(server));
        Ok(self.start_action(action, now))
    }

    fn take_primary_ip_off(&mut self, id: Id) {
        let Some(ip) = self.primary_ips.get_mut(&id) else {
            return;
        };
        let Some(server) = ip.assignee.take() else {
            return;
        };
        if let Some(s) = self.servers.get_mut(&server) {
            for public in [&mut s.public_ipv4, &mut s.public_ipv6] {
                if public.as_ref().is_some_and(|p| p.id == id) {
                    *public = None;
                }
            }
        }
    }

    /// The Primary IP `POST /servers` names for a family: unassigned, of
    /// that family, in the server's location.
    pub(crate) fn check_given_primary_ip(
        &self,
        id: Id,
        kind: IpType,
        location: &str,
    ) -> Result<(), ApiError> {
        let ip: &PrimaryIp = self.primary_ip(id)?;
        if ip.kind != kind {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "primary_ip_version_mismatch",
                format!("primary IP {id} is not an {} address", kind.as_str()),
            ));
        }
        if ip.assignee.is_some() {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "primary_ip_assigned",
                format!("primary IP {id} is already assigned to a server"),
            ));
        }
        if ip.location != location {
            return Err(ApiError::operation(
                StatusCode::UNPROCESSABLE_ENTITY,
                "primary_ip_datacenter_mismatch",
                format!("primary IP {id} is in {}, not in {location}", ip.location),
            ));
        }
        Ok(())
    }

    /// A new server's address of `kind`: the given Primary IP, or a new one
    /// that goes with the server (`auto_delete`), named as Hetzner names them.
    pub(crate) fn give_server_primary_ip(
        &mut self,
        server: Id,
        kind: IpType,
        given: Option<Id>,
        now: Timestamp,
    ) -> Result<(), ApiError> {
        let id = match given {
            Some(id) => id,
            None => {
                let ip = self.free_public_address(kind)?;
                let location = self.server(server)?.location.clone();
                let id = self.next_id(Some(ResourceKind::PrimaryIp));
                self.primary_ips.insert(
                    id,
                    PrimaryIp {
                        id,
                        name: format!("primary_ip-{id}"),
                        kind,
                        ip,
                        location,
                        assignee: None,
                        auto_delete: true,
                        labels: Default::default(),
                        created: now,
                        delete_protected: false,
                    },
                );
                id
            }
        };
        self.put_primary_ip_on(id, server);
        Ok(())
    }

    /// A deleted server's Primary IPs: `auto_delete` ones go, the others
    /// stay unassigned.
    pub(crate) fn release_primary_ips(&mut self, server: Id) {
        self.primary_ips
            .retain(|_, ip| !(ip.assignee == Some(server) && ip.auto_delete));
        for ip in self.primary_ips.values_mut() {
            if ip.assignee == Some(server) {
                ip.assignee = None;
            }
        }
    }
}
