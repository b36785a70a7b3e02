//! Powering a server on and off: start, stop, shutdown, reset and reboot,
//! and what their actions do when they finish. A finished boot is where a
//! server comes up from its disk or, once after `enable_rescue`, in the
//! rescue system.

use super::{BootTarget, Power, ServerStatus};
use crate::actions::{Completion, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::events::SimEvent;
use crate::ids::{Id, ResourceRef};
use crate::rescue::RescueSession;
use crate::state::World;

impl World {
    pub fn power(&mut self, id: Id, power: Power, now: Timestamp) -> Result<Id, ApiError> {
        let status = self.actionable_server(id)?.status;
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

    /// `start_server`, `reset_server`, `reboot_server` (and a type change)
    /// finished: the server is up, in the rescue system if it was enabled.
    pub(crate) fn boot_server(&mut self, server: Id, at: Timestamp) {
        let Some(s) = self.servers.get_mut(&server) else {
            return;
        };
        s.status = ServerStatus::Running;
        // Rescue mode is used up by the first boot into it.
        let into = if s.rescue_enabled {
            s.rescue_enabled = false;
            s.rescue = Some(RescueSession {
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

    /// `stop_server`, `shutdown_server` finished: the server is off.
    pub(crate) fn server_stopped(&mut self, server: Id) {
        if let Some(s) = self.servers.get_mut(&server) {
            s.status = ServerStatus::Off;
            s.rescue = None;
            self.emit(SimEvent::ServerStopped { server });
        }
    }

    /// A failed stop or shutdown: the server is as it was.
    pub(crate) fn restore_server_status(&mut self, server: Id, was: ServerStatus) {
        if let Some(s) = self.servers.get_mut(&server) {
            s.status = was;
        }
    }

    /// A failed create, boot, deletion or type change leaves the server off.
    pub(crate) fn leave_server_off(&mut self, server: Id) {
        if let Some(s) = self.servers.get_mut(&server) {
            s.status = ServerStatus::Off;
        }
    }
}
