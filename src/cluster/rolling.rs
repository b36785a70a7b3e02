//! Changing a group's nodes a budget at a time (`budget`): Talos upgrades,
//! config re-applies and resizes go through [`Group::rolling`].
//!
//! Pools are separate resources, which Terraform applies side by side in
//! one provider process, so a limit per pool alone would let three pools of
//! budget 2 take six nodes down together. Across the pools of a cluster,
//! a node of a pool with budget `n` goes down only while fewer than `n`
//! nodes of that cluster's pools are out (the count below, one per cluster
//! name in this process): together the pools never exceed the largest
//! budget among them, and each pool its own. Control planes go one at a
//! time and are not counted (a pool upgrades only once they are done).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use futures_util::stream::{self, StreamExt};
use tokio::sync::Notify;

use super::ClusterError;
use super::group::Group;
use crate::talos::Role;

/// Nodes of each cluster's pools out of service now, in this process.
static OUT: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);
static RETURNED: Notify = Notify::const_new();

fn out() -> std::sync::MutexGuard<'static, HashMap<String, usize>> {
    OUT.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A node of `cluster` counted out of service until dropped.
struct Out {
    cluster: String,
}

impl Drop for Out {
    fn drop(&mut self) {
        if let Some(count) = out().get_mut(&self.cluster) {
            *count = count.saturating_sub(1);
        }
        RETURNED.notify_waiters();
    }
}

impl Group<'_> {
    /// Counts one more node of the cluster out, once fewer than `allowed`
    /// are.
    async fn take_out(&self, allowed: usize) -> Result<Out, ClusterError> {
        loop {
            let returned = RETURNED.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            {
                let mut out = out();
                let count = out.entry(self.cluster().to_string()).or_default();
                if *count < allowed {
                    *count += 1;
                    return Ok(Out {
                        cluster: self.cluster().to_string(),
                    });
                }
            }
            tokio::select! {
                () = returned => {}
                () = self.deadline.cancel().cancelled() => {
                    return Err(ClusterError::Stopped {
                        step: format!("waiting for other pools of {}", self.cluster()),
                    });
                }
                () = tokio::time::sleep(self.deadline.left()) => {
                    return Err(ClusterError::Timeout {
                        node: format!("pool {}", self.group()),
                        step: "waiting for nodes of other pools to be back in service".into(),
                        waited: self.deadline.timeout(),
                        timeout: self.deadline.timeout(),
                        last: format!("{allowed} node(s) of the cluster's pools are out"),
                        first_answer: false,
                    });
                }
            }
        }
    }

    /// Runs `work` on each of `items` (nodes of this group, which has
    /// `total` nodes), as many at once as the group's budget allows, and
    /// for pools within the cluster-wide limit. After a failure no more
    /// start; those started finish; the first error is returned.
    pub(super) async fn rolling<T, F, Fut>(
        &self,
        total: usize,
        items: Vec<T>,
        work: F,
    ) -> Result<(), ClusterError>
    where
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), ClusterError>>,
    {
        let allowed = match self.spec.role {
            Role::ControlPlane => 1,
            Role::Worker => self.spec.budget.nodes(total),
        };
        let failed = AtomicBool::new(false);
        let (failed, work) = (&failed, &work);
        let results: Vec<Result<(), ClusterError>> = stream::iter(items)
            .map(|item| async move {
                if failed.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let _out = match self.spec.role {
                    Role::Worker => Some(self.take_out(allowed).await?),
                    Role::ControlPlane => None,
                };
                if failed.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let result = work(item).await;
                if result.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                result
            })
            .buffer_unordered(allowed)
            .collect()
            .await;
        results.into_iter().collect()
    }
}
