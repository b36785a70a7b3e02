//! How fast hct polls and retries: the one home of the poll interval and of
//! every wait derived from it.
//!
//! By default hct polls every 500 ms and its retries back off as they would
//! against Hetzner and real nodes (Hetzner's 5xx and `locked` over seconds,
//! a node's API over a reboot). A poll interval set shorter (`poll_interval`,
//! `HCT_POLL_INTERVAL`), as tests against hct-sim do, shortens those retry
//! waits in the same proportion, so that a steady fault fails in about as
//! many attempts but a tenth of the time. A longer interval leaves them as
//! they are: polling less often must not make a failure take longer to
//! report. What the API itself asks for is never shortened: the wait after
//! a 429 follows the request budget it reports (`hcloud::ratelimit`).

use std::time::Duration;

/// The poll interval when none is set.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The poll interval and whether it was set (see the module header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    poll_interval: Duration,
    set: bool,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            poll_interval: DEFAULT_POLL_INTERVAL,
            set: false,
        }
    }
}

impl Pace {
    /// A poll interval the user set: it also times the first poll of each
    /// action and scales the retry waits down when shorter than the default.
    pub fn set(poll_interval: Duration) -> Self {
        Self {
            poll_interval,
            set: true,
        }
    }

    pub fn poll_interval(&self) -> Duration {
        self.poll_interval
    }

    /// Whether the interval was set rather than defaulted. When it was not,
    /// the first poll of an action waits for Hetzner's typical duration
    /// (fewer requests against the hourly budget).
    pub fn is_set(&self) -> bool {
        self.set
    }

    /// The next wait of a poll that backs off by half each time, up to a
    /// cap that production sets at `production_cap` (scaled as any wait).
    pub fn grow(&self, wait: Duration, production_cap: Duration) -> Duration {
        (wait * 3 / 2).min(self.scaled(production_cap))
    }

    /// A wait that production makes `production` long: shortened in
    /// proportion to a poll interval set below the default, else as it is.
    pub fn scaled(&self, production: Duration) -> Duration {
        if self.set && self.poll_interval < DEFAULT_POLL_INTERVAL {
            production
                .mul_f64(self.poll_interval.as_secs_f64() / DEFAULT_POLL_INTERVAL.as_secs_f64())
        } else {
            production
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_waits_are_unchanged_unless_a_shorter_interval_is_set() {
        let two = Duration::from_secs(2);
        assert_eq!(Pace::default().scaled(two), two);
        assert_eq!(Pace::set(DEFAULT_POLL_INTERVAL).scaled(two), two);
        assert_eq!(Pace::set(Duration::from_secs(5)).scaled(two), two);
        assert_eq!(
            Pace::set(Duration::from_millis(50)).scaled(two),
            Duration::from_millis(200)
        );
        let fast = Pace::set(Duration::from_millis(50));
        assert_eq!(
            fast.grow(Duration::from_millis(400), Duration::from_secs(5)),
            Duration::from_millis(500),
            "capped at a tenth of production's cap"
        );
        assert_eq!(
            fast.grow(Duration::from_millis(100), Duration::from_secs(5)),
            Duration::from_millis(150)
        );
        assert!(!Pace::default().is_set());
        assert_eq!(Pace::default().poll_interval(), DEFAULT_POLL_INTERVAL);
    }
}
