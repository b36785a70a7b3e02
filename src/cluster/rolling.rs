//! Changing a group's nodes a budget at a time (`budget`): Talos upgrades,
//! config re-applies and resizes go through [`Group::rolling`].
//!
//! Pools are separate resources, which Terraform applies side by side in
//! one provider process, so a limit per pool alone would let three pools of
//! budget 2 take six nodes down together. Across the pools of a cluster,
//! a node of a pool with budget `n` goes down only while fewer than `n`
//! nodes of that cluster's pools are out (the count in `this_run`, one per
//! cluster in this process): together the pools never exceed the largest
//! budget among them, and each pool its own. Control planes go one at a
//! time and are not counted (a pool upgrades only once they are done).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::{self, StreamExt};

use super::ClusterError;
use super::group::Group;
use super::settings::ClusterSettings;
use super::this_run;
use crate::talos::Role;

/// A node of a cluster counted out of service until dropped.
struct Out<'a> {
    settings: &'a ClusterSettings,
}

impl Drop for Out<'_> {
    fn drop(&mut self) {
        this_run::change(self.settings, |run| run.out = run.out.saturating_sub(1));
    }
}

impl<'a> Group<'a> {
    /// Counts one more node of the cluster out, once fewer than `allowed`
    /// are.
    async fn take_out(&self, allowed: usize) -> Result<Out<'a>, ClusterError> {
        loop {
            let returned = this_run::changes().notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            let taken = this_run::with(self.settings, |run| {
                let room = run.out < allowed;
                if room {
                    run.out += 1;
                }
                room
            });
            if taken {
                return Ok(Out {
                    settings: self.settings,
                });
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
