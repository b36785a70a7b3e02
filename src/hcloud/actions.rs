//! Waiting for actions (server creation, power on, snapshots…).
//!
//! All waits of one client share a watcher: a poller that asks for every
//! pending action at once (`GET /actions?id=…&id=…`, 25 per request), so 30
//! servers created in parallel cost a handful of polls, not hundreds. Each
//! action is first polled when an action of its kind is expected to be done
//! (what this client observed, else Hetzner's typical duration), and then as
//! its reported progress suggests, between the poll interval and a few seconds.

use std::time::Duration;

use reqwest::Method;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, info};

use super::client::{Client, Retry};
use super::error::HcloudError;
use super::models::Action;
use super::watcher::{Outcome, Pending};

/// Hetzner's limit on ids per `GET /actions`.
const BATCH: usize = 25;
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// Actions due within this much of each other share a poll.
const GROUPING: Duration = Duration::from_millis(300);
/// How often a long wait says it is still waiting.
pub(crate) const PROGRESS_LOG_EVERY: Duration = Duration::from_secs(10);

/// How long actions of a kind typically take on Hetzner, for the first poll
/// before this client has seen one finish.
fn typical_duration(command: &str) -> Option<Duration> {
    let seconds = match command {
        "create_server" => 12,
        "start_server" => 5,
        "stop_server" => 3,
        "shutdown_server" => 8,
        "delete_server" => 4,
        "attach_to_network" | "detach_from_network" => 3,
        "enable_rescue" | "disable_rescue" => 2,
        "create_image" => 45,
        _ => return None,
    };
    Some(Duration::from_secs(seconds))
}

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
        let waits = actions
            .into_iter()
            .map(|action| self.wait_for_action(action, what, timeout));
        futures_util::future::join_all(waits)
            .await
            .into_iter()
            .collect()
    }

    /// Waits for one action.
    pub async fn wait_for_action(&self, action: Action, what: &str, timeout: Duration) -> Outcome {
        if !action.is_running() {
            return finished(action);
        }
        let started = Instant::now();
        let (sender, mut receiver) = oneshot::channel();
        let start_poller = {
            let mut state = self.watcher().lock();
            let first_wait = self
                .estimated_duration(&action.command)
                // A poll interval that was set is also the first wait (for
                // endpoints much faster than Hetzner, such as hct-sim).
                .or_else(|| (!self.pace().is_set()).then(|| typical_duration(&action.command))?)
                .unwrap_or_default()
                .max(self.poll_interval());
            state
                .pending
                .entry(action.id)
                .or_insert_with(|| Pending {
                    command: action.command.clone(),
                    since: started,
                    due: started + first_wait,
                    progress: action.progress,
                    waiters: Vec::new(),
                })
                .waiters
                .push(sender);
            !std::mem::replace(&mut state.poller_running, true)
        };
        self.watcher().changed.notify_one();
        if start_poller {
            let client = self.clone();
            tokio::spawn(async move { client.poll_until_idle().await });
        }
        let deadline = started + timeout;
        loop {
            let log_at = Instant::now() + PROGRESS_LOG_EVERY;
            tokio::select! {
                outcome = &mut receiver => {
                    return outcome.unwrap_or_else(|_| Err(HcloudError::Cancelled { what: what.to_string() }));
                }
                () = tokio::time::sleep_until(deadline.min(log_at)) => {
                    if Instant::now() >= deadline {
                        return Err(HcloudError::Timeout {
                            what: format!("{what} (action {} #{} still running)", action.command, action.id),
                            waited: started.elapsed(),
                        });
                    }
                    let progress = self.watcher().lock().pending.get(&action.id).map_or(0, |p| p.progress);
                    info!(
                        "{what}: still waiting for {} ({} elapsed, {progress}% done)",
                        action.command,
                        crate::duration::format(started.elapsed())
                    );
                }
                () = self.cancel_token().cancelled() => {
                    return Err(HcloudError::Cancelled { what: what.to_string() });
                }
            }
        }
    }

    /// Polls while anyone waits, then exits.
    async fn poll_until_idle(&self) {
        loop {
            let next_due = {
                let mut state = self.watcher().lock();
                // Waiters that gave up (timeout, Ctrl-C) no longer count.
                state.pending.retain(|_, p| {
                    p.waiters.retain(|w| !w.is_closed());
                    !p.waiters.is_empty()
                });
                match state.pending.values().map(|p| p.due).min() {
                    Some(due) => due,
                    None => {
                        state.poller_running = false;
                        return;
                    }
                }
            };
            tokio::select! {
                () = tokio::time::sleep_until(next_due) => {}
                () = self.watcher().changed.notified() => continue,
            }
            let due_ids: Vec<i64> = {
                let state = self.watcher().lock();
                let horizon = Instant::now() + GROUPING;
                state
                    .pending
                    .iter()
                    .filter(|(_, p)| p.due <= horizon)
                    .map(|(id, _)| *id)
                    .collect()
            };
            for chunk in due_ids.chunks(BATCH) {
                let query: Vec<(&str, String)> =
                    chunk.iter().map(|id| ("id", id.to_string())).collect();
                let polled = self
                    .call::<ActionList>(Method::GET, "actions", &query, None, Retry::Transient)
                    .await;
                self.deliver(chunk, polled);
            }
        }
    }

    /// Hands finished actions to their waiters and schedules the next poll
    /// of the others.
    fn deliver(&self, ids: &[i64], polled: Result<ActionList, HcloudError>) {
        let mut state = self.watcher().lock();
        let pending = &mut state.pending;
        let actions = match polled {
            Ok(list) => list.actions,
            Err(error) => {
                debug!("polling actions failed: {error}");
                for id in ids {
                    if let Some(p) = pending.remove(id) {
                        for waiter in p.waiters {
                            let _ = waiter.send(Err(error.clone()));
                        }
                    }
                }
                return;
            }
        };
        let now = Instant::now();
        for action in actions {
            let Some(entry) = pending.get_mut(&action.id) else {
                continue;
            };
            if action.is_running() {
                entry.progress = action.progress;
                entry.due = now + self.next_wait(now - entry.since, action.progress);
                continue;
            }
            if let Some(p) = pending.remove(&action.id) {
                self.record_duration(&p.command, now - p.since);
                for waiter in p.waiters {
                    let _ = waiter.send(finished(action.clone()));
                }
            }
        }
    }

    /// The time the reported progress suggests is left, kept between the
    /// poll interval and a few seconds.
    fn next_wait(&self, elapsed: Duration, progress: i64) -> Duration {
        let by_progress = if progress > 0 && progress < 100 {
            elapsed.mul_f64((100 - progress) as f64 / progress as f64)
        } else {
            elapsed / 2
        };
        by_progress.clamp(
            self.poll_interval(),
            self.pace()
                .scaled(MAX_POLL_INTERVAL)
                .max(self.poll_interval()),
        )
    }
}

/// A finished action as an outcome: success, or its error.
fn finished(action: Action) -> Outcome {
    if action.status != "error" {
        return Ok(action);
    }
    let error = action.error.clone().unwrap_or_default();
    Err(HcloudError::ActionFailed {
        id: action.id,
        command: action.command,
        code: error.code,
        message: error.message,
        resources: action
            .resources
            .iter()
            .map(|r| format!("{} {}", r.kind, r.id))
            .collect(),
    })
}
