//! Waiting for actions (server creation, power on, snapshots…). Polls are
//! batched (`GET /actions?id=…&id=…`, 25 at a time) and timed adaptively: the
//! first poll comes when an action of that kind took last time (or after the
//! poll interval), later ones follow the action's reported progress, backing
//! off to a few seconds.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use tokio::time::Instant;
use tracing::info;

use super::client::{Client, Retry};
use super::error::HcloudError;
use super::models::Action;

const BATCH: usize = 25;
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);

#[derive(serde::Deserialize)]
struct ActionList {
    actions: Vec<Action>,
}

impl Client {
    /// Waits until every action has finished; fails on the first that failed.
    /// `what` names the work in progress logs and errors.
    pub async fn wait_for_actions(
        &self,
        actions: Vec<Action>,
        what: &str,
        timeout: Duration,
    ) -> Result<Vec<Action>, HcloudError> {
        let started = Instant::now();
        let mut done: BTreeMap<i64, Action> = BTreeMap::new();
        let mut running: BTreeMap<i64, Action> = BTreeMap::new();
        for action in actions {
            finish_or_keep(action, &mut done, &mut running)?;
        }
        let mut attempt = 0u32;
        let mut next_wait = self.first_wait(running.values());
        while !running.is_empty() {
            if started.elapsed() + next_wait > timeout {
                return Err(HcloudError::Timeout {
                    what: format!(
                        "{what} (actions {:?} still running)",
                        running.keys().collect::<Vec<_>>()
                    ),
                    waited: started.elapsed(),
                });
            }
            self.sleep(next_wait, what).await?;
            attempt += 1;
            let ids: Vec<i64> = running.keys().copied().collect();
            for chunk in ids.chunks(BATCH) {
                let query: Vec<(&str, String)> =
                    chunk.iter().map(|id| ("id", id.to_string())).collect();
                let list: ActionList = self
                    .call(Method::GET, "actions", &query, None, Retry::Transient)
                    .await?;
                for action in list.actions {
                    if running.remove(&action.id).is_some() {
                        if !action.is_running() {
                            self.record_duration(&action.command, started.elapsed());
                        }
                        finish_or_keep(action, &mut done, &mut running)?;
                    }
                }
            }
            if !running.is_empty() {
                let progress = running.values().map(|a| a.progress).min().unwrap_or(0);
                info!(
                    "{what}: waiting for {} action(s), attempt {attempt}, {} elapsed, {progress}% done",
                    running.len(),
                    crate::duration::format(started.elapsed())
                );
                next_wait = self.next_wait(next_wait, started.elapsed(), progress);
            }
        }
        Ok(done.into_values().collect())
    }

    /// Until the first poll: as long as this kind of action took before.
    fn first_wait<'a>(&self, running: impl Iterator<Item = &'a Action>) -> Duration {
        running
            .filter_map(|a| self.estimated_duration(&a.command))
            .max()
            .unwrap_or(self.poll_interval())
            .max(self.poll_interval())
    }

    /// After a poll: the time the reported progress suggests is left, kept
    /// between the poll interval and a few seconds.
    fn next_wait(&self, previous: Duration, elapsed: Duration, progress: i64) -> Duration {
        let by_progress = (progress > 0 && progress < 100)
            .then(|| elapsed.mul_f64((100 - progress) as f64 / progress as f64));
        let backed_off = previous.mul_f64(1.5);
        by_progress.unwrap_or(backed_off).clamp(
            self.poll_interval(),
            MAX_POLL_INTERVAL.max(self.poll_interval()),
        )
    }
}

fn finish_or_keep(
    action: Action,
    done: &mut BTreeMap<i64, Action>,
    running: &mut BTreeMap<i64, Action>,
) -> Result<(), HcloudError> {
    match action.status.as_str() {
        "running" => {
            running.insert(action.id, action);
        }
        "error" => {
            let error = action.error.clone().unwrap_or_default();
            return Err(HcloudError::ActionFailed {
                id: action.id,
                command: action.command,
                code: error.code,
                message: error.message,
                resources: action
                    .resources
                    .iter()
                    .map(|r| format!("{} {}", r.kind, r.id))
                    .collect(),
            });
        }
        _ => {
            done.insert(action.id, action);
        }
    }
    Ok(())
}
