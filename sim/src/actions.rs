//! Actions: the API's asynchronous tasks. An action runs for the duration of
//! its command, holds locks on the resources it changes, and when it ends
//! applies its `Completion` (or undoes what its request did, if it fails).
//! Time only moves when someone looks: `World::advance` finishes every action
//! that is due, so answers are consistent with the clock at every request.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::events::SimEvent;
use crate::resources::images::ImageStatus;
use crate::resources::servers::{BootTarget, ServerStatus};
use crate::state::{Id, ResourceKind, ResourceRef, World};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Running,
    Success,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionError {
    pub code: String,
    pub message: String,
}

/// What finishing an action does to the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Completion {
    Nothing,
    /// `create_server`: the server leaves `initializing`.
    ServerCreated {
        server: Id,
        starts: bool,
    },
    /// `start_server`, `reset_server`, `reboot_server`: the server is up.
    ServerBooted {
        server: Id,
    },
    /// `stop_server`, `shutdown_server`: the server is off.
    ServerStopped {
        server: Id,
        was: ServerStatus,
    },
    ServerDeleted {
        server: Id,
    },
    ServerTypeChanged {
        server: Id,
        server_type: String,
        disk: u32,
    },
    ImageCreated {
        image: Id,
    },
    SubnetReady {
        network: Id,
        ip_range: ipnet::Ipv4Net,
    },
    RouteAdded {
        network: Id,
        destination: ipnet::Ipv4Net,
    },
    Attached {
        server: Id,
        network: Id,
        ip: Ipv4Addr,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Action {
    pub id: Id,
    pub command: String,
    pub status: ActionStatus,
    pub started: Timestamp,
    pub finishes_at: Timestamp,
    pub finished: Option<Timestamp>,
    pub resources: Vec<ResourceRef>,
    /// Resources that are `locked` while the action runs.
    pub locks: Vec<ResourceRef>,
    pub error: Option<ActionError>,
    /// Set by fault injection: the error this action will end with.
    pub fails_with: Option<ActionError>,
    pub completion: Completion,
}

impl Action {
    pub fn is_running(&self) -> bool {
        self.status == ActionStatus::Running
    }

    /// Percent done; a running action never reports 100.
    pub fn progress(&self, now: Timestamp) -> u32 {
        match self.status {
            ActionStatus::Running => {
                let total = self.finishes_at.since(self.started).as_millis().max(1);
                let done = now.since(self.started).as_millis();
                ((done * 100 / total) as u32).min(99)
            }
            ActionStatus::Success | ActionStatus::Error => 100,
        }
    }

    pub fn to_api(&self, now: Timestamp) -> Value {
        json!({
            "id": self.id,
            "command": self.command,
            "status": self.status,
            "progress": self.progress(now),
            "started": self.started.rfc3339(),
            "finished": self.finished.map(Timestamp::rfc3339),
            "resources": self.resources.iter().map(|r| r.to_api()).collect::<Vec<_>>(),
            "error": self.error,
        })
    }
}

/// How to start an action; see [`World::start_action`].
pub struct NewAction {
    pub command: &'static str,
    pub resources: Vec<ResourceRef>,
    pub locks: Vec<ResourceRef>,
    pub completion: Completion,
    /// Starts the clock only when this moment has passed (a follow-up action).
    pub after: Option<Timestamp>,
}

impl NewAction {
    /// An action on one resource that locks it.
    pub fn on(command: &'static str, target: ResourceRef, completion: Completion) -> Self {
        Self {
            command,
            resources: vec![target],
            locks: vec![target],
            completion,
            after: None,
        }
    }

    pub fn also(mut self, resource: ResourceRef) -> Self {
        self.resources.push(resource);
        self
    }
}

impl World {
    pub fn start_action(&mut self, new: NewAction, now: Timestamp) -> Id {
        let id = self.next_id(None);
        let begins = new.after.map_or(now, |after| after.max(now));
        let finishes_at = begins.plus(self.config.durations.for_command(new.command));
        let fails_with = self.take_action_failure(new.command);
        self.actions.insert(
            id,
            Action {
                id,
                command: new.command.to_string(),
                status: ActionStatus::Running,
                started: now,
                finishes_at,
                finished: None,
                resources: new.resources,
                locks: new.locks,
                error: None,
                fails_with,
                completion: new.completion,
            },
        );
        id
    }

    fn take_action_failure(&mut self, command: &str) -> Option<ActionError> {
        let failures = &mut self.config.action_failures;
        let index = failures.iter().position(|f| f.matches(command))?;
        let error = failures[index].error();
        if failures[index].consume() {
            failures.remove(index);
        }
        Some(error)
    }

    pub fn is_locked(&self, target: ResourceRef) -> bool {
        self.actions
            .values()
            .any(|a| a.is_running() && a.locks.contains(&target))
    }

    /// Refuses to act on a resource while an action holds it. Networks
    /// answer `conflict` (as documented for network changes), others `locked`.
    pub fn ensure_unlocked(&self, target: ResourceRef) -> Result<(), ApiError> {
        if !self.is_locked(target) {
            return Ok(());
        }
        Err(match target.kind {
            ResourceKind::Network => {
                ApiError::Conflict("a change is currently being performed on this network".into())
            }
            kind => ApiError::Locked {
                kind: kind.as_str(),
            },
        })
    }

    /// Finishes every action that is due by `now`, in the order they end.
    pub fn advance(&mut self, now: Timestamp) -> usize {
        let mut due: Vec<(Timestamp, Id)> = self
            .actions
            .values()
            .filter(|a| a.is_running() && a.finishes_at <= now)
            .map(|a| (a.finishes_at, a.id))
            .collect();
        due.sort();
        for (at, id) in &due {
            self.finish_action(*id, *at);
        }
        due.len()
    }

    fn finish_action(&mut self, id: Id, at: Timestamp) {
        let Some(action) = self.actions.get_mut(&id) else {
            return;
        };
        action.finished = Some(at);
        let completion = action.completion.clone();
        match action.fails_with.take() {
            None => {
                action.status = ActionStatus::Success;
                self.complete(completion, at);
            }
            Some(error) => {
                action.status = ActionStatus::Error;
                action.error = Some(error);
                self.undo(completion);
            }
        }
    }

    fn complete(&mut self, completion: Completion, at: Timestamp) {
        match completion {
            Completion::Nothing => {}
            Completion::ServerCreated { server, starts } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.status = if starts {
                        ServerStatus::Starting
                    } else {
                        ServerStatus::Off
                    };
                }
            }
            Completion::ServerBooted { server } => self.boot_server(server, at),
            Completion::ServerStopped { server, .. } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.status = ServerStatus::Off;
                    s.rescue = None;
                    self.emit(SimEvent::ServerStopped { server });
                }
            }
            Completion::ServerDeleted { server } => self.remove_server(server),
            Completion::ServerTypeChanged {
                server,
                server_type,
                disk,
            } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.server_type = server_type;
                    s.primary_disk_size = disk;
                }
                // The type change copies the disk and starts the server again.
                self.boot_server(server, at);
            }
            Completion::ImageCreated { image } => {
                if let Some(i) = self.images.get_mut(&image) {
                    i.status = ImageStatus::Available;
                    // What a freshly installed root file system occupies, compressed.
                    i.image_size = Some((i.disk_size * 0.011 * 100.0).round() / 100.0 + 0.3);
                }
            }
            Completion::SubnetReady { network, ip_range } => {
                if let Some(n) = self.networks.get_mut(&network)
                    && let Some(subnet) = n.subnets.iter_mut().find(|s| s.ip_range == ip_range)
                {
                    subnet.ready = true;
                }
            }
            Completion::RouteAdded { .. } => {}
            Completion::Attached {
                server,
                network,
                ip,
            } => self.emit(SimEvent::AttachedToNetwork {
                server,
                network,
                ip,
            }),
        }
    }

    /// A failed action leaves things as they were before its request.
    fn undo(&mut self, completion: Completion) {
        match completion {
            Completion::Nothing => {}
            Completion::ServerCreated { server, .. } | Completion::ServerBooted { server } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.status = ServerStatus::Off;
                }
            }
            Completion::ServerStopped { server, was } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.status = was;
                }
            }
            Completion::ServerDeleted { server } | Completion::ServerTypeChanged { server, .. } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.status = ServerStatus::Off;
                }
            }
            Completion::ImageCreated { image } => {
                self.images.remove(&image);
            }
            Completion::SubnetReady { network, ip_range } => {
                if let Some(n) = self.networks.get_mut(&network) {
                    n.subnets.retain(|s| s.ip_range != ip_range);
                }
            }
            Completion::RouteAdded {
                network,
                destination,
            } => {
                if let Some(n) = self.networks.get_mut(&network) {
                    n.routes.retain(|r| r.destination != destination);
                }
            }
            Completion::Attached {
                server, network, ..
            } => {
                if let Some(s) = self.servers.get_mut(&server) {
                    s.private_net.retain(|p| p.network != network);
                }
            }
        }
    }

    fn boot_server(&mut self, server: Id, at: Timestamp) {
        let Some(s) = self.servers.get_mut(&server) else {
            return;
        };
        s.status = ServerStatus::Running;
        // Rescue mode is used up by the first boot into it.
        let into = if s.rescue_enabled {
            s.rescue_enabled = false;
            s.rescue = Some(crate::rescue::RescueSession {
                keys: std::mem::take(&mut s.rescue_keys),
                booted_at: at,
            });
            BootTarget::Rescue
        } else {
            s.rescue = None;
            BootTarget::Disk
        };
        s.boot = Some(into);
        if into == BootTarget::Disk
            && let Some(talos) = s.talos.as_mut()
        {
            talos.boots += 1;
            talos.last_booted = Some(at);
        }
        let talos = s.talos.clone();
        self.emit(SimEvent::ServerBooted {
            server,
            into,
            talos,
        });
    }
}
