//! Talos' health check of a control plane's etcd service, as ServiceList
//! reports it, judged by the ring's real etcd once it lists its members.
//!
//! Talos' etcd service checks its health (`HealthFunc`, every 20 s) with
//! `ValidateQuorum` through the node's own member: a linearizable read
//! that needs a leader. So a member that is still a learner (added, not
//! yet promoted: it serves no such read), one whose process does not
//! answer, and one whose cluster has no leader are all unhealthy, though
//! the service runs. The emulation alone takes the service for healthy as
//! soon as the node has a member (`services`); where a real etcd runs the
//! ring, its word on the node's own member decides.
//!
//! That is what holds a replaced control plane back until its new member
//! votes: the member list can still show the old, dead member of the same
//! hostname as a voter until the new node's etcd removes it.

use std::collections::BTreeSet;

use super::{NodeRef, etcd_members, node};
use crate::state::World;
use crate::talos::etcd;
use crate::talos::kube_api::store::store_id;
use crate::talos::kube_control_plane::etcd_member::member_name;
use crate::talos::kube_control_plane::{EtcdListing, Registry};
use crate::talos::services::ServiceStatus;

/// A learner refuses linearizable reads with this (etcd's
/// `ErrGRPCNotSupportedForLearner`).
const LEARNER: &str = "etcdserver: rpc not supported for learner";
/// A read under `WithRequireLeader` without one (`ErrGRPCNoLeader`).
const NO_LEADER: &str = "etcdserver: no leader";
/// The check's call ends at its timeout when the local member does not
/// answer.
const NOT_ANSWERING: &str = "context deadline exceeded";

/// A control plane's own etcd member: the name of its real member, and
/// which of the emulation's members of its ring run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnMember {
    pub name: String,
    pub up: BTreeSet<u64>,
}

/// Why the health check fails on the node `at`, by the word of its ring's
/// real etcd (`registry`); None when it passes, or the node has no member
/// or its ring no real etcd (then nothing more is looked at: ServiceList
/// is asked often).
pub fn on_node(world: &World, at: NodeRef, registry: &Registry) -> Option<&'static str> {
    let (_, talos) = node(world, at).ok()?;
    let config = talos.node.config()?;
    let member = talos.node.disk.etcd.member.as_ref()?;
    let real = registry.etcd_listing(&store_id(&config.cluster, member.ring));
    if matches!(real, EtcdListing::Emulated) {
        return None;
    }
    let up = etcd::members(world, &config.cluster, member.ring)
        .into_iter()
        .filter(|m| m.up)
        .map(|m| m.id)
        .collect();
    let own = OwnMember {
        name: member_name(&member.hostname, member.id),
        up,
    };
    failing(&real, &own)
}

/// Why the health check fails on the node whose member is `own`, by what
/// the real etcd last listed; while the ring's real etcd starts and has
/// listed nothing, not answering (as EtcdMemberList takes every member for
/// a learner then); None when it passes, or no real etcd runs the ring
/// (the emulation's word stands).
pub fn failing(real: &EtcdListing, own: &OwnMember) -> Option<&'static str> {
    let (members, running) = match real {
        EtcdListing::Emulated => return None,
        EtcdListing::Starting => return Some(NOT_ANSWERING),
        EtcdListing::Listed { members, running } => (members, running),
    };
    // An unstarted member has no name yet; a removed one is not listed.
    let Some(member) = members.iter().find(|m| m.name == own.name) else {
        return Some(NOT_ANSWERING);
    };
    if !running.contains(&own.name) {
        Some(NOT_ANSWERING)
    } else if member.is_learner {
        Some(LEARNER)
    } else if !etcd_members::real_leader(members, running, &own.up) {
        Some(NO_LEADER)
    } else {
        None
    }
}

/// `services` with the etcd service's health as the check found it
/// (`why` it failed): a service the emulation reports running and
/// healthy runs, unhealthy, with the check's error as its last message
/// (as Talos' health runner reports a failed check).
pub fn judge(services: &mut [ServiceStatus], why: Option<&str>) {
    let Some(why) = why else { return };
    for service in services {
        if service.id == "etcd" && service.state == "Running" && service.healthy {
            service.healthy = false;
            service.message = why.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talos::kube_control_plane::etcd_api::Member;

    fn own() -> OwnMember {
        OwnMember {
            name: member_name("cp-2", 6),
            up: [5, 6].into(),
        }
    }

    fn member(name: String, is_learner: bool) -> Member {
        Member {
            id: 9,
            name,
            peer_urls: Vec::new(),
            client_urls: Vec::new(),
            is_learner,
        }
    }

    /// The real etcd: cp-1 a voter, cp-2 (ours) a learner or not, and
    /// the `running` processes.
    fn listed(learner: bool, running: &[&str]) -> EtcdListing {
        EtcdListing::Listed {
            members: vec![
                member(member_name("cp-1", 5), false),
                member(member_name("cp-2", 6), learner),
            ],
            running: running.iter().map(|n| n.to_string()).collect(),
        }
    }

    #[test]
    fn only_a_running_voter_with_a_leader_is_healthy() {
        let (cp1, cp2) = (member_name("cp-1", 5), member_name("cp-2", 6));
        assert_eq!(failing(&listed(false, &[&cp1, &cp2]), &own()), None);
        assert_eq!(
            failing(&listed(true, &[&cp1, &cp2]), &own()),
            Some(LEARNER),
            "a learner serves no linearizable read"
        );
        assert_eq!(
            failing(&listed(false, &[&cp1]), &own()),
            Some(NOT_ANSWERING),
            "its process does not run"
        );
        assert_eq!(
            failing(&listed(false, &[&cp2]), &own()),
            Some(NO_LEADER),
            "one of two voters runs"
        );
        let down = OwnMember {
            up: [6].into(),
            ..own()
        };
        assert_eq!(
            failing(&listed(false, &[&cp1, &cp2]), &down),
            Some(NO_LEADER),
            "cp-1's node is down, its process not stopped yet"
        );
        let unstarted = EtcdListing::Listed {
            members: vec![
                member(member_name("cp-1", 5), false),
                member(String::new(), true),
            ],
            running: vec![cp1.clone()],
        };
        assert_eq!(failing(&unstarted, &own()), Some(NOT_ANSWERING));
        assert_eq!(failing(&EtcdListing::Starting, &own()), Some(NOT_ANSWERING));
        assert_eq!(
            failing(&EtcdListing::Emulated, &own()),
            None,
            "the emulation's word"
        );
    }

    /// ServiceList of a bootstrapped control plane: etcd healthy by the
    /// emulation's word until the ring's real etcd lists its members,
    /// then by the real etcd's word on the node's own member.
    #[tokio::test]
    async fn service_list_takes_the_real_etcds_word_on_the_nodes_own_member() {
        use crate::talos::auth::Caller;
        use crate::talos::pb::machine_service_server::MachineService;
        use crate::talos::service::MachineApi;
        use crate::talos::testing::Lab;

        let (lab, at) = Lab::bootstrapped_control_plane();
        let listed = etcd_members::as_asked(&lab.world, at, false).unwrap();
        let (store, name) = (listed.store, member_name("cp-1", listed.members[0].id));
        let sim = lab.into_app();
        let api = MachineApi::new(sim.clone(), at);
        let etcd = || async {
            let mut request = tonic::Request::new(());
            request.extensions_mut().insert(Caller::Verified {
                roles: vec!["os:admin".into()],
            });
            let answer = api.service_list(request).await.unwrap().into_inner();
            let etcd = answer.messages[0]
                .services
                .iter()
                .find(|s| s.id == "etcd")
                .cloned()
                .unwrap();
            let health = etcd.health.unwrap();
            (etcd.state, health.healthy, health.last_message)
        };
        let healthy = (
            "Running".to_string(),
            true,
            "Health check successful".to_string(),
        );
        assert_eq!(etcd().await, healthy, "the emulation's word");
        let with = |is_learner, running: &[&String]| {
            sim.control_planes.set_etcd(
                &store,
                Some(vec![member(name.clone(), is_learner)]),
                running.iter().map(|n| n.to_string()).collect(),
            );
        };
        sim.control_planes
            .set(&store, crate::talos::kube_control_plane::Status::Starting);
        let not_answering = ("Running".to_string(), false, NOT_ANSWERING.to_string());
        assert_eq!(
            etcd().await,
            not_answering,
            "the real etcd listed nothing yet"
        );
        with(true, &[&name]);
        assert_eq!(etcd().await, ("Running".into(), false, LEARNER.into()));
        with(false, &[&name]);
        assert_eq!(etcd().await, healthy, "promoted");
        with(false, &[]);
        assert_eq!(etcd().await, not_answering, "its process stopped");
    }

    #[test]
    fn only_a_running_healthy_etcd_service_is_judged() {
        let service = |id: &'static str, state: &'static str, healthy: bool| ServiceStatus {
            id,
            state,
            healthy,
            message: "as it was".into(),
        };
        let mut services = vec![
            service("apid", "Running", true),
            service("etcd", "Running", true),
        ];
        judge(&mut services, None);
        assert!(services.iter().all(|s| s.healthy), "{services:?}");
        judge(&mut services, Some(LEARNER));
        assert_eq!(services[0], service("apid", "Running", true));
        assert_eq!(
            (services[1].healthy, services[1].message.as_str()),
            (false, LEARNER)
        );
        let mut waiting = vec![service("etcd", "Preparing", false)];
        judge(&mut waiting, Some(LEARNER));
        assert_eq!(
            waiting,
            [service("etcd", "Preparing", false)],
            "its own reason stands"
        );
    }
}
