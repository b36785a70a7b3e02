//! What this provider process knows of each cluster in the running plan or
//! apply. Terraform starts one provider process per run and applies a
//! cluster's resources side by side in it (`hct_cluster` beside its pools in
//! the parallel form), so what one resource learns, the others may use:
//! - how many nodes of the cluster's pools are out of service now (the
//!   cluster-wide limit of `rolling`);
//! - that the control plane's apply failed, so a pool waiting for it stops
//!   at once instead of at its timeout (`control_plane`);
//! - whether the control plane's bootstrap manifests are in the cluster
//!   yet and bring a CNI, so a pool decides on its Ready wait by them, not
//!   by a look at the cluster that may come before them ([`cni_rule`]).
//!
//! Keyed by the cluster's name (each group's servers are labelled with it,
//! so two clusters of one name would also share their servers).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::ClusterError;
use super::ready::CniRule;
use super::settings::ClusterSettings;
use super::wait::Deadline;

/// One cluster's run, as far as this process knows it.
#[derive(Default)]
pub(super) struct ClusterRun {
    /// Nodes of the cluster's pools out of service now.
    pub out: usize,
    /// Why the control plane's apply failed in this run, if it did.
    pub control_plane_failed: Option<String>,
    pub manifests: Manifests,
}

/// The control plane's bootstrap manifests in this run.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Manifests {
    /// No control-plane apply in this run (or it ended without them):
    /// they went in, if at all, in an earlier one.
    #[default]
    NotInThisRun,
    /// The control plane's apply runs; its manifests are not applied yet.
    Coming,
    /// Applied in this run; whether they bring a CNI.
    Applied { brings_cni: bool },
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

/// Records that the control plane's apply starts: its manifests are
/// coming.
pub fn control_plane_applying(settings: &ClusterSettings) {
    change(settings, |run| run.manifests = Manifests::Coming);
}

/// Records that the control plane's manifests are in the cluster.
pub(super) fn manifests_applied(settings: &ClusterSettings, brings_cni: bool) {
    change(settings, |run| {
        run.manifests = Manifests::Applied { brings_cni }
    });
}

/// Records that the control plane's apply ended: manifests still coming
/// will not come in this run.
pub fn control_plane_finished(settings: &ClusterSettings) {
    change(settings, |run| {
        if run.manifests == Manifests::Coming {
            run.manifests = Manifests::NotInThisRun;
        }
    });
}

/// How a pool decides on its Ready wait: by the control plane's manifests
/// when they are applied in this run (waiting for them, with a log line
/// every half minute, until `deadline`), else by a look for a CNI's
/// DaemonSet. A pool that looked before Talos or hct applied the
/// manifests would find no CNI and not wait at all.
pub(super) async fn cni_rule(
    settings: &ClusterSettings,
    deadline: &Deadline,
) -> Result<CniRule, ClusterError> {
    let started = std::time::Instant::now();
    loop {
        let changed = CHANGED.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (manifests, failed) = with(settings, |run| {
            (run.manifests, run.control_plane_failed.is_some())
        });
        match manifests {
            Manifests::Applied { brings_cni: true } => return Ok(CniRule::Known(true)),
            Manifests::Coming if !failed => {}
            _ => return Ok(CniRule::Installed),
        }
        tracing::info!(
            cluster = %settings.cluster_name,
            "waiting for the control plane's bootstrap manifests before the Ready wait, {}s",
            started.elapsed().as_secs()
        );
        tokio::select! {
            () = &mut changed => {}
            slept = deadline.sleep(std::time::Duration::from_secs(30), "waiting for the control plane's bootstrap manifests") => slept?,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::cluster::settings::WorkerJoin;
    use crate::pace::Pace;
    use crate::talos::testing::generated_secrets;

    fn settings(name: &str) -> ClusterSettings {
        let mut settings = WorkerJoin::sample(generated_secrets(), SystemTime::now())
            .settings()
            .unwrap();
        settings.cluster_name = name.into();
        settings
    }

    fn deadline() -> Deadline {
        let cancel = tokio_util::sync::CancellationToken::new();
        Deadline::new(
            Duration::from_secs(60),
            cancel,
            Pace::set(Duration::from_millis(1)),
        )
    }

    #[tokio::test]
    async fn a_pool_decides_on_its_ready_wait_once_the_control_planes_manifests_are_in() {
        let (cluster, deadline) = (settings("cni-rule-applied"), deadline());
        // No control plane in this run: a look at the cluster decides.
        assert!(matches!(
            cni_rule(&cluster, &deadline).await,
            Ok(CniRule::Installed)
        ));
        control_plane_applying(&cluster);
        let pool = tokio::spawn({
            let cluster = cluster.clone();
            async move { cni_rule(&cluster, &deadline).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !pool.is_finished(),
            "the pool waits while the manifests are coming"
        );
        manifests_applied(&cluster, true);
        assert!(matches!(pool.await.unwrap(), Ok(CniRule::Known(true))));
    }

    #[tokio::test]
    async fn a_control_plane_that_ends_or_fails_without_its_manifests_lets_the_pool_look() {
        for (name, end) in [
            (
                "cni-rule-ended",
                control_plane_finished as fn(&ClusterSettings),
            ),
            ("cni-rule-failed", |s: &ClusterSettings| {
                control_plane_failed(s, "boom")
            }),
        ] {
            let cluster = settings(name);
            control_plane_applying(&cluster);
            let pool = tokio::spawn({
                let cluster = cluster.clone();
                async move { cni_rule(&cluster, &deadline()).await }
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
            end(&cluster);
            assert!(
                matches!(pool.await.unwrap(), Ok(CniRule::Installed)),
                "{name}"
            );
        }
        // Manifests without a CNI: a CNI installed some other way counts.
        let cluster = settings("cni-rule-none");
        manifests_applied(&cluster, false);
        assert!(matches!(
            cni_rule(&cluster, &deadline()).await,
            Ok(CniRule::Installed)
        ));
    }
}
