//! The actions a client waits for, shared by all its clones: the state
//! behind the batched polls of `actions` (no I/O here).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use super::error::HcloudError;
use super::models::Action;

pub(super) type Outcome = Result<Action, HcloudError>;

/// The actions being waited for, shared by every clone of a client.
#[derive(Default)]
pub(crate) struct Watcher {
    state: Mutex<WatchState>,
    pub(super) changed: Notify,
}

#[derive(Default)]
pub(super) struct WatchState {
    pub(super) pending: HashMap<i64, Pending>,
    /// Whether a poller task runs; changed only under the lock, together
    /// with `pending`, so a new wait never misses a poller that is exiting.
    pub(super) poller_running: bool,
}

pub(super) struct Pending {
    pub(super) command: String,
    pub(super) since: Instant,
    pub(super) due: Instant,
    pub(super) progress: i64,
    pub(super) waiters: Vec<oneshot::Sender<Outcome>>,
}

impl Watcher {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
