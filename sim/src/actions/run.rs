//! Running actions: starting one (with its duration and any injected
//! failure), the locks running actions hold, and finishing every action
//! that is due, which applies or undoes its `Completion`.

use super::{Action, ActionError, ActionStatus, NewAction};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind, ResourceRef};
use crate::state::World;

impl World {
    pub fn start_action(&mut self, new: NewAction, now: Timestamp) -> Id {
        let id = self.next_id(None);
        let begins = new.after.map_or(now, |after| after.max(now));
        let finishes_at = begins.plus(self.config.durations.for_command(new.command));
        let fails_with = self.take_action_failure(new.command, &new.resources);
        self.actions.insert(
            id,
            Action {
                id,
                command: new.command.to_string(),
                status: ActionStatus::Running,
                started: now,
                finishes_at,
                finished: None,
                resources: new.resources,
                locks: new.locks,
                error: None,
                fails_with,
                completion: new.completion,
            },
        );
        // An action without a duration is done when it is answered.
        if finishes_at <= now {
            self.finish_action(id, now);
        }
        id
    }

    fn take_action_failure(
        &mut self,
        command: &str,
        resources: &[ResourceRef],
    ) -> Option<ActionError> {
        let servers = &self.servers;
        let on = || {
            resources
                .iter()
                .filter(|r| r.kind == ResourceKind::Server)
                .filter_map(|r| servers.get(&r.id))
        };
        let failures = &mut self.config.action_failures;
        let index = failures.iter().position(|f| f.matches(command, on()))?;
        let error = failures[index].error();
        if failures[index].consume() {
            failures.remove(index);
        }
        Some(error)
    }

    pub fn is_locked(&self, target: ResourceRef) -> bool {
        self.actions
            .values()
            .any(|a| a.is_running() && a.locks.contains(&target))
    }

    /// Refuses to act on a resource while an action holds it. Networks
    /// answer `conflict` (as documented for network changes), others `locked`.
    pub fn ensure_unlocked(&self, target: ResourceRef) -> Result<(), ApiError> {
        if !self.is_locked(target) {
            return Ok(());
        }
        Err(match target.kind {
            ResourceKind::Network => {
                ApiError::Conflict("a change is currently being performed on this network".into())
            }
            kind => ApiError::Locked {
                kind: kind.as_str(),
            },
        })
    }

    /// Finishes every action that is due by `now`, in the order they end.
    pub fn advance(&mut self, now: Timestamp) -> usize {
        let mut due: Vec<(Timestamp, Id)> = self
            .actions
            .values()
            .filter(|a| a.is_running() && a.finishes_at <= now)
            .map(|a| (a.finishes_at, a.id))
            .collect();
        due.sort();
        for (at, id) in &due {
            self.finish_action(*id, *at);
        }
        due.len()
    }

    fn finish_action(&mut self, id: Id, at: Timestamp) {
        let Some(action) = self.actions.get_mut(&id) else {
            return;
        };
        action.finished = Some(at);
        let completion = action.completion.clone();
        match action.fails_with.take() {
            None => {
                action.status = ActionStatus::Success;
                self.complete(completion, at);
            }
            Some(error) => {
                action.status = ActionStatus::Error;
                action.error = Some(error);
                self.undo(completion);
            }
        }
    }
}
