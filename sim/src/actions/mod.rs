//! Actions: the API's asynchronous tasks. An action runs for the duration of
//! its command, holds locks on the resources it changes, and when it ends
//! applies its `Completion` (or undoes what its request did, if it fails).
//! Time only moves when someone looks: `World::advance` finishes every action
//! that is due, so answers are consistent with the clock at every request.
//!
//! This file holds the records only (an action, its status, its
//! `Completion`, the request to start one); starting, locking and finishing
//! actions (`impl World`) is in `run`. What each completion does lives with
//! the resource it changes; `resources::completions` sends each one there.
//!
//! Keeping the operations out of this file lets the world (`state`) hold
//! actions without depending on what they do.

mod run;

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clock::Timestamp;
use crate::ids::{Id, ResourceRef};
use crate::resources::servers::ServerStatus;

// Lives with the API errors; re-exported for `actions::ActionError`.
pub use crate::errors::ActionError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Running,
    Success,
    Error,
}

/// What finishing an action does to the world, as data: `World::complete`
/// and `World::undo` (in `resources::completions`) hand each kind to the
/// module of the resource it changes.
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
    /// `delete_server`: the server is gone.
    ServerDeleted {
        server: Id,
    },
    /// `change_server_type`: the new type and disk, then a boot.
    ServerTypeChanged {
        server: Id,
        server_type: String,
        disk: u32,
    },
    /// `create_image`: the snapshot is available.
    ImageCreated {
        image: Id,
    },
    /// `add_subnet`: the subnet takes servers.
    SubnetReady {
        network: Id,
        ip_range: ipnet::Ipv4Net,
    },
    /// `add_route`: nothing more to do, but a failure takes the route away.
    RouteAdded {
        network: Id,
        destination: ipnet::Ipv4Net,
    },
    /// `apply_firewall`: nothing more to do, but a failure takes the
    /// server out of the firewall again.
    FirewallApplied {
        firewall: Id,
        server: Id,
    },
    /// `remove_firewall`: a failure puts the server back.
    FirewallRemoved {
        firewall: Id,
        server: Id,
    },
    /// `apply_firewall` through a label selector: a failure takes the
    /// selector off the firewall again.
    FirewallSelectorApplied {
        firewall: Id,
        selector: String,
    },
    /// `remove_firewall` of a label selector: a failure puts it back.
    FirewallSelectorRemoved {
        firewall: Id,
        selector: String,
    },
    /// A load balancer's `attach_to_network`: a failure takes it off the
    /// network again.
    LoadBalancerAttached {
        load_balancer: Id,
        network: Id,
    },
    /// `change_load_balancer_type`: the load balancer has the new type.
    LoadBalancerTypeChanged {
        load_balancer: Id,
        load_balancer_type: String,
    },
    /// `attach_to_network`: the attachment is announced.
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

/// How to start an action; see [`World::start_action`](crate::state::World::start_action).
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
