//! Wall-clock time as the API shows it. Actions are timed against the wall
//! clock (not a monotonic one) so that a saved state can be resumed later and
//! its running actions still finish at the right moment.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    pub fn now() -> Self {
        Self::from(SystemTime::now())
    }

    pub const fn from_millis(millis: u64) -> Self {
        Self(millis)
    }

    pub fn millis(self) -> u64 {
        self.0
    }

    pub fn unix_seconds(self) -> u64 {
        self.0 / 1000
    }

    pub fn plus(self, duration: Duration) -> Self {
        Self(self.0.saturating_add(duration.as_millis() as u64))
    }

    /// Time from `earlier` to this instant, zero if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }

    /// ISO 8601 as Hetzner writes it: `2026-01-30T23:55:00+00:00`.
    pub fn rfc3339(self) -> String {
        let time = UNIX_EPOCH + Duration::from_secs(self.unix_seconds());
        let text = humantime::format_rfc3339_seconds(time).to_string();
        match text.strip_suffix('Z') {
            Some(stem) => format!("{stem}+00:00"),
            None => text,
        }
    }
}

impl From<SystemTime> for Timestamp {
    fn from(time: SystemTime) -> Self {
        let millis = time
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Self(millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_hetzner() {
        let t = Timestamp::from_millis(1_454_198_100_123);
        assert_eq!(t.rfc3339(), "2016-01-30T23:55:00+00:00");
    }

    #[test]
    fn since_saturates() {
        let a = Timestamp::from_millis(1000);
        let b = Timestamp::from_millis(4500);
        assert_eq!(b.since(a), Duration::from_millis(3500));
        assert_eq!(a.since(b), Duration::ZERO);
    }
}
