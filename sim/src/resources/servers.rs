//! Servers and their actions: power, rescue, snapshots, type changes,
//! networks and placement groups.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::actions::{Completion, NewAction};
use crate::catalog::{self, ServerType};
use crate::clock::Timestamp;
use crate::errors::{ApiError, FieldErrors};
use crate::events::SimEvent;
use crate::labels::{Labels, validate_labels};
use crate::pagination::{SortKey, Sortable};
use crate::resources::checked_labels;
use crate::resources::images::{CreatedFrom, Image, ImageStatus, ImageType};
use crate::resources::networks::{NETWORK_SERVER_LIMIT, Network};
use crate::state::{Id, ResourceKind, ResourceRef, World};

/// The API's limit on `user_data`.
pub const USER_DATA_LIMIT: usize = 32 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    Initializing,
    Starting,
    Running,
    Stopping,
    Off,
    Deleting,
    Migrating,
    Rebuilding,
    Unknown,
}

impl ServerStatus {
    pub const ALL: [ServerStatus; 9] = [
        Self::Initializing,
        Self::Starting,
        Self::Running,
        Self::Stopping,
        Self::Off,
        Self::Deleting,
        Self::Migrating,
        Self::Rebuilding,
        Self::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initializing => "initializing",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Stopping => "stopping",
            Self::Off => "off",
            Self::Deleting => "deleting",
            Self::Migrating => "migrating",
            Self::Rebuilding => "rebuilding",
            Self::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// What a server booted into last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BootTarget {
    Disk,
    Rescue,
}

/// The slot for an emulated Talos node: filled when a server is created
/// from an image labelled `os=talos`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TalosNode {
    pub image: Id,
    /// The Talos release it runs, e.g. `v1.12.6`: the image's `version`
    /// label until an install or upgrade changes it.
    pub version: String,
    pub arch: Option<String>,
    pub schematic: Option<String>,
    /// Boots from disk so far.
    pub boots: u32,
    pub last_booted: Option<Timestamp>,
    /// The emulated Talos on it (see `crate::talos`).
    #[serde(flatten)]
    pub node: Box<crate::talos::NodeState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateNet {
    pub network: Id,
    pub ip: Ipv4Addr,
    pub alias_ips: Vec<Ipv4Addr>,
    pub mac_address: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicIp {
    pub id: Id,
    pub ip: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Server {
    pub id: Id,
    pub name: String,
    pub status: ServerStatus,
    pub created: Timestamp,
    pub server_type: String,
    pub location: String,
    pub image: Option<Id>,
    pub primary_disk_size: u32,
    pub public_ipv4: Option<PublicIp>,
    pub public_ipv6: Option<PublicIp>,
    pub private_net: Vec<PrivateNet>,
    pub placement_group: Option<Id>,
    pub labels: Labels,
    pub rescue_enabled: bool,
    pub user_data: Option<String>,
    pub ssh_keys: Vec<Id>,
    pub delete_protected: bool,
    pub rebuild_protected: bool,
    pub boot: Option<BootTarget>,
    pub talos: Option<TalosNode>,
    /// OpenSSH public keys the next boot into rescue lets in (given to
    /// `enable_rescue`).
    #[serde(default)]
    pub rescue_keys: Vec<String>,
    /// The rescue system, while the server runs it.
    #[serde(default)]
    pub rescue: Option<crate::rescue::RescueSession>,
    /// The Talos image a rescue system wrote to the disk.
    #[serde(default)]
    pub disk: Option<crate::rescue::DiskImage>,
}

/// A server as requested by `POST /servers`; references are IDs or names.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub name: String,
    pub server_type: String,
    pub image: String,
    pub location: Option<String>,
    pub ssh_keys: Vec<String>,
    pub networks: Vec<Id>,
    pub placement_group: Option<Id>,
    pub labels: Labels,
    pub user_data: Option<String>,
    pub start_after_create: bool,
    pub enable_ipv4: bool,
    pub enable_ipv6: bool,
}

impl ServerSpec {
    pub fn new(name: &str, server_type: &str, image: &str) -> Self {
        Self {
            name: name.into(),
            server_type: server_type.into(),
            image: image.into(),
            location: None,
            ssh_keys: Vec::new(),
            networks: Vec::new(),
            placement_group: None,
            labels: Labels::new(),
            user_data: None,
            start_after_create: true,
            enable_ipv4: true,
            enable_ipv6: true,
        }
    }
}

#[derive(Debug, Clone)]
pub struct CreatedServer {
    pub server: Id,
    pub action: Id,
    pub next_actions: Vec<Id>,
    pub root_password: Option<String>,
}

/// How `attach_to_network` should pick the server's IP.
#[derive(Debug, Clone, Default)]
pub struct Attachment {
    pub ip: Option<String>,
    pub alias_ips: Vec<String>,
    pub ip_range: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    On,
    Off,
    Shutdown,
    Reset,
    Reboot,
}

impl Server {
    pub fn server_type(&self) -> Option<&'static ServerType> {
        catalog::server_type(&self.server_type)
    }

    pub fn network_zone(&self) -> &'static str {
        catalog::location(&self.location).map_or("eu-central", |l| l.network_zone)
    }

    pub fn to_api(&self, world: &World, _now: Timestamp) -> Value {
        let server_type = self.server_type();
        let ipv4 = self.public_ipv4.as_ref().map(|p| {
            let reversed: Vec<&str> = p.ip.split('.').rev().collect();
            json!({
                "id": p.id,
                "ip": p.ip,
                "blocked": false,
                "dns_ptr": format!("static.{}.clients.your-server.de", reversed.join(".")),
            })
        });
        let ipv6 = self
            .public_ipv6
            .as_ref()
            .map(|p| json!({"id": p.id, "ip": p.ip, "blocked": false, "dns_ptr": []}));
        let private_net: Vec<Value> = self
            .private_net
            .iter()
            .map(|p| {
                json!({
                    "network": p.network,
                    "ip": p.ip.to_string(),
                    "alias_ips": p.alias_ips.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "mac_address": p.mac_address,
                })
            })
            .collect();
        json!({
            "id": self.id,
            "name": self.name,
            "status": self.status.as_str(),
            "created": self.created.rfc3339(),
            "public_net": {
                "ipv4": ipv4,
                "ipv6": ipv6,
                "floating_ips": [],
                "firewalls": [],
            },
            "private_net": private_net,
            "server_type": server_type.map(ServerType::to_api),
            "location": catalog::location(&self.location).map(catalog::Location::to_api),
            "image": self.image.and_then(|id| world.images.get(&id)).map(|i| i.to_api(world)),
            "iso": null,
            "rescue_enabled": self.rescue_enabled,
            "locked": world.is_locked(ResourceRef::server(self.id)),
            "backup_window": null,
            "outgoing_traffic": 0,
            "ingoing_traffic": 0,
            "included_traffic": server_type.and_then(|t| t.included_traffic(&self.location)),
            "protection": {"delete": self.delete_protected, "rebuild": self.rebuild_protected},
            "labels": self.labels,
            "volumes": [],
            "load_balancers": [],
            "primary_disk_size": self.primary_disk_size,
            "placement_group": self
                .placement_group
                .and_then(|id| world.placement_groups.get(&id))
                .map(|g| g.to_api(world)),
        })
    }
}

impl Sortable for Server {
    fn id(&self) -> i64 {
        self.id
    }

    fn sort_key(&self, field: &str) -> SortKey {
        match field {
            "name" => SortKey::Text(self.name.clone()),
            "created" => SortKey::Int(self.created.millis() as i64),
            _ => SortKey::Int(self.id),
        }
    }
}

/// RFC 1123 host name, as the API requires of server names.
pub fn is_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn random_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..20)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

fn mac_address(server: Id, network: Id) -> String {
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

fn talos_node(image: &Image) -> Option<TalosNode> {
    if image.labels.get("os").map(String::as_str) != Some("talos") {
        return None;
    }
    Some(TalosNode {
        image: image.id,
        version: image
            .labels
            .get("version")
            .cloned()
            .or_else(|| image.os_version.clone())
            .unwrap_or_default(),
        arch: image.labels.get("arch").cloned(),
        schematic: image.labels.get("schematic").cloned(),
        boots: 0,
        last_booted: None,
        node: Box::default(),
    })
}

impl World {
    /// A server that may be acted on now.
    fn actionable(&self, id: Id) -> Result<&Server, ApiError> {
        let server = self.server(id)?;
        self.ensure_unlocked(ResourceRef::server(id))?;
        Ok(server)
    }

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
        if taken {
            return Err(ApiError::IpNotAvailable(ip.to_string()));
        }
        Ok(ip)
    }

    /// Picks the IP for an attachment and checks that it is free.
    fn plan_attachment(
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
            // The API picks one; we take the type's first.
            None => server_type
                .and_then(|t| t.offers.first())
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
        for network in &spec.networks {
            if self.network(*network).is_err() {
                errors.push("networks", format!("network {network} not found"));
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
        if let Some(group) = spec.placement_group {
            self.ensure_room_in_group(group)?;
        }

        let image_id = image.id;
        let talos = talos_node(image);
        let id = self.next_id(Some(ResourceKind::Server));
        let public_ip = |enabled: bool, ip: String| enabled.then_some(PublicIp { id, ip });
        let mut server = Server {
            id,
            name: spec.name,
            status: ServerStatus::Initializing,
            created: now,
            server_type: server_type.name.to_string(),
            location: location.name.to_string(),
            image: Some(image_id),
            primary_disk_size: server_type.disk,
            public_ipv4: public_ip(spec.enable_ipv4, format!("203.0.113.{}", id % 254 + 1)),
            public_ipv6: public_ip(spec.enable_ipv6, format!("2001:db8:{:x}::/64", id & 0xffff)),
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
            disk: None,
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

    pub fn delete_server(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        if self.actionable(id)?.delete_protected {
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

    /// Takes a deleted server out of its networks and placement group.
    pub(crate) fn remove_server(&mut self, id: Id) {
        let Some(server) = self.servers.remove(&id) else {
            return;
        };
        for p in server.private_net {
            self.emit(SimEvent::DetachedFromNetwork {
                server: id,
                network: p.network,
                ip: p.ip,
            });
        }
        self.emit(SimEvent::ServerDeleted { server: id });
    }

    pub fn power(&mut self, id: Id, power: Power, now: Timestamp) -> Result<Id, ApiError> {
        let status = self.actionable(id)?.status;
        let target = ResourceRef::server(id);
        let (command, completion, during) = match (power, status) {
            (Power::On, ServerStatus::Running) => ("start_server", Completion::Nothing, None),
            (Power::On, _) => (
                "start_server",
                Completion::ServerBooted { server: id },
                Some(ServerStatus::Starting),
            ),
            (Power::Off | Power::Shutdown, ServerStatus::Off) => {
                let command = if power == Power::Off {
                    "stop_server"
                } else {
                    "shutdown_server"
                };
                (command, Completion::Nothing, None)
            }
            (Power::Off, was) => (
                "stop_server",
                Completion::ServerStopped { server: id, was },
                Some(ServerStatus::Stopping),
            ),
            (Power::Shutdown, was) => (
                "shutdown_server",
                Completion::ServerStopped { server: id, was },
                Some(ServerStatus::Stopping),
            ),
            // A reset of a server that is off powers it on.
            (Power::Reset, ServerStatus::Off) => (
                "reset_server",
                Completion::ServerBooted { server: id },
                Some(ServerStatus::Starting),
            ),
            (Power::Reset, _) => (
                "reset_server",
                Completion::ServerBooted { server: id },
                None,
            ),
            // ACPI reboot does nothing to a server that is off.
            (Power::Reboot, ServerStatus::Off) => ("reboot_server", Completion::Nothing, None),
            (Power::Reboot, _) => (
                "reboot_server",
                Completion::ServerBooted { server: id },
                None,
            ),
        };
        if let Some(status) = during {
            self.server_mut(id)?.status = status;
        }
        Ok(self.start_action(NewAction::on(command, target, completion), now))
    }

    /// Returns the action and the rescue system's root password.
    pub fn enable_rescue(
        &mut self,
        id: Id,
        kind: Option<&str>,
        ssh_keys: &[String],
        now: Timestamp,
    ) -> Result<(Id, String), ApiError> {
        self.actionable(id)?;
        if let Some(kind) = kind
            && kind != "linux64"
        {
            return Err(ApiError::field("type", "must be 'linux64'"));
        }
        let mut public_keys = Vec::new();
        for key in ssh_keys {
            match self.find_ssh_key(key) {
                Some(found) => public_keys.push(found.public_key.clone()),
                None => {
                    return Err(ApiError::field(
                        "ssh_keys",
                        format!("SSH key '{key}' not found"),
                    ));
                }
            }
        }
        let server = self.server_mut(id)?;
        server.rescue_enabled = true;
        server.rescue_keys = public_keys;
        let action = self.start_action(
            NewAction::on(
                "enable_rescue",
                ResourceRef::server(id),
                Completion::Nothing,
            ),
            now,
        );
        Ok((action, random_password()))
    }

    pub fn disable_rescue(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        self.actionable(id)?;
        let server = self.server_mut(id)?;
        server.rescue_enabled = false;
        server.rescue_keys.clear();
        Ok(self.start_action(
            NewAction::on(
                "disable_rescue",
                ResourceRef::server(id),
                Completion::Nothing,
            ),
            now,
        ))
    }

    /// Snapshots the server's disk; Hetzner allows this while it runs.
    pub fn create_image(
        &mut self,
        id: Id,
        kind: Option<&str>,
        description: Option<String>,
        labels: Labels,
        now: Timestamp,
    ) -> Result<(Id, Id), ApiError> {
        let server = self.actionable(id)?;
        match kind {
            None | Some("snapshot") => {}
            Some("backup") => {
                return Err(ApiError::field(
                    "type",
                    "backups are not enabled for this server",
                ));
            }
            Some(_) => return Err(ApiError::field("type", "must be 'snapshot' or 'backup'")),
        }
        let labels = checked_labels(labels)?;
        let source = server.image.and_then(|i| self.images.get(&i));
        let architecture = server
            .server_type()
            .map_or(catalog::Architecture::X86, |t| t.architecture);
        let image = Image {
            id: 0,
            kind: ImageType::Snapshot,
            status: ImageStatus::Creating,
            name: None,
            description: description
                .unwrap_or_else(|| format!("{}-{}", server.name, now.rfc3339())),
            image_size: None,
            disk_size: f64::from(server.primary_disk_size),
            created: now,
            created_from: Some(CreatedFrom {
                id,
                name: server.name.clone(),
            }),
            os_flavor: source.map_or_else(|| "unknown".into(), |i| i.os_flavor.clone()),
            os_version: None,
            architecture,
            labels,
            delete_protected: false,
            content: server.disk.clone(),
        };
        let image_id = self.next_id(Some(ResourceKind::Image));
        self.images.insert(
            image_id,
            Image {
                id: image_id,
                ..image
            },
        );
        let mut action = NewAction::on(
            "create_image",
            ResourceRef::server(id),
            Completion::ImageCreated { image: image_id },
        )
        .also(ResourceRef::image(image_id));
        action.locks.push(ResourceRef::image(image_id));
        Ok((image_id, self.start_action(action, now)))
    }

    /// Moves the server to another type; it must be off, and it boots again.
    pub fn change_type(
        &mut self,
        id: Id,
        server_type: &str,
        upgrade_disk: bool,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable(id)?;
        if server.status != ServerStatus::Off {
            return Err(ApiError::ServerNotStopped("type"));
        }
        let target = catalog::server_type(server_type).ok_or_else(|| {
            ApiError::field(
                "server_type",
                format!("server type '{server_type}' not found"),
            )
        })?;
        let current = server
            .server_type()
            .ok_or_else(|| ApiError::Internal(format!("server {id} has an unknown type")))?;
        if target.architecture != current.architecture {
            return Err(ApiError::InvalidServerType(format!(
                "cannot change from {} to {}: different architecture",
                current.name, target.name
            )));
        }
        if target.offer(&server.location).is_none() {
            return Err(ApiError::InvalidServerType(format!(
                "server type {} is not available in {}",
                target.name, server.location
            )));
        }
        if target.disk < server.primary_disk_size {
            return Err(ApiError::InvalidServerType(format!(
                "the disk of {} ({} GB) is smaller than the server's ({} GB)",
                target.name, target.disk, server.primary_disk_size
            )));
        }
        let disk = if upgrade_disk {
            target.disk
        } else {
            server.primary_disk_size
        };
        self.server_mut(id)?.status = ServerStatus::Migrating;
        let completion = Completion::ServerTypeChanged {
            server: id,
            server_type: target.name.to_string(),
            disk,
        };
        Ok(self.start_action(
            NewAction::on("change_server_type", ResourceRef::server(id), completion),
            now,
        ))
    }

    pub fn attach_to_network(
        &mut self,
        id: Id,
        network: Id,
        request: Attachment,
        now: Timestamp,
    ) -> Result<Id, ApiError> {
        let server = self.actionable(id)?;
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
        let server = self.actionable(id)?;
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
        let server = self.actionable(id)?;
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
        let server = self.actionable(id)?;
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
        self.server_mut(id)?.placement_group = Some(group);
        let action = NewAction::on(
            "add_to_placement_group",
            ResourceRef::server(id),
            Completion::Nothing,
        )
        .also(ResourceRef::placement_group(group));
        Ok(self.start_action(action, now))
    }

    pub fn remove_from_placement_group(&mut self, id: Id, now: Timestamp) -> Result<Id, ApiError> {
        let server = self.actionable(id)?;
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
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::durations::{Durations, Profile};
    use crate::resources::networks::SubnetSpec;
    use crate::seed;
    use crate::state::WorldConfig;

    fn world() -> (World, Timestamp) {
        let mut world = World::new(WorldConfig {
            durations: Durations::new(Profile::Fast),
            ..WorldConfig::default()
        });
        seed::system_images(&mut world);
        (world, Timestamp::from_millis(1_800_000_000_000))
    }

    fn later(now: Timestamp) -> Timestamp {
        now.plus(Duration::from_secs(60))
    }

    fn network(world: &mut World, range: &str, subnet: &str, now: Timestamp) -> Id {
        world
            .create_network(
                format!("net-{range}"),
                range,
                vec![SubnetSpec {
                    kind: "cloud".into(),
                    ip_range: Some(subnet.into()),
                    network_zone: "eu-central".into(),
                }],
                vec![],
                Labels::new(),
                false,
                now,
            )
            .unwrap()
    }

    fn private_spec(name: &str) -> ServerSpec {
        let mut spec = ServerSpec::new(name, "cx23", "debian-12");
        spec.start_after_create = false;
        spec.enable_ipv4 = false;
        spec.enable_ipv6 = false;
        spec
    }

    #[test]
    fn private_only_server_lifecycle() {
        let (mut w, now) = world();
        let net = network(&mut w, "10.0.0.0/16", "10.0.1.0/24", now);
        let created = w.create_server(private_spec("cp-1"), now).unwrap();
        assert!(created.next_actions.is_empty());
        assert!(created.root_password.is_some());
        let id = created.server;
        let json = w.server(id).unwrap().to_api(&w, now);
        assert!(json["public_net"]["ipv4"].is_null() && json["public_net"]["ipv6"].is_null());
        assert_eq!(json["status"], "initializing");
        assert_eq!(json["locked"], true);

        // Locked while create_server runs.
        let err = w.power(id, Power::On, now).unwrap_err();
        assert_eq!((err.code(), err.status().as_u16()), ("locked", 423));
        let attach = Attachment {
            ip: Some("10.0.1.10".into()),
            ..Attachment::default()
        };
        assert_eq!(
            w.attach_to_network(id, net, attach.clone(), now)
                .unwrap_err()
                .code(),
            "locked"
        );

        let now = later(now);
        w.advance(now);
        assert_eq!(w.server(id).unwrap().status, ServerStatus::Off);
        w.attach_to_network(id, net, attach, now).unwrap();
        let now = later(now);
        w.advance(now);
        w.power(id, Power::On, now).unwrap();
        assert_eq!(w.server(id).unwrap().status, ServerStatus::Starting);
        let now = later(now);
        w.advance(now);
        let server = w.server(id).unwrap();
        assert_eq!(server.status, ServerStatus::Running);
        assert_eq!(server.private_net[0].ip.to_string(), "10.0.1.10");
        assert_eq!(w.network_members(net), vec![id]);
    }

    #[test]
    fn start_after_create_runs_a_follow_up_action() {
        let (mut w, now) = world();
        let mut spec = ServerSpec::new("web", "cax11", "debian-12");
        spec.ssh_keys = vec![];
        let created = w.create_server(spec, now).unwrap();
        assert_eq!(created.next_actions.len(), 1);
        let start = &w.actions[&created.next_actions[0]];
        let create = &w.actions[&created.action];
        assert_eq!(start.command, "start_server");
        assert!(start.finishes_at > create.finishes_at);
        w.advance(later(now));
        assert_eq!(
            w.server(created.server).unwrap().status,
            ServerStatus::Running
        );
        // The arm image was chosen for the arm server type.
        let image = w.server(created.server).unwrap().image.unwrap();
        assert_eq!(
            w.image(image).unwrap().architecture,
            catalog::Architecture::Arm
        );
    }

    #[test]
    fn user_data_is_limited_to_32_kib() {
        let (mut w, now) = world();
        let mut spec = private_spec("big");
        spec.user_data = Some("x".repeat(USER_DATA_LIMIT));
        w.create_server(spec.clone(), now).unwrap();
        spec.name = "bigger".into();
        spec.user_data = Some("x".repeat(USER_DATA_LIMIT + 1));
        let err = w.create_server(spec, now).unwrap_err();
        assert_eq!(err.code(), "invalid_input");
        assert_eq!(
            err.envelope()["error"]["details"]["fields"][0]["name"],
            "user_data"
        );
    }

    #[test]
    fn spread_groups_take_ten_servers() {
        let (mut w, now) = world();
        let group = w
            .create_placement_group("spread".into(), "spread", Labels::new(), now)
            .unwrap();
        for i in 0..10 {
            let mut spec = private_spec(&format!("s{i}"));
            spec.placement_group = Some(group);
            w.create_server(spec, now).unwrap();
        }
        let mut spec = private_spec("s10");
        spec.placement_group = Some(group);
        let err = w.create_server(spec, now).unwrap_err();
        assert_eq!(err.code(), "placement_group_member_limit_reached");
        assert!(!w.servers.values().any(|s| s.name == "s10"));
        // Room again once a member is gone.
        let member = w.placement_group_members(group)[0];
        let now = later(now);
        w.advance(now);
        w.delete_server(member, now).unwrap();
        w.advance(later(now));
        assert_eq!(w.placement_group_members(group).len(), 9);
    }

    #[test]
    fn networks_take_a_hundred_servers() {
        let (mut w, now) = world();
        let net = network(&mut w, "10.0.0.0/16", "10.0.0.0/22", now);
        for i in 0..NETWORK_SERVER_LIMIT {
            let mut spec = private_spec(&format!("n{i}"));
            spec.networks = vec![net];
            w.create_server(spec, now).unwrap();
        }
        assert_eq!(w.network_members(net).len(), 100);
        let mut spec = private_spec("n100");
        spec.networks = vec![net];
        assert_eq!(
            w.create_server(spec, now).unwrap_err().code(),
            "resource_limit_exceeded"
        );
        let loner = w.create_server(private_spec("loner"), now).unwrap().server;
        let now = later(now);
        w.advance(now);
        let err = w
            .attach_to_network(loner, net, Attachment::default(), now)
            .unwrap_err();
        assert_eq!(err.code(), "resource_limit_exceeded");
    }

    #[test]
    fn attachment_errors() {
        let (mut w, now) = world();
        let net = network(&mut w, "10.0.0.0/16", "10.0.1.0/24", now);
        let a = w.create_server(private_spec("a"), now).unwrap().server;
        let b = w.create_server(private_spec("b"), now).unwrap().server;
        let mut us = private_spec("us");
        us.location = Some("ash".into());
        us.server_type = "cpx22".into();
        let c = w.create_server(us, now).unwrap().server;
        let now = later(now);
        w.advance(now);
        let at = |ip: &str| Attachment {
            ip: Some(ip.into()),
            ..Attachment::default()
        };
        w.attach_to_network(a, net, at("10.0.1.5"), now).unwrap();
        let now = later(now);
        w.advance(now);
        let code = |w: &mut World, server, attachment| {
            w.attach_to_network(server, net, attachment, now)
                .unwrap_err()
                .code()
                .to_string()
        };
        assert_eq!(code(&mut w, a, at("10.0.1.6")), "server_already_attached");
        assert_eq!(code(&mut w, b, at("10.0.1.5")), "ip_not_available");
        assert_eq!(code(&mut w, b, at("10.0.1.255")), "ip_not_available");
        assert_eq!(code(&mut w, b, at("10.0.2.5")), "no_subnet_available");
        assert_eq!(code(&mut w, b, at("192.168.0.1")), "invalid_input");
        // The only subnet is in eu-central; an Ashburn server finds none.
        assert_eq!(
            code(&mut w, c, Attachment::default()),
            "no_subnet_available"
        );
        let mut aliased = at("10.0.1.7");
        aliased.alias_ips = vec!["10.0.1.5".into()];
        assert_eq!(code(&mut w, b, aliased), "ip_not_available");
    }

    #[test]
    fn snapshots_lock_the_server_and_record_their_origin() {
        let (mut w, now) = world();
        let id = w.create_server(private_spec("golden"), now).unwrap().server;
        let now = later(now);
        w.advance(now);
        let labels: Labels = [("os".to_string(), "talos".to_string())].into();
        let (image, _) = w
            .create_image(id, None, Some("golden".into()), labels, now)
            .unwrap();
        assert_eq!(w.image(image).unwrap().status, ImageStatus::Creating);
        assert_eq!(w.delete_server(id, now).unwrap_err().code(), "locked");
        assert_eq!(w.delete_image(image).unwrap_err().code(), "locked");
        w.advance(later(now));
        let snapshot = w.image(image).unwrap();
        assert_eq!(snapshot.status, ImageStatus::Available);
        assert_eq!(snapshot.created_from.as_ref().map(|c| c.id), Some(id));
        assert_eq!(snapshot.disk_size, 40.0);
        assert!(snapshot.image_size.is_some_and(|s| s > 0.0));
    }

    #[test]
    fn failed_snapshot_leaves_no_image() {
        let (mut w, now) = world();
        w.config
            .action_failures
            .push(crate::faults::ActionFailure::new("create_image", Some(1)));
        let id = w.create_server(private_spec("doomed"), now).unwrap().server;
        let now = later(now);
        w.advance(now);
        let (image, action) = w.create_image(id, None, None, Labels::new(), now).unwrap();
        w.advance(later(now));
        let action = &w.actions[&action];
        assert_eq!(action.status, crate::actions::ActionStatus::Error);
        assert_eq!(
            action.error.as_ref().map(|e| e.code.as_str()),
            Some("action_failed")
        );
        assert!(w.image(image).is_err());
        assert!(w.config.action_failures.is_empty());
    }

    #[test]
    fn talos_slot_counts_boots_from_disk_only() {
        let (mut w, now) = world();
        seed::hct_project(&mut w, now).unwrap();
        let talos = w
            .images
            .values()
            .find(|i| {
                i.labels.get("version").map(String::as_str) == Some("v1.12.6")
                    && i.architecture == catalog::Architecture::X86
            })
            .map(|i| i.id)
            .unwrap();
        let mut spec = private_spec("talos-1");
        spec.image = talos.to_string();
        let id = w.create_server(spec, now).unwrap().server;
        let now = later(now);
        w.advance(now);
        w.drain_events();
        w.power(id, Power::On, now).unwrap();
        let now = later(now);
        w.advance(now);
        let node = w.server(id).unwrap().talos.clone().unwrap();
        assert_eq!((node.version.as_str(), node.boots), ("v1.12.6", 1));
        assert_eq!(
            node.schematic.as_deref(),
            Some(&seed::TALOS_SCHEMATIC[..32])
        );
        assert!(w.drain_events().iter().any(|e| matches!(
            e,
            SimEvent::ServerBooted { server, into: BootTarget::Disk, talos: Some(_) } if *server == id
        )));
        w.enable_rescue(id, Some("linux64"), &[], now).unwrap();
        let now = later(now);
        w.advance(now);
        w.power(id, Power::Reset, now).unwrap();
        w.advance(later(now));
        let server = w.server(id).unwrap();
        assert_eq!(server.boot, Some(BootTarget::Rescue));
        assert!(!server.rescue_enabled);
        assert_eq!(server.talos.as_ref().map(|t| t.boots), Some(1));
    }

    #[test]
    fn type_changes_need_a_stopped_server() {
        let (mut w, now) = world();
        let mut spec = ServerSpec::new("grow", "cx23", "debian-12");
        spec.location = Some("fsn1".into());
        let id = w.create_server(spec, now).unwrap().server;
        let now = later(now);
        w.advance(now);
        assert_eq!(
            w.change_type(id, "cx33", true, now).unwrap_err().code(),
            "server_not_stopped"
        );
        w.power(id, Power::Off, now).unwrap();
        let now = later(now);
        w.advance(now);
        assert_eq!(
            w.change_type(id, "cax21", false, now).unwrap_err().code(),
            "invalid_server_type"
        );
        w.change_type(id, "cx33", true, now).unwrap();
        w.advance(later(now));
        let server = w.server(id).unwrap();
        assert_eq!(
            (server.server_type.as_str(), server.primary_disk_size),
            ("cx33", 80)
        );
        assert_eq!(server.status, ServerStatus::Running);
    }

    #[test]
    fn names_are_hostnames_and_unique() {
        let (mut w, now) = world();
        w.create_server(private_spec("a"), now).unwrap();
        assert_eq!(
            w.create_server(private_spec("a"), now).unwrap_err().code(),
            "uniqueness_error"
        );
        assert_eq!(
            w.create_server(private_spec("not_a host"), now)
                .unwrap_err()
                .code(),
            "invalid_input"
        );
        assert!(is_hostname("cp-1.cluster.example"));
        assert!(!is_hostname("-cp"));
    }
}
