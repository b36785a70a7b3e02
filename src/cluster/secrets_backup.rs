//! The cluster's machine secrets kept beside its etcd snapshots
//! (`etcd_backup`), encrypted to the same recipients, before any control
//! plane is created or changed: a lost state is imported back with them
//! (the `hct_etcd_snapshots` data source decrypts the newest), and a
//! restore needs nothing but the bucket and an identity. Written once per
//! version of the secrets.

use tracing::info;

use super::error::ClusterError;
use super::group::{Group, SnapshotRule};
use super::wait::{self, Retry};
use crate::backup;

pub async fn keep(group: &Group<'_>) -> Result<(), ClusterError> {
    let SnapshotRule::Store {
        destination,
        recipients,
    } = &group.spec.snapshots
    else {
        return Ok(());
    };
    let yaml = group.settings.cluster_secrets()?.to_yaml();
    let name = backup::secrets_name(group.cluster(), &yaml);
    let encrypted =
        backup::encrypt(yaml.as_bytes(), recipients).map_err(ClusterError::SecretsBackup)?;
    let kept = wait::until(
        group.deadline,
        "the machine secrets",
        "keeping them",
        || async {
            destination
                .keep_once(&name, encrypted.clone())
                .await
                .map_err(|e| Retry::from_backup(e, ClusterError::SecretsBackup))
        },
    )
    .await?;
    if let Some(at) = kept {
        info!(cluster = group.cluster(), %at, "the machine secrets kept, encrypted, beside the etcd snapshots");
    }
    Ok(())
}
