//! Creating a server (checking the spec, picking its IPs, the Talos slot
//! for a Talos image), renaming or relabelling it, and deleting it, with
//! what their actions do when they finish.

use std::net::Ipv4Addr;

use super::attachments::mac_address;
use super::{
    Attachment, CreatedServer, PrivateNet, Server, ServerSpec, ServerStatus, TalosNode,
    USER_DATA_LIMIT, is_hostname, random_password,
};
use crate::actions::{Completion, NewAction};
use crate::catalog;
use crate::clock::Timestamp;
use crate::errors::{ApiError, FieldErrors};
use crate::events::SimEvent;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::labels::{Labels, validate_labels};
use crate::resources::checked_labels;
use crate::resources::images::Image;
use crate::resources::primary_ips::IpType;
use crate::state::World;

/// The Talos slot of a server booting `image`: there is one when the
/// image's disk holds a Talos image (written by a rescue system, or seeded),
/// and it runs the release that disk holds, whatever the labels claim.
fn talos_node(image: &Image) -> Option<TalosNode> {
    let disk = image.content.as_ref()?;
    Some(TalosNode {
        image: image.id,
        version: disk.version.clone(),
        arch: Some(disk.arch.clone()),
        schematic: Some(disk.schematic.clone()),
        boots: 0,
        last_booted: None,
        node: Box::default(),
    })
}

impl World {
    fn check_server_name(&self, name: &str, except: Option<Id>) -> Result<(), ApiError> {
        if !is_hostname(name) {
            return Err(ApiError::field(
                "name",
                "must be a valid hostname (RFC 1123)",
            ));
        }
        if self
            .servers
            .values()
            .any(|s| Some(s.id) != except && s.name == name)
        {
            return Err(ApiError::Uniqueness { field: "name" });
        }
        Ok(())
    }

    pub fn create_server(
        &mut self,
        spec: ServerSpec,
        now: Timestamp,
    ) -> Result<CreatedServer, ApiError> {
        let mut errors = FieldErrors::default();
        if !is_hostname(&spec.name) {
            errors.push("name", "must be a valid hostname (RFC 1123)");
        }
        if let Some(user_data) = &spec.user_data
            && user_data.len() > USER_DATA_LIMIT
        {
            errors.push(
                "user_data",
                format!(
                    "is {} bytes; it must not exceed 32 KiB ({USER_DATA_LIMIT} bytes)",
                    user_data.len()
                ),
            );
        }
        if let Err(message) = validate_labels(&spec.labels) {
            errors.push("labels", message);
        }
        let server_type = catalog::server_type(&spec.server_type);
        if server_type.is_none() {
            errors.push(
                "server_type",
                format!("server type '{}' not found", spec.server_type),
            );
        }
        let location = match &spec.location {
            Some(name) => {
                let found = catalog::location(name);
                if found.is_none() {
                    errors.push("location", format!("location '{name}' not found"));
                }
                found
            }
            // The API picks one; we take the type's first where it is sold.
            None => server_type
                .and_then(|t| t.offers.iter().find(|o| t.orderable_in(o.location)))
                .and_then(|o| catalog::location(o.location)),
        };
        if let (Some(t), Some(l)) = (server_type, location)
            && t.offer(l.name).is_none()
        {
            errors.push(
                "location",
                format!("server type {} is not available in {}", t.name, l.name),
            );
        }
        // Sold there once, or nowhere now: Hetzner refuses the order as such.
        if let Some(t) = server_type
            && match location {
                Some(l) => t.offer(l.name).is_some() && !t.orderable_in(l.name),
                None => spec.location.is_none(),
            }
        {
            return Err(ApiError::InvalidServerType(match location {
                Some(l) if !t.is_retired() => format!(
                    "server type {} is no longer available in {} and can no longer be ordered",
                    t.name, l.name
                ),
                _ => format!(
                    "server type {} is unavailable and can no longer be ordered",
                    t.name
                ),
            }));
        }
        let image = server_type.and_then(|t| {
            self.image_for_server(&spec.image, t.architecture)
                .map_err(|e| errors.push("image", e.to_string()))
                .ok()
        });
        if let (Some(t), Some(i)) = (server_type, image)
            && i.disk_size > f64::from(t.disk)
        {
            errors.push(
                "image",
                format!(
                    "image disk ({} GB) is larger than the disk of {} ({} GB)",
                    i.disk_size, t.name, t.disk
                ),
            );
        }
        let mut ssh_keys = Vec::new();
        for key in &spec.ssh_keys {
            match self.find_ssh_key(key) {
                Some(k) => ssh_keys.push(k.id),
                None => errors.push("ssh_keys", format!("SSH key '{key}' not found")),
            }
        }
        if let Some(group) = spec.placement_group
            && self.placement_group(group).is_err()
        {
            errors.push(
                "placement_group",
                format!("placement group {group} not found"),
            );
        }
        for firewall in &spec.firewalls {
            if self.firewall(*firewall).is_err() {
                errors.push("firewalls", format!("firewall {firewall} not found"));
            }
        }
        for network in &spec.networks {
            if self.network(*network).is_err() {
                errors.push("networks", format!("network {network} not found"));
            }
        }
        if let Some(l) = location {
            for (kind, enabled, given) in [
                (IpType::Ipv4, spec.enable_ipv4, spec.primary_ipv4),
                (IpType::Ipv6, spec.enable_ipv6, spec.primary_ipv6),
            ] {
                match given {
                    Some(id) => self.check_given_primary_ip(id, kind, l.name)?,
                    None if enabled => {
                        self.free_public_address(kind)?;
                    }
                    None => {}
                }
            }
        }
        errors.into_result()?;
        let (Some(server_type), Some(location), Some(image)) = (server_type, location, image)
        else {
            return Err(ApiError::Internal(
                "validated server spec is incomplete".into(),
            ));
        };
        self.check_server_name(&spec.name, None)?;
        let public = spec.enable_ipv4
            || spec.enable_ipv6
            || spec.primary_ipv4.is_some()
            || spec.primary_ipv6.is_some();
        if !spec.firewalls.is_empty() && !public {
            return Err(ApiError::operation(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "private_net_only_server",
                "firewalls need a public interface (enable_ipv4 or enable_ipv6)",
            ));
        }
        if let Some(group) = spec.placement_group {
            self.ensure_room_in_group(group)?;
        }

        let image_id = image.id;
        let talos = talos_node(image);
        let disk = image.content.clone();
        let id = self.next_id(Some(ResourceKind::Server));
        let mut server = Server {
            id,
            name: spec.name,
            status: ServerStatus::Initializing,
            created: now,
            server_type: server_type.name.to_string(),
            location: location.name.to_string(),
            image: Some(image_id),
            primary_disk_size: server_type.disk,
            public_ipv4: None,
            public_ipv6: None,
            private_net: Vec::new(),
            placement_group: spec.placement_group,
            labels: spec.labels,
            rescue_enabled: false,
            user_data: spec.user_data,
            ssh_keys,
            delete_protected: false,
            rebuild_protected: false,
            boot: None,
            talos,
            rescue_keys: Vec::new(),
            rescue: None,
            disk,
            iso: None,
            backup_window: None,
        };
        for network in &spec.networks {
            let (ip, alias_ips) =
                self.plan_attachment(&server, *network, &Attachment::default())?;
            server.private_net.push(PrivateNet {
                network: *network,
                ip,
                alias_ips,
                mac_address: mac_address(id, *network),
            });
        }
        let root_password = server.ssh_keys.is_empty().then(random_password);
        let attached: Vec<(Id, Ipv4Addr)> = server
            .private_net
            .iter()
            .map(|p| (p.network, p.ip))
            .collect();
        self.servers.insert(id, server);
        for (kind, enabled, given) in [
            (IpType::Ipv4, spec.enable_ipv4, spec.primary_ipv4),
            (IpType::Ipv6, spec.enable_ipv6, spec.primary_ipv6),
        ] {
            if enabled || given.is_some() {
                self.give_server_primary_ip(id, kind, given, now)?;
            }
        }
        self.emit(SimEvent::ServerCreated { server: id });
        for (network, ip) in attached {
            self.emit(SimEvent::AttachedToNetwork {
                server: id,
                network,
                ip,
            });
        }

        let target = ResourceRef::server(id);
        let starts = spec.start_after_create;
        let action = self.start_action(
            NewAction::on(
                "create_server",
                target,
                Completion::ServerCreated { server: id, starts },
            ),
            now,
        );
        let mut next_actions = Vec::new();
        for firewall in spec.firewalls {
            next_actions.push(self.start_apply_firewall(firewall, id, now));
        }
        if starts {
            let created_at = self.actions.get(&action).map(|a| a.finishes_at);
            let mut start = NewAction::on(
                "start_server",
                target,
                Completion::ServerBooted { server: id },
            );
            start.after = created_at;
            next_actions.push(self.start_action(start, now));
        }
        Ok(CreatedServer {
            server: id,
            action,
            next_actions,
            root_password,
        })
    }

    pub fn update_server(
        &mut self,
        id: Id,
        name: Option<String>,
        labels: Option<Labels>,
    ) -> Result<(), ApiError> {
        self.server(id)?;
        if let Some(name) = &name {
            self.check_server_name(name, Some(id))?;
        }
        let labels = labels.map(checked_labels).transpose()?;
        let server = self.server_mut(id)?;
        if let Some(name) = name {
            server.name = name;
        }
        if let Some(labels) = labels {
            server.labels = labels;
        }
        Ok(())
    }

    /// `change_protection`: delete and rebuild protection, which Hetzner
    /// takes only together (the same value for both).
    pub fn protect_server(
        &mut self,
        id: Id,
        delete: Option<bool>,
        rebuild: Option<bool>,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable_server(id)?;
        let delete = delete.unwrap_or(server.delete_protected);
        let rebuild = rebuild.unwrap_or(server.rebuild_protected);
        if delete != rebuild {
            return Err(ApiError::field(
                "rebuild",
                "delete and rebuild protection must have the same value",
            ));
        }
        let server = self.server_mut(id)?;
        server.delete_protected = delete;
        server.rebuild_protected = rebuild;
        Ok(self.start_action(
            NewAction::on(
                "change_protection",
                ResourceRef::server(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    pub fn delete_server(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        if self.actionable_server(id)?.delete_protected {
            return Err(ApiError::Protected { kind: "server" });
        }
        self.server_mut(id)?.status = ServerStatus::Deleting;
        let target = ResourceRef::server(id);
        Ok(self.start_action(
            NewAction::on(
                "delete_server",
                target,
                Completion::ServerDeleted { server: id },
            ),
            now,
        ))
    }

    /// `delete_server` finished: the server leaves its networks and
    /// placement group, and the world.
    pub(crate) fn remove_server(&mut self, id: Id) {
        let Some(server) = self.servers.remove(&id) else {
            return;
        };
        // etcd keeps listing the member its node was (`talos::etcd`),
        // while any node of its cluster is left.
        if let Some(member) = server
            .talos
            .as_ref()
            .and_then(|t| t.node.lingering_member())
        {
            self.etcd_gone.push(member);
        }
        let servers = &self.servers;
        self.etcd_gone.retain(|gone| {
            servers.values().any(|s| {
                s.talos
                    .as_ref()
                    .and_then(|t| t.node.config())
                    .is_some_and(|c| c.cluster.id == gone.cluster)
            })
        });
        self.leave_firewalls(id);
        self.release_primary_ips(id);
        for p in server.private_net {
            self.emit(SimEvent::DetachedFromNetwork {
                server: id,
                network: p.network,
                ip: p.ip,
            });
        }
        self.emit(SimEvent::ServerDeleted { server: id });
    }

    /// `create_server` finished: the server leaves `initializing`.
    pub(crate) fn server_created(&mut self, server: Id, starts: bool) {
        if let Some(s) = self.servers.get_mut(&server) {
            s.status = if starts {
                ServerStatus::Starting
            } else {
                ServerStatus::Off
            };
        }
    }
}
