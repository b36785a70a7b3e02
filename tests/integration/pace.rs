//! The provider's retry waits against hct-sim: production's backoff, and
//! the same scaled down by a shorter poll interval (`src/pace.rs`). In the
//! `serial` test group (.config/nextest.toml): it measures time.

use std::time::Duration;

use hct::pace::Pace;
use hct_sim::FaultSpec;

use crate::support::sim::{client_paced, seeded_network, start as sim};

/// Reads the seeded network through two `503`s with `pace`; how long it took.
async fn read_through_two_503s(pace: Pace) -> Duration {
    let sim = sim().await;
    let network = seeded_network(&sim);
    let client = client_paced(&sim, pace);
    sim.add_fault(
        FaultSpec::parse(
            r#"{"route": "GET /networks/{id}", "respond": "unavailable", "count": 2}"#,
        )
        .unwrap(),
    );
    let started = tokio::time::Instant::now();
    client.network(network).await.unwrap();
    let took = started.elapsed();
    assert_eq!(sim.request_counts().get("GET /networks/{id}"), Some(&3));
    sim.shutdown().await.unwrap();
    took
}

/// Production backs off from 250 ms (doubling, with 50-100 % jitter): two
/// retries wait 0.75-1.5 s. A poll interval of 50 ms scales that to a tenth.
#[tokio::test]
async fn retries_back_off_as_in_production_unless_a_shorter_poll_interval_is_set() {
    let production = read_through_two_503s(Pace::default()).await;
    assert!(
        production >= Duration::from_millis(700),
        "production backoff: {production:?}"
    );
    let fast = read_through_two_503s(Pace::set(Duration::from_millis(50))).await;
    assert!(fast < Duration::from_millis(600), "50 ms pace: {fast:?}");
}
