//! Benchmark: how many Hetzner API requests hct's client needs to create
//! private-only servers and wait until they run, against hct-sim with
//! realistic action durations. Targets: ≤ 6 requests for one server; ≤ 6 per
//! server for 30 created in parallel, with no 429.
//!
//! Run: `cargo bench --bench hcloud_requests` (about a minute).

use std::time::{Duration, Instant};

use hct::hcloud::{Client, ClientConfig, PrivateServer};
use hct::secret::Secret;
use hct_sim::{Profile, Sim, SimOptions};

fn spec(network: i64, n: u32) -> PrivateServer {
    PrivateServer {
        name: format!("bench-{n}"),
        server_type: "cx23".into(),
        location: "nbg1".into(),
        image: "debian-13".into(),
        network,
        ip: format!("10.0.128.{}", 100 + n).parse().unwrap(),
        placement_group: None,
        labels: [("bench".to_string(), "yes".to_string())].into(),
        user_data: None,
        ssh_keys: vec![],
    }
}

async fn run(servers: u32) -> (u64, u64, Duration) {
    let sim = Sim::start(SimOptions {
        seed: true,
        durations: hct_sim::Durations::new(Profile::Realistic),
        ..SimOptions::default()
    })
    .await
    .expect("start hct-sim");
    let network = sim.inspect(|w| {
        w.networks
            .values()
            .next()
            .map(|n| n.id)
            .expect("seeded network")
    });
    let client = Client::new(ClientConfig {
        endpoint: sim.endpoint().parse().expect("endpoint"),
        token: Secret::new(sim.token()),
        pace: hct::pace::Pace::default(),
    })
    .expect("client");
    let baseline: u64 = sim.request_counts().values().sum();
    let started = Instant::now();
    let specs: Vec<_> = (1..=servers).map(|n| spec(network, n)).collect();
    let results = futures_util::future::join_all(
        specs
            .iter()
            .map(|s| client.create_private_server(s, Duration::from_secs(600), |_| {})),
    )
    .await;
    let elapsed = started.elapsed();
    for result in results {
        result.expect("server created");
    }
    let counts = sim.request_counts();
    let total: u64 = counts.values().sum::<u64>() - baseline;
    let rate_limited = counts
        .iter()
        .filter(|(route, _)| route.contains("429"))
        .map(|(_, n)| n)
        .sum();
    println!("  requests by route: {counts:?}");
    sim.shutdown().await.expect("stop hct-sim");
    (total, rate_limited, elapsed)
}

#[tokio::main]
async fn main() {
    println!("hct-sim, realistic durations (create 12 s, attach 3 s, power on 5 s)");
    let (one, _, elapsed) = run(1).await;
    println!(
        "one server: {one} requests in {:.1} s (target <= 6)",
        elapsed.as_secs_f64()
    );
    let (thirty, limited, elapsed) = run(30).await;
    println!(
        "30 servers in parallel: {thirty} requests = {:.2} per server in {:.1} s, {limited} answered 429 (target <= 6 per server, no 429)",
        thirty as f64 / 30.0,
        elapsed.as_secs_f64()
    );
}
