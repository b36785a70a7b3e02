//! EtcdMemberList as Talos answers it, and how long the machine API holds
//! the call while no etcd answers (`service.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tonic::metadata::MetadataMap;

use super::{CallError, NodeRef, configured, node};
use crate::state::World;
use crate::talos::cluster::Clusters;
use crate::talos::config::ClusterIdentity;
use crate::talos::etcd;
use crate::talos::kube_api::store::store_id;
use crate::talos::kube_control_plane::EtcdListing;
use crate::talos::kube_control_plane::etcd_api::Member;
use crate::talos::kube_control_plane::etcd_member::parse_member_name;
use crate::talos::node::EtcdMember;
use crate::talos::pb;

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

/// The ports etcd serves its peers and its clients on, on a Talos node.
const PEER_PORT: u16 = 2380;
const CLIENT_PORT: u16 = 2379;

/// The members the emulation lists for an EtcdMemberList, the store id
/// (`kube_api::store::store_id`) of their etcd cluster, and the address
/// each member advertises and whether it runs, by its id.
#[derive(Debug)]
pub struct Listed {
    pub store: String,
    pub members: Vec<EtcdMember>,
    pub addresses: BTreeMap<u64, IpAddr>,
    pub up: BTreeSet<u64>,
}

impl Listed {
    /// Whether enough members run for a quorum, as the emulation counts
    /// (a learner counts as a member).
    pub fn quorum(&self) -> bool {
        etcd::is_quorum(self.up.len(), self.members.len())
    }
}

/// What a control plane answers to EtcdMemberList, as Talos does (its
/// machined handler, siderolabs/talos `v1alpha1_server.go`): on a worker,
/// Unimplemented. Asked `query_local`, its own etcd answers; otherwise
/// Talos' etcd client goes to every control-plane endpoint it knows, so
/// any running member of the cluster answers, whether this node's own
/// etcd runs or not; whether it has a leader is for [`answer`] to say.
/// When no etcd answers, the client waits
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
    let views = etcd::members(world, cluster, ring);
    let up = views.iter().filter(|m| m.up).map(|m| m.id).collect();
    let addresses = views
        .iter()
        .filter_map(|m| Some((m.id, etcd::advertised(world, cluster, m.id)?)))
        .collect();
    let members = views
        .into_iter()
        .map(|m| EtcdMember {
            id: m.id,
            hostname: m.hostname,
            ring: m.ring,
        })
        .collect();
    Ok(Listed {
        store: store_id(cluster, ring),
        members,
        addresses,
        up,
    })
}

/// The members Talos answers with, given what the ring's real etcd says
/// (`Registry::etcd_listing`): once it has listed them, its members as it
/// lists them (its IDs and learners; the hostname is the member's name,
/// after the node, and none for a member added and not started yet);
/// while it starts and has listed nothing, the emulation's, each still a
/// learner; with no real etcd, the emulation's, as voters. Without a
/// leader, "no leader" (Talos' handler asks with `WithRequireLeader`): the
/// real etcd's word once it lists ([`real_leader`]), else the emulation's
/// count. Peer and client URLs are the address the member's node
/// advertises (none for a member the emulation no longer lists, or one
/// not started yet). The IDs are the emulation's until the real etcd
/// lists, its own from then on.
pub fn answer(listed: Listed, real: EtcdListing) -> Result<Vec<pb::EtcdMember>, CallError> {
    let leader = match &real {
        EtcdListing::Listed { members, running } => real_leader(members, running, &listed.up),
        EtcdListing::Starting | EtcdListing::Emulated => listed.quorum(),
    };
    if !leader {
        return Err(CallError::EtcdNoLeader);
    }
    Ok(members(listed, real))
}

/// Whether the real etcd has a leader: more than half the voters it
/// lists run, each both its process and, by the emulation's word, its
/// node and etcd service (the sim stops a member's process only at its
/// next pass; etcd stops with its node). With no voter listed started,
/// not known: true.
pub(super) fn real_leader(members: &[Member], running: &[String], up: &BTreeSet<u64>) -> bool {
    let voters: Vec<&Member> = members.iter().filter(|m| m.voter()).collect();
    let live = voters
        .iter()
        .filter(|m| running.contains(&m.name))
        .filter(|m| parse_member_name(&m.name).is_some_and(|(_, id)| up.contains(&id)))
        .count();
    voters.is_empty() || etcd::is_quorum(live, voters.len())
}

fn members(listed: Listed, real: EtcdListing) -> Vec<pb::EtcdMember> {
    let urls = |id: u64| match listed.addresses.get(&id) {
        Some(ip) => (
            vec![format!("https://{}", SocketAddr::new(*ip, PEER_PORT))],
            vec![format!("https://{}", SocketAddr::new(*ip, CLIENT_PORT))],
        ),
        None => (Vec::new(), Vec::new()),
    };
    let learners = match real {
        EtcdListing::Listed { members, .. } => {
            return members
                .into_iter()
                .map(|m| {
                    let named = parse_member_name(&m.name);
                    let (peer_urls, client_urls) =
                        named.map(|(_, id)| urls(id)).unwrap_or_default();
                    pb::EtcdMember {
                        id: m.id,
                        hostname: named.map_or(m.name.clone(), |(hostname, _)| hostname.into()),
                        peer_urls,
                        client_urls,
                        is_learner: m.is_learner,
                    }
                })
                .collect();
        }
        EtcdListing::Starting => true,
        EtcdListing::Emulated => false,
    };
    listed
        .members
        .iter()
        .map(|m| {
            let (peer_urls, client_urls) = urls(m.id);
            pb::EtcdMember {
                id: m.id,
                hostname: m.hostname.clone(),
                peer_urls,
                client_urls,
                is_learner: learners,
            }
        })
        .collect()
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
    use crate::talos::auth::Caller;
    use crate::talos::kube_control_plane::Status;
    use crate::talos::kube_control_plane::etcd_member::member_name;
    use crate::talos::pb::{self, machine_service_server::MachineService};
    use crate::talos::service::MachineApi;
    use crate::talos::testing::Lab;

    /// The machine API of a bootstrapped control plane asked for the
    /// members: the emulation's until the ring's real etcd lists them,
    /// then the real etcd's, with its IDs and learners.
    #[tokio::test]
    async fn the_members_are_the_real_etcds_once_it_lists_them() {
        let (lab, at) = Lab::bootstrapped_control_plane();
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
        // (id, hostname, learner) of each member answered.
        let members = || async {
            let answer = ask().await.unwrap().into_inner();
            let members = &answer.messages[0].members;
            members
                .iter()
                .map(|m| (m.id, m.hostname.clone(), m.is_learner))
                .collect::<Vec<_>>()
        };
        let answer = ask().await.unwrap().into_inner();
        let only = &answer.messages[0].members[0];
        assert_eq!(
            (only.peer_urls.as_slice(), only.client_urls.as_slice()),
            (
                &["https://10.0.128.11:2380".to_string()][..],
                &["https://10.0.128.11:2379".to_string()][..]
            ),
            "Talos' URLs: the node's advertised address"
        );
        assert_eq!(
            members().await,
            [(id, "cp-1".into(), false)],
            "the emulation alone lists voters"
        );
        sim.control_planes.set(&listed.store, Status::Starting);
        assert_eq!(
            members().await,
            [(id, "cp-1".into(), true)],
            "the real etcd listed nothing yet"
        );
        let name = member_name("cp-1", id);
        let real = |id, name: &str, is_learner| Member {
            id,
            name: name.into(),
            peer_urls: vec!["http://127.0.0.1:9".into()],
            client_urls: Vec::new(),
            is_learner,
        };
        let running = vec![name.clone()];
        sim.control_planes.set_etcd(
            &listed.store,
            Some(vec![real(0xe7cd, &name, true)]),
            running.clone(),
        );
        assert_eq!(
            members().await,
            [(0xe7cd, "cp-1".into(), true)],
            "the real etcd's ID, a learner"
        );
        // Promoted; another member added and not started yet.
        let two = vec![real(0xe7cd, &name, false), real(0x51, "", true)];
        sim.control_planes
            .set_etcd(&listed.store, Some(two.clone()), running);
        assert_eq!(
            members().await,
            [(0xe7cd, "cp-1".into(), false), (0x51, String::new(), true)],
        );
        let answer = ask().await.unwrap().into_inner();
        assert_eq!(
            answer.messages[0].members[0].peer_urls,
            ["https://10.0.128.11:2380"],
            "never the real member's loopback URL"
        );
        // Its process stopped (the sim has yet to see the node down): the
        // real etcd has no leader, whatever the emulation counts.
        sim.control_planes
            .set_etcd(&listed.store, Some(two), Vec::new());
        let refused = ask().await.unwrap_err();
        assert_eq!(refused.message(), "etcdserver: no leader");
    }

    /// Whether etcd has a leader is the real etcd's word once it lists
    /// its members (the emulation counts a learner, and a member the sim
    /// has yet to stop), the emulation's before.
    #[test]
    fn the_leader_is_the_real_etcds_to_say_once_it_lists() {
        // The emulation: cp-1 (id 5) and cp-2 (id 6), `up` of them running.
        let listed = |up: &[u64]| Listed {
            store: "c/1".into(),
            members: [(5, "cp-1"), (6, "cp-2")]
                .map(|(id, hostname)| EtcdMember {
                    id,
                    hostname: hostname.into(),
                    ring: 1,
                })
                .to_vec(),
            addresses: BTreeMap::new(),
            up: up.iter().copied().collect(),
        };
        let member = |name: String, is_learner| Member {
            id: 9,
            name,
            peer_urls: Vec::new(),
            client_urls: Vec::new(),
            is_learner,
        };
        // The real etcd: cp-1 a voter, cp-2 a learner; `running` processes.
        let real = |running: &[&str]| EtcdListing::Listed {
            members: vec![
                member(member_name("cp-1", 5), false),
                member(member_name("cp-2", 6), true),
            ],
            running: running.iter().map(|n| n.to_string()).collect(),
        };
        let (cp1, cp2) = (member_name("cp-1", 5), member_name("cp-2", 6));
        let no_leader = |answer: Result<Vec<pb::EtcdMember>, CallError>| {
            matches!(answer, Err(CallError::EtcdNoLeader))
        };
        // cp-2 down: the emulation counts 1 of 2, the real etcd's sole
        // voter leads.
        assert!(answer(listed(&[5]), real(&[&cp1])).is_ok());
        // cp-1 down: the emulation counts the learner, 1 of 2 is no
        // quorum either way; with cp-1's process still running (not yet
        // stopped by the sim), its node is down all the same.
        assert!(no_leader(answer(listed(&[6]), real(&[&cp1, &cp2]))));
        // cp-1's node up, its process stopped: no leader.
        assert!(no_leader(answer(listed(&[5, 6]), real(&[&cp2]))));
        assert!(answer(listed(&[5, 6]), real(&[&cp1, &cp2])).is_ok());
        for before in [EtcdListing::Emulated, EtcdListing::Starting] {
            assert!(no_leader(answer(listed(&[5]), before.clone())));
            assert!(answer(listed(&[5, 6]), before).is_ok());
        }
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
