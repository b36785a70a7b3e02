//! Waiting for nodes: retry a step until it succeeds, logging progress per
//! node ("noreturn-cp-2: waiting for Talos API, attempt 4, 12s"), and give
//! up at the operation's deadline or at once when Terraform stops us.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::ClusterError;
use crate::backup::BackupError;
use crate::pace::Pace;
use crate::talos::api::TalosError;

/// The first retry comes quickly; later ones back off to this (in
/// production; a shorter poll interval shortens both, see [`Pace`]).
const MAX_RETRY_INTERVAL: Duration = Duration::from_secs(2);
const FIRST_RETRY_INTERVAL: Duration = Duration::from_millis(250);
/// How long a control plane is given to reach etcd when asked for its
/// members. A running etcd answers a member list at once; one without a
/// leader says so after its client's retries (about 2.5 s); Talos holds the
/// call while no etcd answers, so the end of this wait is the answer "no
/// etcd reachable from this node" (`TalosClient::etcd_members`). A poll
/// interval below 125 ms scales it under those 2.5 s (see [`Pace`]).
const ETCD_ASK: Duration = Duration::from_secs(10);

/// When an operation (create, update, delete) must be done by, and the
/// signal that stops it early.
#[derive(Clone)]
pub struct Deadline {
    started: Instant,
    timeout: Duration,
    cancel: CancellationToken,
    pace: Pace,
}

impl Deadline {
    pub fn new(timeout: Duration, cancel: CancellationToken, pace: Pace) -> Self {
        Self {
            started: Instant::now(),
            timeout,
            cancel,
            pace,
        }
    }

    /// How fast the waits under this deadline retry.
    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// Time left, at least a second so a last call can still be made.
    pub fn left(&self) -> Duration {
        self.timeout
            .saturating_sub(self.started.elapsed())
            .max(Duration::from_secs(1))
    }

    /// How long a member list may take (see [`ETCD_ASK`]), scaled by the
    /// pace and within what is left.
    pub fn etcd_ask(&self) -> Duration {
        self.pace.scaled(ETCD_ASK).min(self.left())
    }

    pub fn is_past(&self) -> bool {
        self.started.elapsed() >= self.timeout
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Sleeps, or returns `Stopped` when Terraform stops us first.
    pub async fn sleep(&self, duration: Duration, step: &str) -> Result<(), ClusterError> {
        tokio::select! {
            () = tokio::time::sleep(duration) => Ok(()),
            () = self.cancel.cancelled() => Err(ClusterError::Stopped { step: step.to_string() }),
        }
    }
}

/// Runs `attempt` until it returns Ok, retrying Talos errors that say the
/// node is not there yet. `node` and `step` name the wait in logs and in
/// the timeout error.
pub async fn until<T, F, Fut>(
    deadline: &Deadline,
    node: &str,
    step: &str,
    mut attempt: F,
) -> Result<T, ClusterError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Retry>>,
{
    let started = Instant::now();
    let mut interval = deadline.pace.scaled(FIRST_RETRY_INTERVAL);
    for number in 1.. {
        let outcome = tokio::select! {
            outcome = attempt() => outcome,
            () = deadline.cancel.cancelled() => {
                return Err(ClusterError::Stopped { step: format!("{node}: {step}") });
            }
        };
        match outcome {
            Ok(value) => {
                debug!(node, step, attempts = number, "done");
                return Ok(value);
            }
            Err(Retry::Fatal(error)) => return Err(error),
            Err(Retry::Again(why)) => {
                if deadline.is_past() {
                    return Err(ClusterError::Timeout {
                        node: node.to_string(),
                        step: step.to_string(),
                        waited: started.elapsed(),
                        timeout: deadline.timeout,
                        last: why,
                        first_answer: false,
                    });
                }
                info!(
                    "{node}: {step}, attempt {number}, {}s ({why})",
                    started.elapsed().as_secs()
                );
                deadline.sleep(interval, &format!("{node}: {step}")).await?;
                interval = (interval * 2).min(deadline.pace.scaled(MAX_RETRY_INTERVAL));
            }
        }
    }
    unreachable!("the loop returns")
}

/// [`until`] for a wait on a node's first answer after its server was
/// created: its timeout names the likely causes (no metadata, no egress).
pub async fn first_answer<T, F, Fut>(
    deadline: &Deadline,
    node: &str,
    step: &str,
    attempt: F,
) -> Result<T, ClusterError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Retry>>,
{
    until(deadline, node, step, attempt)
        .await
        .map_err(|mut error| {
            if let ClusterError::Timeout { first_answer, .. } = &mut error {
                *first_answer = true;
            }
            error
        })
}

/// What a failed attempt means for the wait.
pub enum Retry {
    /// Not yet: try again (the reason is logged and ends up in a timeout).
    Again(String),
    /// It will not get better by waiting.
    Fatal(ClusterError),
}

/// One attempt of a call to the backup bucket, within what is left of the
/// deadline: a transient failure (or the time running out) is tried again
/// by [`until`], which then times out; anything else ends the wait as
/// `fatal` says.
pub async fn bucket_attempt<T>(
    deadline: &Deadline,
    call: impl Future<Output = Result<T, BackupError>>,
    fatal: fn(BackupError) -> ClusterError,
) -> Result<T, Retry> {
    match tokio::time::timeout(deadline.left(), call).await {
        Err(_) => Err(Retry::Again("the time ran out".to_string())),
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) if e.is_transient() => Err(Retry::Again(e.to_string())),
        Ok(Err(e)) => Err(Retry::Fatal(fatal(e))),
    }
}

impl From<TalosError> for Retry {
    /// Unreachable and not-ready nodes are booting; a node still in
    /// maintenance mode or rejecting a call may be mid-install (Talos
    /// reboots into the applied config), so those are retried too; another
    /// cluster's CA or refused credentials are not.
    fn from(error: TalosError) -> Self {
        match error {
            TalosError::WrongCa { .. }
            | TalosError::Unauthorized { .. }
            | TalosError::Credentials(_) => Retry::Fatal(ClusterError::Talos(error)),
            other => Retry::Again(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn times_out_naming_the_node_and_the_last_reason() {
        let deadline = Deadline::new(
            Duration::from_secs(3),
            CancellationToken::new(),
            Pace::default(),
        );
        let result: Result<(), _> = until(
            &deadline,
            "noreturn-cp-2",
            "waiting for Talos API",
            || async { Err(Retry::Again("connection refused".into())) },
        )
        .await;
        let message = result.unwrap_err().to_string();
        assert!(message.contains("noreturn-cp-2"), "{message}");
        assert!(message.contains("waiting for Talos API"), "{message}");
        assert!(message.contains("connection refused"), "{message}");
    }

    /// Attempts `until` makes in 3 s of a node that never answers.
    async fn attempts_in_three_seconds(pace: Pace) -> u32 {
        let deadline = Deadline::new(Duration::from_secs(3), CancellationToken::new(), pace);
        let mut calls = 0;
        let _ = until(&deadline, "n", "waiting", || {
            calls += 1;
            async { Err::<(), _>(Retry::Again("not yet".into())) }
        })
        .await;
        calls
    }

    #[tokio::test(start_paused = true)]
    async fn retries_follow_the_poll_interval() {
        // Production: 250 ms, then doubling to 2 s.
        assert_eq!(attempts_in_three_seconds(Pace::default()).await, 5);
        // 50 ms: a tenth of each wait (25 ms doubling to 200 ms).
        let fast = attempts_in_three_seconds(Pace::set(Duration::from_millis(50))).await;
        assert!((16..=20).contains(&fast), "{fast} attempts");
    }

    /// A node answering with another cluster's CA is never retried, at any
    /// pace: the wait ends at the first answer, so nothing more is sent.
    #[tokio::test(start_paused = true)]
    async fn a_foreign_ca_ends_the_wait_at_once() {
        for pace in [Pace::default(), Pace::set(Duration::from_millis(50))] {
            let deadline = Deadline::new(Duration::from_secs(60), CancellationToken::new(), pace);
            let mut calls = 0;
            let result: Result<(), _> = until(&deadline, "noreturn-cp-1", "waiting", || {
                calls += 1;
                async {
                    Err(Retry::from(TalosError::WrongCa {
                        node: "noreturn-cp-1".into(),
                        reason: "another CA".into(),
                    }))
                }
            })
            .await;
            assert!(matches!(
                result,
                Err(ClusterError::Talos(TalosError::WrongCa { .. }))
            ));
            assert_eq!(calls, 1, "{pace:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn stops_when_cancelled() {
        let cancel = CancellationToken::new();
        let deadline = Deadline::new(Duration::from_secs(3600), cancel.clone(), Pace::default());
        let waiting = until(&deadline, "n", "waiting", || async {
            Err::<(), _>(Retry::Again("not yet".into()))
        });
        cancel.cancel();
        assert!(matches!(waiting.await, Err(ClusterError::Stopped { .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn succeeds_after_retries() {
        let deadline = Deadline::new(
            Duration::from_secs(60),
            CancellationToken::new(),
            Pace::default(),
        );
        let mut calls = 0;
        let value = until(&deadline, "n", "waiting", || {
            calls += 1;
            let ready = calls >= 3;
            async move {
                if ready {
                    Ok(calls)
                } else {
                    Err(Retry::Again("booting".into()))
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(value, 3);
    }
}
