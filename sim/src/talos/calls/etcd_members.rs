//! EtcdMemberList as Talos answers it, and how long the machine API holds
//! the call while no etcd answers (`service.rs`).

use std::collections::BTreeSet;
use std::time::Duration;

use tonic::metadata::MetadataMap;

use super::{CallError, NodeRef, configured, node};
use crate::state::World;
use crate::talos::cluster::Clusters;
use crate::talos::config::ClusterIdentity;
use crate::talos::etcd;
use crate::talos::kube_api::store::store_id;
use crate::talos::kube_control_plane::etcd_member::member_name;
use crate::talos::node::EtcdMember;

/// How often a held member list looks for an etcd to answer it.
pub const RETRY: Duration = Duration::from_millis(100);
/// How long a call without a deadline is held at most (Talos would hold it
/// for ever).
const LONGEST_HOLD: Duration = Duration::from_secs(600);

/// How long a member list is held at most while no etcd answers: the
/// call's `grpc-timeout` (digits and a unit: H, M, S, m, u, n), else
/// [`LONGEST_HOLD`].
pub fn held_for(metadata: &MetadataMap) -> Duration {
    let timeout = metadata
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(|text| {
            let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
            let n: u64 = digits.parse().ok()?;
            Some(match unit {
                "H" => Duration::from_secs(n.saturating_mul(3600)),
                "M" => Duration::from_secs(n.saturating_mul(60)),
                "S" => Duration::from_secs(n),
                "m" => Duration::from_millis(n),
                "u" => Duration::from_micros(n),
                "n" => Duration::from_nanos(n),
                _ => return None,
            })
        });
    timeout.unwrap_or(LONGEST_HOLD).min(LONGEST_HOLD)
}

/// The members an EtcdMemberList answers with, and the store id
/// (`kube_api::store::store_id`) of their etcd cluster.
#[derive(Debug)]
pub struct Listed {
    pub store: String,
    pub members: Vec<EtcdMember>,
}

/// What a control plane answers to EtcdMemberList, as Talos does (its
/// machined handler, siderolabs/talos `v1alpha1_server.go`): on a worker,
/// Unimplemented. Asked `query_local`, its own etcd answers; otherwise
/// Talos' etcd client goes to every control-plane endpoint it knows, so
/// any running member of the cluster answers, whether this node's own
/// etcd runs or not. etcd without quorum answers "no leader" (the handler
/// asks with `WithRequireLeader`). When no etcd answers, the client waits
/// for one until the call's deadline: [`CallError::EtcdUnreachable`],
/// which the machine API holds until then.
pub fn as_asked(world: &World, at: NodeRef, query_local: bool) -> Result<Listed, CallError> {
    let (server, talos) = node(world, at)?;
    let config = configured(talos, "EtcdMemberList")?;
    if !config.is_control_plane() {
        return Err(CallError::ControlPlaneOnly("member list"));
    }
    let cluster = &config.cluster;
    let ring = if query_local {
        talos
            .node
            .disk
            .etcd
            .member
            .as_ref()
            .filter(|m| etcd::runs(world, server, cluster, m.id))
            .map(|m| m.ring)
    } else {
        answering_ring(world, cluster)
    };
    let ring = ring.ok_or(CallError::EtcdUnreachable)?;
    etcd::quorum(world, cluster, ring).map_err(|_| CallError::EtcdNoLeader)?;
    Ok(Listed {
        store: store_id(cluster, ring),
        members: Clusters::of(world).members(cluster, ring),
    })
}

/// Whether Talos lists `member` as a learner: where the ring's real etcd
/// runs, unless it lists the member's stand-in as a started voter
/// (`voters`, from `Registry::etcd_voters`); never in the emulation alone.
pub fn is_learner(voters: Option<&BTreeSet<String>>, member: &EtcdMember) -> bool {
    voters.is_some_and(|voters| !voters.contains(&member_name(&member.hostname, member.id)))
}

/// The etcd cluster of `cluster` that answers a client of all the control
/// planes: one with a member running (of the one with the most members,
/// should the secrets run two).
fn answering_ring(world: &World, cluster: &ClusterIdentity) -> Option<u64> {
    Clusters::of(world)
        .rings(cluster)
        .into_iter()
        .map(|ring| (ring, etcd::members(world, cluster, ring)))
        .filter(|(_, members)| members.iter().any(|m| m.up))
        .max_by_key(|(ring, members)| (members.len(), std::cmp::Reverse(*ring)))
        .map(|(ring, _)| ring)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::talos::auth::Caller;
    use crate::talos::kube_control_plane::Status;
    use crate::talos::kube_control_plane::etcd_api::Member;
    use crate::talos::pb::{self, machine_service_server::MachineService};
    use crate::talos::service::MachineApi;
    use crate::talos::testing::{Lab, cluster, control_plane};

    /// The machine API of a bootstrapped control plane asked for the
    /// members: whether Talos lists its one member as a learner, per what
    /// the ring's real etcd says.
    #[tokio::test]
    async fn a_member_the_real_etcd_lists_no_voter_is_a_learner() {
        // Some time before the wall clock, which the service reads.
        let mut lab = Lab::starting_at(Timestamp::from_millis(
            Timestamp::now().millis() - 3_600_000,
        ));
        let config = cluster().machine_config(&control_plane());
        let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
        lab.settle();
        lab.on(cp, |w, at, _| super::super::bootstrap(w, at))
            .unwrap();
        lab.settle();
        let at = lab.at(cp);
        let listed = as_asked(&lab.world, at, false).unwrap();
        let id = listed.members[0].id;
        let sim = lab.into_app();
        let api = MachineApi::new(sim.clone(), at);
        let ask = || async {
            let mut request = tonic::Request::new(pb::EtcdMemberListRequest { query_local: false });
            request.extensions_mut().insert(Caller::Verified {
                roles: vec!["os:admin".into()],
            });
            api.etcd_member_list(request).await
        };
        let learner = || async {
            let answer = ask().await.unwrap().into_inner();
            answer.messages[0].members[0].is_learner
        };
        assert!(!learner().await, "the emulation alone lists voters");
        sim.control_planes.set(&listed.store, Status::Starting);
        assert!(learner().await, "the real etcd listed nothing yet");
        let member = |is_learner| Member {
            id: 1,
            name: member_name("cp-1", id),
            peer_urls: Vec::new(),
            client_urls: Vec::new(),
            is_learner,
        };
        let running = vec![member_name("cp-1", id)];
        sim.control_planes
            .set_etcd(&listed.store, Some(vec![member(true)]), running.clone());
        assert!(learner().await, "the real etcd lists it a learner");
        sim.control_planes
            .set_etcd(&listed.store, Some(vec![member(false)]), running);
        assert!(!learner().await, "the real etcd lists it a voter");
        // Its process stopped (the sim has yet to see the node down): the
        // real etcd has no leader, whatever the emulation counts.
        sim.control_planes
            .set_etcd(&listed.store, Some(vec![member(false)]), Vec::new());
        let refused = ask().await.unwrap_err();
        assert_eq!(refused.message(), "etcdserver: no leader");
    }

    fn held(value: Option<&str>) -> Duration {
        let mut metadata = MetadataMap::new();
        if let Some(value) = value {
            metadata.insert("grpc-timeout", value.parse().unwrap());
        }
        held_for(&metadata)
    }

    #[test]
    fn a_call_is_held_for_its_grpc_timeout_and_ten_minutes_at_most() {
        assert_eq!(held(Some("400000u")), Duration::from_millis(400));
        assert_eq!(held(Some("3S")), Duration::from_secs(3));
        assert_eq!(held(Some("250m")), Duration::from_millis(250));
        assert_eq!(held(Some("2M")), Duration::from_secs(120));
        assert_eq!(held(Some("5000000n")), Duration::from_millis(5));
        assert_eq!(held(Some("1H")), LONGEST_HOLD, "capped");
        for unreadable in [None, Some(""), Some("S"), Some("10x"), Some("-1S")] {
            assert_eq!(held(unreadable), LONGEST_HOLD, "{unreadable:?}");
        }
    }
}
