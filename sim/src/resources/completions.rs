//! What a finished action does, and how a failed one is undone: each kind
//! of `Completion` goes to the module of the resource it changes, next to
//! the request that started the action.

use crate::actions::Completion;
use crate::clock::Timestamp;
use crate::resources::firewalls::Target;
use crate::state::World;

impl World {
    /// Applies what a finished action does.
    pub(crate) fn complete(&mut self, completion: Completion, at: Timestamp) {
        match completion {
            Completion::Nothing
            | Completion::RouteAdded { .. }
            | Completion::FirewallApplied { .. }
            | Completion::FirewallRemoved { .. }
            | Completion::FirewallSelectorApplied { .. }
            | Completion::FirewallSelectorRemoved { .. }
            | Completion::LoadBalancerAttached { .. } => {}
            // servers/create.rs
            Completion::ServerCreated { server, starts } => self.server_created(server, starts),
            Completion::ServerDeleted { server } => self.remove_server(server),
            // servers/power.rs
            Completion::ServerBooted { server } => self.boot_server(server, at),
            Completion::ServerStopped { server, .. } => self.server_stopped(server),
            // servers/change_type.rs
            Completion::ServerTypeChanged {
                server,
                server_type,
                disk,
            } => self.server_type_changed(server, server_type, disk, at),
            // servers/snapshot.rs
            Completion::ImageCreated { image } => self.snapshot_taken(image),
            // servers/attachments.rs
            Completion::Attached {
                server,
                network,
                ip,
            } => self.network_attached(server, network, ip),
            // networks/subnets.rs
            Completion::SubnetReady { network, ip_range } => self.subnet_ready(network, ip_range),
            // load_balancers/change.rs
            Completion::LoadBalancerTypeChanged {
                load_balancer,
                load_balancer_type,
            } => self.finish_load_balancer_type_change(load_balancer, load_balancer_type),
        }
    }

    /// A failed action leaves things as they were before its request.
    pub(crate) fn undo(&mut self, completion: Completion) {
        match completion {
            Completion::Nothing | Completion::LoadBalancerTypeChanged { .. } => {}
            // servers/power.rs
            Completion::ServerCreated { server, .. }
            | Completion::ServerBooted { server }
            | Completion::ServerDeleted { server }
            | Completion::ServerTypeChanged { server, .. } => self.leave_server_off(server),
            Completion::ServerStopped { server, was } => self.restore_server_status(server, was),
            // servers/snapshot.rs
            Completion::ImageCreated { image } => self.discard_snapshot(image),
            // servers/attachments.rs
            Completion::Attached {
                server, network, ..
            } => self.discard_attachment(server, network),
            // networks/subnets.rs
            Completion::SubnetReady { network, ip_range } => self.discard_subnet(network, ip_range),
            // load_balancers/network.rs
            Completion::LoadBalancerAttached {
                load_balancer,
                network,
            } => self.discard_load_balancer_attachment(load_balancer, network),
            // networks/routes.rs
            Completion::RouteAdded {
                network,
                destination,
            } => self.discard_route(network, destination),
            // firewalls/apply.rs
            Completion::FirewallApplied { firewall, server } => {
                self.discard_firewall_target(firewall, &Target::Server(server))
            }
            Completion::FirewallRemoved { firewall, server } => {
                self.restore_firewall_target(firewall, Target::Server(server))
            }
            Completion::FirewallSelectorApplied { firewall, selector } => {
                self.discard_firewall_target(firewall, &Target::LabelSelector(selector))
            }
            Completion::FirewallSelectorRemoved { firewall, selector } => {
                self.restore_firewall_target(firewall, Target::LabelSelector(selector))
            }
        }
    }
}
