//! One request budget per provider instance. Hetzner allows 3600 requests an
//! hour per project, refilled at one per second, and reports what is left in
//! `RateLimit-Remaining`. When the budget runs low, requests are paced at the
//! refill rate instead of running into 429s.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// Below this many remaining requests, hct paces itself.
const LOW_WATER: i64 = 30;

#[derive(Debug)]
pub struct RateBudget {
    state: Mutex<BudgetState>,
}

#[derive(Debug)]
struct BudgetState {
    limit: i64,
    remaining: i64,
    /// When the next paced request may go out.
    next_slot: Instant,
}

impl Default for RateBudget {
    fn default() -> Self {
        Self {
            state: Mutex::new(BudgetState {
                limit: 3600,
                remaining: 3600,
                next_slot: Instant::now(),
            }),
        }
    }
}

impl RateBudget {
    /// How long one request's worth of budget takes to refill.
    async fn refill_interval(&self) -> Duration {
        let limit = self.state.lock().await.limit.max(1);
        Duration::from_secs_f64(3600.0 / limit as f64)
    }

    /// Waits, if the budget is low, until this request may go out.
    pub async fn acquire(&self) {
        let interval = self.refill_interval().await;
        let wait_until = {
            let mut state = self.state.lock().await;
            if state.remaining > LOW_WATER {
                state.remaining -= 1;
                return;
            }
            let now = Instant::now();
            let slot = state.next_slot.max(now);
            state.next_slot = slot + interval;
            slot
        };
        tokio::time::sleep_until(wait_until).await;
    }

    /// Records the budget the API reported.
    pub async fn observe(&self, limit: Option<i64>, remaining: Option<i64>) {
        let mut state = self.state.lock().await;
        if let Some(limit) = limit {
            state.limit = limit;
        }
        if let Some(remaining) = remaining {
            state.remaining = remaining;
        }
    }

    /// How long to wait after a 429 before trying again.
    pub async fn backoff_after_429(&self, reset_in: Option<Duration>) -> Duration {
        let interval = self.refill_interval().await;
        self.state.lock().await.remaining = 0;
        // A few tokens' worth, not the full reset: the bucket refills steadily.
        let wait = interval * 2;
        reset_in.map_or(wait, |reset| wait.min(reset.max(interval)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn paces_requests_once_the_budget_runs_low() {
        let budget = RateBudget::default();
        let start = Instant::now();
        budget.acquire().await;
        assert_eq!(start.elapsed(), Duration::ZERO, "plenty left: no wait");

        budget.observe(Some(3600), Some(5)).await;
        for _ in 0..3 {
            budget.acquire().await;
        }
        // Three paced requests at one per second: the third waits two seconds.
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn backs_off_a_few_refills_after_429() {
        let budget = RateBudget::default();
        budget.observe(Some(7200), None).await;
        assert_eq!(budget.backoff_after_429(None).await, Duration::from_secs(1));
        assert_eq!(
            budget
                .backoff_after_429(Some(Duration::from_millis(100)))
                .await,
            Duration::from_millis(500)
        );
    }
}
