//! The project's request budget: a token bucket of `limit` requests that
//! refills at `limit` per hour, announced in `RateLimit-*` headers.

use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};

use crate::clock::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateHeaders {
    pub limit: u32,
    pub remaining: u32,
    /// Unix time (seconds) at which the bucket is full again.
    pub reset: u64,
}

impl RateHeaders {
    pub fn apply(&self, headers: &mut HeaderMap) {
        headers.insert("RateLimit-Limit", HeaderValue::from(self.limit));
        headers.insert("RateLimit-Remaining", HeaderValue::from(self.remaining));
        headers.insert("RateLimit-Reset", HeaderValue::from(self.reset));
    }
}

#[derive(Debug)]
pub struct RateLimiter {
    limit: u32,
    tokens: f64,
    refilled: Instant,
}

impl RateLimiter {
    pub fn per_hour(limit: u32) -> Self {
        let limit = limit.max(1);
        Self {
            limit,
            tokens: f64::from(limit),
            refilled: Instant::now(),
        }
    }

    fn per_second(&self) -> f64 {
        f64::from(self.limit) / 3600.0
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second()).min(f64::from(self.limit));
        self.refilled = now;
    }

    fn headers(&self, wall: Timestamp) -> RateHeaders {
        let missing = f64::from(self.limit) - self.tokens;
        let until_full = Duration::from_secs_f64((missing / self.per_second()).max(0.0));
        RateHeaders {
            limit: self.limit,
            remaining: self.tokens.floor() as u32,
            reset: wall.plus(until_full).unix_seconds() + u64::from(missing > 0.0),
        }
    }

    /// Spends one request: `Ok` with the headers to send, or `Err` (with the
    /// same headers) when the budget is used up.
    pub fn take(&mut self, now: Instant, wall: Timestamp) -> Result<RateHeaders, RateHeaders> {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(self.headers(wall))
        } else {
            Err(self.headers(wall))
        }
    }

    /// Empties the bucket, as a client that spent its budget would find it.
    pub fn drain(&mut self) {
        self.tokens = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_and_refills() {
        let start = Instant::now();
        let wall = Timestamp::from_millis(1_000_000_000);
        let mut limiter = RateLimiter::per_hour(3);
        limiter.refilled = start;
        let first = limiter.take(start, wall).unwrap();
        assert_eq!((first.limit, first.remaining), (3, 2));
        // One token refills every 1200 s at 3 per hour.
        assert_eq!(first.reset, 1_000_000 + 1200 + 1);
        limiter.take(start, wall).unwrap();
        let last = limiter.take(start, wall).unwrap();
        assert_eq!(last.remaining, 0);
        let refused = limiter.take(start, wall).unwrap_err();
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.reset, 1_000_000 + 3600 + 1);
        let later = start + Duration::from_secs(1200);
        assert_eq!(limiter.take(later, wall).unwrap().remaining, 0);
        assert!(limiter.take(later, wall).is_err());
    }

    #[test]
    fn full_bucket_resets_now() {
        let mut limiter = RateLimiter::per_hour(3600);
        let now = Instant::now();
        let wall = Timestamp::from_millis(5_000_000);
        let headers = limiter.take(now, wall).unwrap();
        assert_eq!(headers.remaining, 3599);
        assert!(headers.reset <= 5_000 + 2);
        let mut map = HeaderMap::new();
        headers.apply(&mut map);
        assert_eq!(map["ratelimit-limit"], "3600");
        assert_eq!(map["ratelimit-remaining"], "3599");
    }
}
