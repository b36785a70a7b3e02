//! What a worker's machine config holds of the cluster's secrets, and
//! nothing more: the discovery identity, the join tokens and the two CA
//! certificates it trusts. No CA key, no etcd or aggregator CA, no
//! service-account key, no encryption secret: a control plane needs those,
//! a worker pool never does.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Secrets;

/// The worker share of the secrets. Debug output shows no secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinSecrets {
    pub(crate) cluster_id: String,
    pub(crate) cluster_secret: String,
    pub(crate) bootstrap_token: String,
    pub(crate) trustd_token: String,
    /// PEM of the OS (Talos API) CA certificate.
    pub(crate) os_ca_certificate: String,
    /// PEM of the Kubernetes CA certificate.
    pub(crate) kubernetes_ca_certificate: String,
}

impl fmt::Debug for JoinSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSecrets").finish_non_exhaustive()
    }
}

impl JoinSecrets {
    pub fn os_ca_certificate(&self) -> &str {
        &self.os_ca_certificate
    }

    pub fn kubernetes_ca_certificate(&self) -> &str {
        &self.kubernetes_ca_certificate
    }
}

impl Secrets {
    /// The share of these secrets a worker's config holds.
    pub fn join_secrets(&self) -> JoinSecrets {
        JoinSecrets {
            cluster_id: self.cluster_id.clone(),
            cluster_secret: self.cluster_secret.clone(),
            bootstrap_token: self.bootstrap_token.clone(),
            trustd_token: self.trustd_token.clone(),
            os_ca_certificate: self.os_ca.certificate_pem().to_string(),
            kubernetes_ca_certificate: self.kubernetes_ca.certificate_pem().to_string(),
        }
    }
}

/// The secrets a node's config is made from: the whole bundle (a control
/// plane needs it), or a worker's share.
#[derive(Clone, Copy, Debug)]
pub enum NodeSecrets<'a> {
    Cluster(&'a Secrets),
    Join(&'a JoinSecrets),
}

impl<'a> From<&'a Secrets> for NodeSecrets<'a> {
    fn from(secrets: &'a Secrets) -> Self {
        NodeSecrets::Cluster(secrets)
    }
}

impl<'a> From<&'a JoinSecrets> for NodeSecrets<'a> {
    fn from(secrets: &'a JoinSecrets) -> Self {
        NodeSecrets::Join(secrets)
    }
}

impl NodeSecrets<'_> {
    /// The worker share (made from the whole bundle when that is held).
    pub fn join(&self) -> JoinSecrets {
        match self {
            NodeSecrets::Cluster(secrets) => secrets.join_secrets(),
            NodeSecrets::Join(join) => (*join).clone(),
        }
    }

    /// The whole bundle, when held.
    pub fn cluster(&self) -> Option<&Secrets> {
        match self {
            NodeSecrets::Cluster(secrets) => Some(secrets),
            NodeSecrets::Join(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::talos::secrets::EncryptionSecret;
    use crate::talos::testing::generated_secrets;

    #[test]
    fn the_worker_share_holds_no_private_key_and_no_cluster_only_secret() {
        let secrets = generated_secrets();
        let text = serde_json::to_string(&secrets.join_secrets()).unwrap();
        assert!(!text.contains("PRIVATE KEY"), "no key");
        let EncryptionSecret::Secretbox(encryption) = &secrets.encryption else {
            panic!("new bundles use secretbox");
        };
        for held_back in [encryption.as_str(), secrets.etcd_ca().certificate_pem()] {
            assert!(!text.contains(held_back));
        }
        let join = secrets.join_secrets();
        assert_eq!(join.os_ca_certificate, secrets.os_ca().certificate_pem());
        assert_eq!(join.bootstrap_token, secrets.bootstrap_token);
        assert!(format!("{join:?}").len() < 40, "Debug shows nothing");
    }
}
