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
    /// Control-plane applies of the cluster running now ([`ControlPlaneApply`]).
    pub control_planes_applying: usize,
    /// The control plane's manifests applied in this run, and whether they
    /// bring a CNI.
    pub manifests_applied: Option<bool>,
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

/// A control plane's apply, from its start until dropped: while one runs
/// and has not applied its manifests, the cluster's pools wait for them
/// ([`cni_rule`]). Dropped on every way out of the apply, panics included.
pub struct ControlPlaneApply {
    settings: ClusterSettings,
}

impl ControlPlaneApply {
    pub fn start(settings: &ClusterSettings) -> Self {
        change(settings, |run| run.control_planes_applying += 1);
        Self {
            settings: settings.clone(),
        }
    }
}

impl Drop for ControlPlaneApply {
    fn drop(&mut self) {
        change(&self.settings, |run| {
            run.control_planes_applying = run.control_planes_applying.saturating_sub(1);
        });
    }
}

/// Records that the control plane's manifests are in the cluster.
pub(super) fn manifests_applied(settings: &ClusterSettings, brings_cni: bool) {
    change(settings, |run| run.manifests_applied = Some(brings_cni));
}

/// How often a pool waiting for the control plane's manifests says so.
const MANIFESTS_LOG: std::time::Duration = std::time::Duration::from_secs(30);

/// How a pool decides on its Ready wait: by the control plane's manifests
/// when they are applied in this run (waiting for them while a control
/// plane's apply runs, with a log line every half minute, until
/// `deadline`), else by a look for a CNI's DaemonSet. A pool that looked
/// before Talos or hct applied the manifests would find no CNI and not wait
/// at all.
pub(super) async fn cni_rule(
    settings: &ClusterSettings,
    deadline: &Deadline,
) -> Result<CniRule, ClusterError> {
    const STEP: &str = "waiting for the control plane's bootstrap manifests";
    let started = std::time::Instant::now();
    let mut said = std::time::Duration::ZERO;
    loop {
        let changed = CHANGED.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (applied, waiting) = with(settings, |run| {
            let waiting = run.control_planes_applying > 0 && run.control_plane_failed.is_none();
            (run.manifests_applied, waiting)
        });
        match applied {
            Some(true) => return Ok(CniRule::Known(true)),
            None if waiting => {}
            _ => return Ok(CniRule::Installed),
        }
        if deadline.is_past() {
            return Err(ClusterError::Timeout {
                node: settings.cluster_name.clone(),
                step: STEP.into(),
                waited: started.elapsed(),
                timeout: deadline.timeout(),
                last: "the control plane's apply has not applied its bootstrap manifests".into(),
                first_answer: false,
            });
        }
        if started.elapsed() >= said {
            tracing::info!(cluster = %settings.cluster_name, "{STEP}, {}s", started.elapsed().as_secs());
            said += MANIFESTS_LOG;
        }
        let nap = deadline.left().min(MANIFESTS_LOG);
        tokio::select! {
            () = &mut changed => {}
            slept = deadline.sleep(nap, STEP) => slept?,
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
        let rule = cni_rule(&cluster, &deadline).await;
        assert!(matches!(rule, Ok(CniRule::Installed)));
        let apply = ControlPlaneApply::start(&cluster);
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
        drop(apply);
    }

    #[tokio::test]
    async fn a_control_plane_that_ends_or_fails_without_its_manifests_lets_the_pool_look() {
        for (name, failed) in [("cni-rule-ended", false), ("cni-rule-failed", true)] {
            let cluster = settings(name);
            let apply = ControlPlaneApply::start(&cluster);
            let pool = tokio::spawn({
                let cluster = cluster.clone();
                async move { cni_rule(&cluster, &deadline()).await }
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
            if failed {
                control_plane_failed(&cluster, "boom");
            }
            drop(apply);
            let rule = pool.await.unwrap();
            assert!(matches!(rule, Ok(CniRule::Installed)), "{name}");
        }
        // Manifests without a CNI: a CNI installed some other way counts.
        let cluster = settings("cni-rule-none");
        manifests_applied(&cluster, false);
        let rule = cni_rule(&cluster, &deadline()).await;
        assert!(matches!(rule, Ok(CniRule::Installed)));
        // A pool's own deadline ends its wait.
        let cluster = settings("cni-rule-deadline");
        let _apply = ControlPlaneApply::start(&cluster);
        let short = Deadline::new(
            Duration::from_millis(30),
            tokio_util::sync::CancellationToken::new(),
            Pace::set(Duration::from_millis(1)),
        );
        let waited = cni_rule(&cluster, &short).await;
        assert!(
            matches!(waited, Err(ClusterError::Timeout { .. })),
            "{waited:?}"
        );
    }
}
