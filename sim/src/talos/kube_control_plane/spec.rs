//! Which real control planes should run, and with what: one per etcd ring
//! with at least one control plane whose own API server would run now
//! (`kube_api::spec`), when the cluster's Kubernetes release is the
//! binaries'. Its settings are those of the ring's first such control
//! plane (lowest server id); its serving certificate names every one of
//! them. A change of spec restarts the components (the data stays).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::IpNet;

use crate::ids::Id;
use crate::resources::servers::Server;
use crate::state::World;
use crate::talos::config::ClusterIdentity;
use crate::talos::config::MachineConfig;
use crate::talos::config::components::Settings;
use crate::talos::kube_api::version::KubernetesVersion;
use crate::talos::kube_api::{KubeApiSpec, store::store_id};
use crate::talos::pki::CertificateAuthority;

/// What one ring's real control plane runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlPlaneSpec {
    /// The ring's store id: also the name of its work directory.
    pub store: String,
    /// The ring (etcd cluster) of `cluster` it serves.
    pub ring: u64,
    pub cluster: ClusterIdentity,
    pub cluster_name: String,
    /// `https://host:port` of the control plane endpoint.
    pub endpoint: String,
    pub kubernetes_ca: CertificateAuthority,
    pub settings: Settings,
    pub pods: Vec<IpNet>,
    pub services: Vec<IpNet>,
    pub node_cidr_mask_ipv4: u8,
    pub tls13_only: bool,
    /// The serving certificate's names: every serving control plane's.
    pub names: ServingNames,
}

/// The names kube-apiserver's serving certificate carries. A change of
/// them alone gives it a new certificate (which it reloads), not a restart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServingNames {
    pub ips: Vec<Ipv4Addr>,
    pub dns_names: Vec<String>,
}

impl ControlPlaneSpec {
    /// Whether `other` runs the same components (names aside).
    pub fn same_components(&self, other: &ControlPlaneSpec) -> bool {
        Self {
            names: ServingNames::default(),
            ..self.clone()
        } == Self {
            names: ServingNames::default(),
            ..other.clone()
        }
    }
}

/// The real control planes `world` wants, by store id, given the binaries'
/// release (`v1.37.2`); and the node API servers each passes through to.
pub fn wanted(
    world: &World,
    release: &str,
    node_specs: &BTreeMap<Id, KubeApiSpec>,
) -> BTreeMap<String, ControlPlaneSpec> {
    let mut out: BTreeMap<String, ControlPlaneSpec> = BTreeMap::new();
    for (id, node) in node_specs {
        let Some(server) = world.servers.get(id) else {
            continue;
        };
        let Some((store, spec)) = of_node(server, node, release) else {
            continue;
        };
        match out.get_mut(&store) {
            None => {
                out.insert(store, spec);
            }
            Some(first) => {
                for ip in spec.names.ips {
                    if !first.names.ips.contains(&ip) {
                        first.names.ips.push(ip);
                    }
                }
                for name in spec.names.dns_names {
                    if !first.names.dns_names.contains(&name) {
                        first.names.dns_names.push(name);
                    }
                }
            }
        }
    }
    out
}

/// Ranges as a flag takes them: comma-separated.
pub fn joined(nets: &[IpNet]) -> String {
    nets.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether a config's cluster runs real components of `release`.
pub fn runs_real(config: &MachineConfig, release: &str) -> bool {
    KubernetesVersion::of(config.kubernetes_version.as_deref(), &config.installs).git_version
        == release
}

/// The store id of the real control plane `server`'s API server passes
/// through to, if it is one of a real ring.
pub fn store_of(server: &Server, release: &str) -> Option<String> {
    let talos = server.talos.as_ref()?;
    let config = talos.node.config()?;
    let ring = talos.node.disk.etcd.member.as_ref()?.ring;
    runs_real(config, release).then(|| store_id(&config.cluster, ring))
}

fn of_node(
    server: &Server,
    node: &KubeApiSpec,
    release: &str,
) -> Option<(String, ControlPlaneSpec)> {
    let store = store_of(server, release)?;
    let talos = &server.talos.as_ref()?.node;
    let config = talos.config()?;
    let spec = ControlPlaneSpec {
        store: store.clone(),
        ring: talos.disk.etcd.member.as_ref()?.ring,
        cluster: config.cluster.clone(),
        cluster_name: config.cluster_name.clone(),
        endpoint: config.endpoint.clone(),
        kubernetes_ca: config.kubernetes_ca.clone(),
        settings: config.components.clone(),
        pods: config.subnets.pods.clone(),
        services: config.subnets.services.clone(),
        node_cidr_mask_ipv4: config.subnets.node_cidr_mask_ipv4,
        tls13_only: node.tls13_only,
        names: ServingNames {
            ips: node.ips.clone(),
            dns_names: node.dns_names.clone(),
        },
    };
    Some((store, spec))
}
