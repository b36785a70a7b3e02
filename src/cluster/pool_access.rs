//! What a worker pool holds to reach its nodes and the cluster once they
//! exist: a Talos API client certificate (`os:admin`, which applying a
//! config, upgrading and resetting need) and a Kubernetes one, each with its
//! key. The cluster issues them (it holds the CAs' keys) for a year, carries
//! them to the pools in `worker_join`, and issues them again when less than
//! a month is left, as it does the talosconfig. They are derived from the
//! CAs' keys and the issue period, so `worker_join` is known at plan time.
//! A pool's state thus holds certificates that expire, never a key that can
//! sign new ones.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::ClusterError;
use crate::secret::Secret;
use crate::talos::api::{AdminCredentials, Trust};
use crate::talos::client_config::{
    self, ADMIN_CERTIFICATE_VALIDITY, ApiCredentials, RENEWAL_WINDOW,
};
use crate::talos::pki::certificate_not_after;
use crate::talos::{JoinSecrets, Secrets};

/// Certificates are issued for the start of the period of this length they
/// are asked for in: a plan and its apply agree unless a period begins
/// between them (then the apply asks for a new plan).
const ISSUE_PERIOD: Duration = Duration::from_secs(30 * 24 * 3600);

/// A pool's client certificates and keys (PEM). Debug shows no secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolAccess {
    talos_certificate: String,
    talos_key: String,
    kubernetes_certificate: String,
    kubernetes_key: String,
}

impl fmt::Debug for PoolAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolAccess").finish_non_exhaustive()
    }
}

impl PoolAccess {
    /// Certificates from the cluster's CAs for the period `now` is in,
    /// valid for a year from its start. The same for every `now` of a
    /// period, so a plan can show them and its apply make them again.
    pub fn issue(secrets: &Secrets, now: SystemTime) -> Result<Self, ClusterError> {
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let period_start =
            UNIX_EPOCH + Duration::from_secs(since_epoch - since_epoch % ISSUE_PERIOD.as_secs());
        let (talos, kubernetes) = client_config::derived_api_credentials(
            secrets,
            period_start,
            ADMIN_CERTIFICATE_VALIDITY,
        )
        .map_err(|e| ClusterError::Credentials(e.to_string()))?;
        Ok(Self {
            talos_certificate: talos.certificate,
            talos_key: talos.key,
            kubernetes_certificate: kubernetes.certificate,
            kubernetes_key: kubernetes.key,
        })
    }

    /// When the first of the two certificates expires (None: unreadable).
    pub fn expires(&self) -> Option<SystemTime> {
        let talos = certificate_not_after(&self.talos_certificate).ok()?;
        let kubernetes = certificate_not_after(&self.kubernetes_certificate).ok()?;
        Some(talos.min(kubernetes))
    }

    /// Whether the cluster should issue them again (as its talosconfig).
    pub fn due_for_renewal(&self, now: SystemTime) -> bool {
        self.expires()
            .is_none_or(|expires| expires < now + RENEWAL_WINDOW)
    }

    /// The pool's calls to its nodes' Talos API.
    pub fn talos(&self, join: &JoinSecrets) -> Trust {
        Trust::Admin(AdminCredentials {
            os_ca: join.os_ca_certificate().to_string(),
            certificate: self.talos_certificate.clone(),
            key: Secret::new(self.talos_key.clone()),
        })
    }

    /// The pool's calls to the Kubernetes API.
    pub fn kubernetes(&self, join: &JoinSecrets) -> ApiCredentials {
        ApiCredentials {
            ca: join.kubernetes_ca_certificate().to_string(),
            certificate: self.kubernetes_certificate.clone(),
            key: self.kubernetes_key.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::talos::testing::generated_secrets;

    #[test]
    fn issued_for_a_year_from_its_period_and_renewed_in_its_last_month() {
        let now = SystemTime::now();
        let access = PoolAccess::issue(generated_secrets(), now).unwrap();
        let left = access.expires().unwrap().duration_since(now).unwrap();
        assert!(left > ADMIN_CERTIFICATE_VALIDITY - ISSUE_PERIOD);
        assert!(!access.due_for_renewal(now));
        assert!(access.due_for_renewal(now + ADMIN_CERTIFICATE_VALIDITY - RENEWAL_WINDOW / 2));
        let text = serde_json::to_string(&access).unwrap();
        let secrets = generated_secrets();
        for ca_key in [
            secrets.os_ca().key().as_pem(),
            secrets.kubernetes_ca().key().as_pem(),
        ] {
            assert!(!text.contains(ca_key.lines().nth(1).unwrap()), "no CA key");
        }
        assert!(format!("{access:?}").len() < 40, "Debug shows nothing");
    }

    #[test]
    fn the_same_within_a_period_and_new_in_the_next() {
        let secrets = generated_secrets();
        let start = UNIX_EPOCH + ISSUE_PERIOD * 700;
        let first = PoolAccess::issue(secrets, start).unwrap();
        let later = PoolAccess::issue(secrets, start + ISSUE_PERIOD / 2).unwrap();
        assert!(
            first == later,
            "byte for byte, keys and signatures included"
        );
        let next = PoolAccess::issue(secrets, start + ISSUE_PERIOD).unwrap();
        assert!(first != next);
        assert!(next.talos_key != first.talos_key && next.kubernetes_key != first.kubernetes_key);
        let other = Secrets::for_checking().unwrap();
        let theirs = PoolAccess::issue(&other, start).unwrap();
        assert!(theirs.talos_key != first.talos_key);
        assert!(theirs.kubernetes_key != first.kubernetes_key);
    }
}
