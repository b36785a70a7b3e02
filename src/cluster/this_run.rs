//! What this provider process knows of each cluster in the running plan or
//! apply. Terraform starts one provider process per run and applies a
//! cluster's resources side by side in it (`hct_cluster` beside its pools in
//! the parallel form), so what one resource learns, the others may use:
//! - how many nodes of the cluster's pools are out of service now (the
//!   cluster-wide limit of `rolling`);
//! - that the control plane's apply failed, so a pool waiting for it stops
//!   at once instead of at its timeout (`control_plane`).
//!
//! Keyed by the cluster's name (each group's servers are labelled with it,
//! so two clusters of one name would also share their servers).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::settings::ClusterSettings;

/// One cluster's run, as far as this process knows it.
#[derive(Default)]
pub(super) struct ClusterRun {
    /// Nodes of the cluster's pools out of service now.
    pub out: usize,
    /// Why the control plane's apply failed in this run, if it did.
    pub control_plane_failed: Option<String>,
}

static RUNS: LazyLock<Mutex<HashMap<String, ClusterRun>>> = LazyLock::new(Default::default);
/// Signalled whenever a cluster's run changes.
static CHANGED: Notify = Notify::const_new();

fn runs() -> MutexGuard<'static, HashMap<String, ClusterRun>> {
    RUNS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The cluster's identity in this process.
fn key(settings: &ClusterSettings) -> &str {
    &settings.cluster_name
}

/// Reads or changes the cluster's run.
pub(super) fn with<R>(settings: &ClusterSettings, f: impl FnOnce(&mut ClusterRun) -> R) -> R {
    f(runs().entry(key(settings).to_string()).or_default())
}

/// [`with`], then wakes every wait on a change.
pub(super) fn change<R>(settings: &ClusterSettings, f: impl FnOnce(&mut ClusterRun) -> R) -> R {
    let result = with(settings, f);
    CHANGED.notify_waiters();
    result
}

/// Signalled at each [`change`]: enable a `notified()` future before
/// looking at the run, so no change is missed.
pub(super) fn changes() -> &'static Notify {
    &CHANGED
}

/// Records that the apply of the cluster's control plane failed (`why`,
/// the error's summary), for the pools that wait for it.
pub fn control_plane_failed(settings: &ClusterSettings, why: &str) {
    change(settings, |run| {
        run.control_plane_failed = Some(why.to_string());
    });
}

/// Resolves once the cluster's control plane failed in this run (at once
/// if it already has), with why.
pub(super) async fn control_plane_failure(settings: &ClusterSettings) -> String {
    loop {
        let changed = CHANGED.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if let Some(why) = with(settings, |run| run.control_plane_failed.clone()) {
            return why;
        }
        changed.await;
    }
}
