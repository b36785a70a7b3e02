//! A recovering ring's etcd data (`etcd_recover`): before the ring's first
//! real etcd member starts, while its founder's recovery waits for it, the
//! snapshot its EtcdRecover uploaded becomes that member's data directory,
//! made by `etcdutl snapshot restore` as Talos' etcd service makes it
//! (etcdutl's `Restore`: a new single-member cluster, with the member's
//! name and peer URL it then starts with), its hash checked unless the
//! Bootstrap said to skip that. The snapshot then leaves the node's disk,
//! as Talos removes it. A restore that fails leaves no data directory
//! behind, and the ring's control plane fails with the reason.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::KubeBinaries;
use super::etcd_member::MemberFiles;
use super::files::Layout;
use crate::app::AppState;
use crate::talos::etcd_recover::Upload;
use crate::talos::kube_api::store::store_id;

/// What etcdutl reads the snapshot from, in the ring's directory.
const SNAPSHOT_FILE: &str = "etcd.snapshot";
/// What a child process gets of hct-sim's environment.
const KEPT_ENV: [&str; 3] = ["PATH", "HOME", "TMPDIR"];

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "cannot restore the etcd snapshot uploaded for recovery: hct-sim was given no etcdutl \
         (scripts/ensure-peers prints it as ETCDUTL=)"
    )]
    NoEtcdutl,
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot run etcdutl ({binary}): {source}")]
    Spawn {
        binary: String,
        source: std::io::Error,
    },
    #[error("etcdutl snapshot restore failed ({status}): {output}")]
    Failed { status: String, output: String },
}

/// Restores the snapshot `store`'s founder uploaded into the data of
/// `member`, the ring's first, if its recovery waits for that and the
/// member has no data yet (the snapshot file goes in `layout`'s
/// directory while etcdutl reads it).
pub async fn if_pending(
    sim: &AppState,
    binaries: &KubeBinaries,
    store: &str,
    layout: &Layout,
    member: &MemberFiles,
) -> Result<(), RestoreError> {
    if member.has_data() {
        return Ok(());
    }
    let Some((snapshot, skip_hash_check)) = pending(sim, store) else {
        return Ok(());
    };
    let etcdutl = binaries.etcdutl.as_ref().ok_or(RestoreError::NoEtcdutl)?;
    restore(etcdutl, snapshot.bytes(), layout, member, skip_hash_check).await?;
    done(sim, store);
    Ok(())
}

/// The snapshot to restore for `store`, and whether to skip its hash
/// check: a founder's of that ring whose recovery waits for its etcd.
fn pending(sim: &AppState, store: &str) -> Option<(Upload, bool)> {
    let world = sim.world();
    world.servers.values().find_map(|server| {
        let node = &server.talos.as_ref()?.node;
        let config = node.config()?;
        let recovery = node.disk.etcd.recovery.as_ref()?;
        let real = recovery.real?;
        if store_id(&config.cluster, recovery.ring) != store {
            return None;
        }
        Some((node.disk.etcd_snapshot.clone()?, real.skip_hash_check))
    })
}

/// The founder's recovery is done: its snapshot leaves its disk.
fn done(sim: &AppState, store: &str) {
    let mut world = sim.world();
    for server in world.servers.values_mut() {
        let Some(node) = server.talos.as_mut().map(|t| &mut t.node) else {
            continue;
        };
        let Some(config) = node.disk.config.as_ref() else {
            continue;
        };
        let ours = node
            .disk
            .etcd
            .recovery
            .as_ref()
            .is_some_and(|r| r.real.is_some() && store_id(&config.cluster, r.ring) == store);
        if ours {
            node.disk.etcd.recovery = None;
            node.disk.etcd_snapshot = None;
        }
    }
}

/// etcdutl's arguments to restore `snapshot` into `member`'s data
/// directory, as the member it then starts as.
pub fn restore_args(snapshot: &Path, member: &MemberFiles, skip_hash_check: bool) -> Vec<String> {
    let mut args = vec![
        "snapshot".into(),
        "restore".into(),
        snapshot.display().to_string(),
        "--data-dir".into(),
        member.data.display().to_string(),
        "--name".into(),
        member.name.clone(),
        "--initial-cluster".into(),
        member.alone(),
        "--initial-advertise-peer-urls".into(),
        member.peer_url(),
    ];
    if skip_hash_check {
        args.push("--skip-hash-check".into());
    }
    args
}

/// Makes `member`'s data directory from `snapshot` with `etcdutl` (the
/// snapshot written to `layout`'s directory meanwhile).
pub async fn restore(
    etcdutl: &Path,
    snapshot: &[u8],
    layout: &Layout,
    member: &MemberFiles,
    skip_hash_check: bool,
) -> Result<(), RestoreError> {
    let file = layout.path(SNAPSHOT_FILE);
    let write = |source| RestoreError::Write {
        path: file.clone(),
        source,
    };
    std::fs::create_dir_all(&layout.dir).map_err(write)?;
    std::fs::write(&file, snapshot).map_err(write)?;
    let mut command = Command::new(etcdutl);
    command.env_clear();
    for kept in KEPT_ENV {
        if let Some(value) = std::env::var_os(kept) {
            command.env(kept, value);
        }
    }
    let output = command
        .args(restore_args(&file, member, skip_hash_check))
        .current_dir(&layout.dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await;
    let _ = std::fs::remove_file(&file);
    let output = output.map_err(|source| RestoreError::Spawn {
        binary: etcdutl.display().to_string(),
        source,
    })?;
    if output.status.success() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&member.data);
    let text = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Err(RestoreError::Failed {
        status: output.status.to_string(),
        output: lines[lines.len().saturating_sub(5)..].join("\n"),
    })
}
