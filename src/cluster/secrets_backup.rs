//! The cluster's machine secrets kept beside its etcd snapshots
//! (`etcd_backup`), encrypted to the same recipients, before any control
//! plane is created or changed: a lost state is imported back with them
//! (the `hct_etcd_snapshots` data source decrypts the newest), and a
//! restore needs nothing but the bucket and an identity. Written on every
//! apply of the control plane (a small file): the newest is the one in use,
//! encrypted to today's recipients.

use tracing::info;

use super::error::ClusterError;
use super::group::{Group, SnapshotRule};
use super::wait;
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
            let keeping = destination.keep_small(&name, encrypted.clone());
            wait::bucket_attempt(group.deadline, keeping, ClusterError::SecretsBackup).await
        },
    )
    .await?;
    info!(cluster = group.cluster(), at = %kept, "the machine secrets kept, encrypted, beside the etcd snapshots");
    Ok(())
}
