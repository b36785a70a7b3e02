//! The cluster-wide inputs of every node's machine config, and the
//! worker-join bundle that hands them from `hct_cluster` to its pools: the
//! settings, the worker share of the secrets and the pool's access
//! (`pool_access`), never a key that signs.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ClusterError;
use super::pool_access::PoolAccess;
use crate::network_plan::NetworkPlan;
use crate::talos::api::Trust;
use crate::talos::client_config::{self, ApiCredentials};
use crate::talos::config::ConfigError;
use crate::talos::release::{KubernetesVersion, TalosVersion};
use crate::talos::{JoinSecrets, MachineConfig, NodeConfigInput, NodeSecrets, Role, Secrets};

/// How long the certificate hct uses for its own Talos API calls lasts:
/// longer than any apply, short enough not to matter if it leaked.
const API_CERTIFICATE_VALIDITY: Duration = Duration::from_secs(6 * 3600);

/// How a node gets its machine config.
///
/// A machine config holds secrets (a control plane's: every CA key, the
/// service-account key, the secretbox secret; a worker's: the join tokens),
/// and Hetzner's metadata service hands a server's user data to any process
/// on it that asks, pods included. So the default keeps configs out of user
/// data (docs/guides/security.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigDelivery {
    /// In the server's user data: Talos reads it on first boot. Opt-in: the
    /// secrets stay readable from the metadata service for the server's life.
    UserData,
    /// Applied over the Talos API while the node is in maintenance mode
    /// (its user data is empty, so Talos waits for a config there).
    Apply,
}

impl ConfigDelivery {
    pub const DEFAULT: Self = Self::Apply;

    pub fn parse(text: &str) -> Option<Self> {
        [Self::UserData, Self::Apply]
            .into_iter()
            .find(|delivery| delivery.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserData => "user_data",
            Self::Apply => "apply",
        }
    }
}

/// What a node's config is made from besides its own name and role.
#[derive(Clone)]
pub struct ClusterSettings {
    pub cluster_name: String,
    pub network_id: i64,
    pub plan: NetworkPlan,
    pub talos_version: TalosVersion,
    pub kubernetes_version: Option<KubernetesVersion>,
    /// The Talos snapshot servers are created from.
    pub image_id: String,
    pub schematic_id: String,
    pub install_disk: String,
    pub delivery: ConfigDelivery,
    pub ssh_key_ids: Vec<i64>,
    pub keys: Keys,
}

/// The secrets a group holds.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per resource and run
pub enum Keys {
    /// The whole bundle: `hct_cluster` and `hct_cluster_secrets`.
    Cluster(Secrets),
    /// A worker pool's: the worker share and the access the cluster issued.
    Pool {
        join: JoinSecrets,
        access: PoolAccess,
    },
}

/// What differs between nodes of different groups.
#[derive(Debug, Clone, Default)]
pub struct NodeTraits {
    pub node_labels: BTreeMap<String, String>,
    /// Talos' form: key → `value:Effect` or `Effect`.
    pub node_taints: BTreeMap<String, String>,
    pub config_patches: Vec<String>,
    /// The inline manifests (name, contents): control planes only
    /// (`cluster.inlineManifests`, or `KubeInlineManifestConfig` from v1.14).
    pub inline_manifests: Vec<(String, String)>,
}

impl ClusterSettings {
    /// The machine config of node `hostname` at `ip`.
    pub fn node_config(
        &self,
        hostname: &str,
        ip: Ipv4Addr,
        role: Role,
        traits: &NodeTraits,
    ) -> Result<MachineConfig, ConfigError> {
        let input = NodeConfigInput {
            cluster_name: self.cluster_name.clone(),
            talos_version: self.talos_version.clone(),
            kubernetes_version: self.kubernetes_version.clone(),
            schematic_id: self.schematic_id.clone(),
            install_disk: Some(self.install_disk.clone()),
            hostname: hostname.to_string(),
            role,
            node_labels: traits.node_labels.clone(),
            node_taints: traits.node_taints.clone(),
            inline_manifests: traits.inline_manifests.clone(),
            config_patches: traits.config_patches.clone(),
            interface: None,
            ip: Some(ip),
        };
        let secrets = match &self.keys {
            Keys::Cluster(secrets) => NodeSecrets::Cluster(secrets),
            Keys::Pool { join, .. } => NodeSecrets::Join(join),
        };
        crate::talos::generate(&input, &self.plan, secrets)
    }

    /// The whole bundle; an error in a pool (which never holds it).
    pub fn cluster_secrets(&self) -> Result<&Secrets, ClusterError> {
        match &self.keys {
            Keys::Cluster(secrets) => Ok(secrets),
            Keys::Pool { .. } => Err(ClusterError::Credentials(
                "a worker pool holds no CA key (this is a bug in hct)".into(),
            )),
        }
    }

    /// Credentials for hct's own calls to the nodes' Talos API.
    pub fn api_trust(&self) -> Result<Trust, ClusterError> {
        self.keys.api_trust()
    }

    /// The secrets' name in server labels ([`secrets_fingerprint`]).
    pub fn secrets_fingerprint(&self) -> String {
        self.keys.fingerprint()
    }

    /// Credentials for hct's own calls to the Kubernetes API.
    pub fn kubernetes_trust(&self) -> Result<ApiCredentials, ClusterError> {
        match &self.keys {
            Keys::Cluster(secrets) => {
                client_config::kubernetes_api_credentials(secrets, API_CERTIFICATE_VALIDITY)
                    .map_err(|e| ClusterError::Credentials(e.to_string()))
            }
            Keys::Pool { join, access } => Ok(access.kubernetes(join)),
        }
    }

    /// The pools' bundle: these settings, the worker share and the pools'
    /// access — the one `prior` (the bundle in state) carries while it is
    /// these secrets' and not due for renewal, else access for `now`'s
    /// period (`PoolAccess::issue`: the same for the plan and its apply).
    pub fn worker_join(
        &self,
        prior: Option<&str>,
        now: SystemTime,
    ) -> Result<WorkerJoin, ClusterError> {
        let secrets = self.cluster_secrets()?;
        let kept = prior
            .and_then(|text| WorkerJoin::decode(text).ok())
            .filter(|join| join.keys.is_of(secrets))
            .and_then(|join| match join.keys {
                JoinKeys::Pool { access, .. } if !access.due_for_renewal(now) => Some(access),
                _ => None,
            });
        let access = match kept {
            Some(access) => access,
            None => PoolAccess::issue(secrets, now)?,
        };
        Ok(WorkerJoin {
            version: WorkerJoin::VERSION,
            cluster_name: self.cluster_name.clone(),
            network_id: self.network_id,
            network_plan: self.plan.to_json(),
            talos_version: self.talos_version.to_string(),
            kubernetes_version: self.kubernetes_version.as_ref().map(ToString::to_string),
            image_id: self.image_id.clone(),
            schematic_id: self.schematic_id.clone(),
            install_disk: self.install_disk.clone(),
            config_delivery: self.delivery,
            ssh_key_ids: self.ssh_key_ids.clone(),
            keys: JoinKeys::Pool {
                join_secrets: secrets.join_secrets(),
                access,
            },
        })
    }
}

impl Keys {
    /// Credentials for hct's own calls to the nodes' Talos API.
    pub fn api_trust(&self) -> Result<Trust, ClusterError> {
        match self {
            Keys::Cluster(secrets) => api_trust(secrets),
            Keys::Pool { join, access } => Ok(access.talos(join)),
        }
    }

    /// The secrets' name in server labels ([`secrets_fingerprint`]).
    pub fn fingerprint(&self) -> String {
        match self {
            Keys::Cluster(secrets) => secrets_fingerprint(secrets),
            Keys::Pool { join, .. } => os_ca_fingerprint(join.os_ca_certificate()),
        }
    }
}

/// Credentials for hct's own calls to the Talos API of `secrets`' nodes.
pub fn api_trust(secrets: &Secrets) -> Result<Trust, ClusterError> {
    let credentials = client_config::talos_api_credentials(secrets, API_CERTIFICATE_VALIDITY)
        .map_err(|e| ClusterError::Credentials(e.to_string()))?;
    Ok(Trust::Admin(credentials.into()))
}

/// Names the secrets in server labels: 16 hex digits of the SHA-256 of
/// the OS CA certificate (public, so safe in a label).
pub fn secrets_fingerprint(secrets: &Secrets) -> String {
    os_ca_fingerprint(secrets.os_ca().certificate_pem())
}

/// 16 hex digits of the SHA-256 of an OS CA certificate (PEM).
pub fn os_ca_fingerprint(os_ca_certificate: &str) -> String {
    let digest = Sha256::digest(os_ca_certificate.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// What state records of the config a node was given (a fingerprint of its
/// meaning, see `talos::config::config_sha256`), so a changed input, or a
/// node running something else, shows as a planned re-apply.
pub fn config_sha256(config: &MachineConfig) -> String {
    crate::talos::config::config_sha256(config.as_str())
}

/// `worker_join`: all a worker pool needs to make its nodes' configs and
/// talk to them: the settings, the worker share of the secrets (join
/// tokens, CA certificates) and the pool's client certificates. Sensitive;
/// no CA key, etcd, service-account or encryption secret is in it.
#[derive(Clone, Serialize, Deserialize)]
pub struct WorkerJoin {
    pub version: u32,
    pub cluster_name: String,
    pub network_id: i64,
    pub network_plan: serde_json::Value,
    pub talos_version: String,
    pub kubernetes_version: Option<String>,
    pub image_id: String,
    pub schematic_id: String,
    pub install_disk: String,
    pub config_delivery: ConfigDelivery,
    pub ssh_key_ids: Vec<i64>,
    #[serde(flatten)]
    pub keys: JoinKeys,
}

/// The secrets in a bundle.
#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per decoded bundle
pub enum JoinKeys {
    /// Version 2: what the pools get.
    Pool {
        join_secrets: JoinSecrets,
        access: PoolAccess,
    },
    /// Version 1 (earlier hct builds): the whole `secrets.yaml`.
    /// Read so states of older releases refresh and plan; never written.
    Legacy { machine_secrets: String },
}

impl JoinKeys {
    /// Whether the bundle was made from `secrets` (the whole worker share,
    /// tokens included, is theirs).
    pub fn is_of(&self, secrets: &Secrets) -> bool {
        match self {
            JoinKeys::Pool { join_secrets, .. } => *join_secrets == secrets.join_secrets(),
            JoinKeys::Legacy { machine_secrets } => {
                Secrets::from_yaml(machine_secrets).is_ok_and(|theirs| theirs == *secrets)
            }
        }
    }
}

impl WorkerJoin {
    /// Bumped when the bundle's meaning changes (2: the worker share and
    /// the pool's access instead of the whole `secrets.yaml`).
    pub const VERSION: u32 = 2;

    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("the bundle is plain data")
    }

    /// Reads a bundle; the error never quotes it (it holds secrets).
    pub fn decode(text: &str) -> Result<Self, String> {
        let join: WorkerJoin = serde_json::from_str(text).map_err(|e| {
            format!(
                "not a worker_join of hct (line {}, column {}); pass \
                 hct_cluster_secrets.<name>.worker_join (or, in the serial form, \
                 hct_cluster.<name>.worker_join) unchanged",
                e.line(),
                e.column()
            )
        })?;
        let layout_of_version = match &join.keys {
            JoinKeys::Pool { .. } => Self::VERSION,
            JoinKeys::Legacy { .. } => 1,
        };
        if join.version != layout_of_version {
            return Err(format!(
                "worker_join version {} is not understood by this hct (version {}); use the same \
                 hct release for the cluster and its pools",
                join.version,
                Self::VERSION
            ));
        }
        Ok(join)
    }

    pub fn settings(&self) -> Result<ClusterSettings, String> {
        let plan = NetworkPlan::from_json(&self.network_plan)
            .map_err(|e| format!("its network plan is invalid: {e}"))?;
        let keys = match &self.keys {
            JoinKeys::Pool {
                join_secrets,
                access,
            } => Keys::Pool {
                join: join_secrets.clone(),
                access: access.clone(),
            },
            JoinKeys::Legacy { machine_secrets } => Keys::Cluster(
                Secrets::from_yaml(machine_secrets)
                    .map_err(|e| format!("its machine secrets are invalid: {e}"))?,
            ),
        };
        let talos_version = self.talos_version.parse().map_err(|e| format!("{e}"))?;
        let kubernetes_version = match &self.kubernetes_version {
            Some(text) => Some(text.parse().map_err(|e| format!("{e}"))?),
            None => None,
        };
        Ok(ClusterSettings {
            cluster_name: self.cluster_name.clone(),
            network_id: self.network_id,
            plan,
            talos_version,
            kubernetes_version,
            image_id: self.image_id.clone(),
            schematic_id: self.schematic_id.clone(),
            install_disk: self.install_disk.clone(),
            delivery: self.config_delivery,
            ssh_key_ids: self.ssh_key_ids.clone(),
            keys,
        })
    }
}

#[cfg(test)]
impl WorkerJoin {
    /// A pool's bundle of `secrets` on the reference plan, its access issued
    /// at `issued`: for tests.
    pub(crate) fn sample(secrets: &Secrets, issued: SystemTime) -> Self {
        WorkerJoin {
            version: WorkerJoin::VERSION,
            cluster_name: "demo".into(),
            network_id: 1,
            network_plan: crate::talos::testing::reference_plan().to_json(),
            talos_version: "v1.13.2".into(),
            kubernetes_version: None,
            image_id: "1".into(),
            schematic_id: "s".into(),
            install_disk: "/dev/sda".into(),
            config_delivery: ConfigDelivery::Apply,
            ssh_key_ids: vec![],
            keys: JoinKeys::Pool {
                join_secrets: secrets.join_secrets(),
                access: PoolAccess::issue(secrets, issued).expect("a test's access"),
            },
        }
    }
}
