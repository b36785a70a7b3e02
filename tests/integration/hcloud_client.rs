//! hct's Hetzner client against hct-sim: the private-only server flow,
//! adoption instead of duplicates (servers, placement groups), and riding
//! out rate limits, 5xx bursts, locks and failing actions — or giving up
//! with a diagnostic that says why.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use hct::hcloud::{Client, ClientConfig, HcloudError, LabelSelector, PrivateServer};
use hct::secret::Secret;
use hct_sim::{FaultSpec, SimHandle};
use support::sim::{client, labels, private_server as spec, seeded_network, start as sim};

fn servers_named(sim: &SimHandle, name: &str) -> usize {
    sim.inspect(|w| w.servers.values().filter(|s| s.name == name).count())
}

fn count(counts: &BTreeMap<String, u64>, route: &str) -> u64 {
    counts.get(route).copied().unwrap_or(0)
}

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn creates_a_private_only_server_stopped_attached_then_running() {
    let sim = sim().await;
    let client = client(&sim);
    let network = seeded_network(&sim);
    let mut seen = None;
    let server = client
        .create_private_server(
            &spec(network, "test-general-1", "10.0.128.65"),
            TIMEOUT,
            |s| seen = Some(s.id),
        )
        .await
        .unwrap();
    assert_eq!(
        seen,
        Some(server.id),
        "the caller hears of the server as soon as it exists"
    );
    assert_eq!(server.status, "running");

    let fresh = client.server(server.id).await.unwrap().unwrap();
    assert!(
        fresh.public_net.ipv4.is_none() && fresh.public_net.ipv6.is_none(),
        "no public IPs"
    );
    assert_eq!(
        fresh.private_ip(network),
        Some("10.0.128.65".parse().unwrap())
    );
    assert_eq!(fresh.status, "running");
    assert_eq!(
        fresh.labels.get("cluster").map(String::as_str),
        Some("test")
    );

    let selector = LabelSelector::new().eq("cluster", "test").has("role");
    assert_eq!(client.servers(&selector).await.unwrap().len(), 1);
    assert!(
        client
            .servers(&LabelSelector::new().eq("cluster", "other"))
            .await
            .unwrap()
            .is_empty()
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_rerun_adopts_the_labelled_server_instead_of_duplicating_it() {
    let sim = sim().await;
    let client = client(&sim);
    let network = seeded_network(&sim);
    let spec = spec(network, "test-general-2", "10.0.128.66");
    let first = client
        .create_private_server(&spec, TIMEOUT, |_| {})
        .await
        .unwrap();
    let created = client.create_server(&spec).await.unwrap();
    assert!(created.adopted);
    assert_eq!(created.server.id, first.id);
    let again = client
        .create_private_server(&spec, TIMEOUT, |_| {})
        .await
        .unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(servers_named(&sim, "test-general-2"), 1);

    // A server of that name without our labels is someone else's: an error, not adoption.
    let mut stranger = spec.clone();
    stranger.labels = labels(&[("cluster", "another")]);
    let error = client.create_server(&stranger).await.unwrap_err();
    assert_eq!(error.code(), Some("uniqueness_error"));
    assert!(
        error
            .to_diagnostic("creating test-general-2")
            .detail
            .contains("import")
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn rides_out_a_429_storm_5xx_bursts_and_locks_without_duplicate_creates() {
    let sim = sim().await;
    let client = client(&sim);
    let network = seeded_network(&sim);
    for fault in [
        r#"{"route": "POST /servers", "respond": "rate_limited", "count": 3}"#,
        r#"{"route": "POST /servers", "respond": "unavailable", "count": 2}"#,
        r#"{"route": "GET /actions", "respond": "bad_gateway", "count": 2}"#,
        r#"{"route": "POST /servers/{id}/actions/attach_to_network", "respond": "locked", "count": 3}"#,
        r#"{"route": "POST /servers/{id}/actions/poweron", "respond": "server_error", "count": 1}"#,
    ] {
        sim.add_fault(FaultSpec::parse(fault).unwrap());
    }
    let server = client
        .create_private_server(
            &spec(network, "test-general-3", "10.0.128.67"),
            TIMEOUT,
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(server.status, "running");
    assert_eq!(
        servers_named(&sim, "test-general-3"),
        1,
        "retries must not create duplicates"
    );
    let counts = sim.request_counts();
    assert_eq!(
        count(&counts, "POST /servers"),
        6,
        "3 rate-limited + 2 unavailable + 1 created: {counts:?}"
    );
    assert_eq!(
        count(&counts, "POST /servers/{id}/actions/attach_to_network"),
        4,
        "{counts:?}"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn adopts_a_server_whose_create_answer_was_lost() {
    let sim = sim().await;
    let client = client(&sim);
    let network = seeded_network(&sim);
    let spec = spec(network, "test-general-4", "10.0.128.68");
    // The create went through, but its answer never arrived (connection cut):
    // the retry then meets a server of that name with our labels.
    client.create_server(&spec).await.unwrap();
    let server = client
        .create_private_server(&spec, TIMEOUT, |_| {})
        .await
        .unwrap();
    assert_eq!(
        server.private_ip(network),
        Some("10.0.128.68".parse().unwrap())
    );
    assert_eq!(servers_named(&sim, "test-general-4"), 1);
    sim.shutdown().await.unwrap();
}

/// The attach went through but its answer was lost (a 504 from a proxy):
/// the retry is told `server_already_attached`, which is success when the
/// server is attached at the planned IP, and an error naming both IPs when not.
#[tokio::test]
async fn an_attach_whose_answer_was_lost_is_not_a_failure() {
    let sim = sim().await;
    let client = client(&sim);
    let network = seeded_network(&sim);
    let lose_attach_answer = || {
        FaultSpec::parse(
            r#"{"route": "POST /servers/{id}/actions/attach_to_network",
                "respond": "timeout", "count": 1, "after_handling": true}"#,
        )
        .unwrap()
    };
    sim.add_fault(lose_attach_answer());
    let server = client
        .create_private_server(
            &spec(network, "test-general-5", "10.0.128.69"),
            TIMEOUT,
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(server.status, "running");
    let fresh = client.server(server.id).await.unwrap().unwrap();
    assert_eq!(
        fresh.private_ip(network),
        Some("10.0.128.69".parse().unwrap())
    );
    let counts = sim.request_counts();
    // Retried; a retry while the first attach still runs is `locked` and
    // waited out (how many depends on the poll interval).
    let attaches = count(&counts, "POST /servers/{id}/actions/attach_to_network");
    assert!(
        (2..=4).contains(&attaches),
        "the lost answer was retried: {counts:?}"
    );
    sim.shutdown().await.unwrap();
}

/// The placement group was created but its answer lost: the retry's
/// `uniqueness_error` adopts the group when it carries our labels, and stays
/// an error when the group of that name is someone else's.
#[tokio::test]
async fn a_placement_group_whose_answer_was_lost_is_adopted() {
    let sim = sim().await;
    let client = client(&sim);
    sim.add_fault(
        FaultSpec::parse(
            r#"{"route": "POST /placement_groups",
                "respond": "timeout", "count": 1, "after_handling": true}"#,
        )
        .unwrap(),
    );
    let ours = labels(&[("managed-by", "hct"), ("cluster", "t")]);
    let group = client
        .create_spread_group("t-cp-spread-1", &ours)
        .await
        .unwrap();
    let on_sim: Vec<(String, i64)> = sim.inspect(|w| {
        w.placement_groups
            .values()
            .map(|g| (g.name.clone(), g.id))
            .collect()
    });
    assert_eq!(on_sim, vec![("t-cp-spread-1".to_string(), group.id)]);
    assert_eq!(count(&sim.request_counts(), "POST /placement_groups"), 2);
    let error = client
        .create_spread_group("t-cp-spread-1", &labels(&[("cluster", "other")]))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some("uniqueness_error"), "{error}");
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn gives_up_with_diagnostics_that_say_what_to_do() {
    let sim = sim().await;
    let network = seeded_network(&sim);

    // A failing action names its command.
    sim.fail_next_actions("attach_to_network", 1);
    let error = client(&sim)
        .create_private_server(
            &spec(network, "test-general-5", "10.0.128.69"),
            TIMEOUT,
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, HcloudError::ActionFailed { ref command, .. } if command == "attach_to_network"),
        "{error}"
    );
    assert_eq!(
        servers_named(&sim, "test-general-5"),
        1,
        "the server exists and was reported to the caller"
    );

    // A taken IP: not retried, and the diagnostic explains it.
    client(&sim)
        .create_private_server(
            &spec(network, "test-general-6", "10.0.128.70"),
            TIMEOUT,
            |_| {},
        )
        .await
        .unwrap();
    let error = client(&sim)
        .create_private_server(
            &spec(network, "test-general-7", "10.0.128.70"),
            TIMEOUT,
            |_| {},
        )
        .await
        .unwrap_err();
    let diagnostic = error.to_diagnostic("attaching test-general-7");
    assert_eq!(error.code(), Some("ip_not_available"), "{error}");
    assert!(
        diagnostic.detail.contains("network plan"),
        "{}",
        diagnostic.detail
    );
    assert!(
        diagnostic.detail.contains("correlation id"),
        "{}",
        diagnostic.detail
    );

    // A wrong token: unauthorized at once, and the token never appears.
    let wrong = Client::new(ClientConfig {
        endpoint: sim.endpoint().parse().unwrap(),
        token: Secret::new("not-the-token"),
        pace: hct::pace::Pace::set(Duration::from_millis(50)),
    })
    .unwrap();
    let error = wrong.network(network).await.unwrap_err();
    assert_eq!(error.code(), Some("unauthorized"));
    let text = format!(
        "{error} {error:?} {}",
        error.to_diagnostic("reading the network").detail
    );
    assert!(text.contains("HCLOUD_TOKEN"), "{text}");
    assert!(
        !text.contains("not-the-token"),
        "secrets never appear in errors"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn thirty_servers_in_parallel_share_their_polls() {
    let sim = sim().await;
    let client = client(&sim);
    let network = seeded_network(&sim);
    let specs: Vec<PrivateServer> = (1..=30)
        .map(|n| {
            spec(
                network,
                &format!("test-many-{n}"),
                &format!("10.0.128.{}", 100 + n),
            )
        })
        .collect();
    let created = futures_util::future::join_all(
        specs
            .iter()
            .map(|s| client.create_private_server(s, TIMEOUT, |_| {})),
    )
    .await;
    for result in &created {
        assert_eq!(result.as_ref().unwrap().status, "running");
    }
    let counts = sim.request_counts();
    let total: u64 = counts.values().sum();
    // 3 calls per server; the waits of all servers share batched polls.
    assert_eq!(count(&counts, "POST /servers"), 30);
    assert!(
        count(&counts, "GET /actions") < 30,
        "polls are batched: {counts:?}"
    );
    assert!(
        total <= 6 * 30,
        "{total} requests for 30 servers: {counts:?}"
    );
    assert!(
        !counts.keys().any(|route| route.contains("429")),
        "{counts:?}"
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn lists_follow_pagination() {
    let sim = sim().await;
    let client = client(&sim);
    for n in 0..55 {
        client
            .create_ssh_key(
                &format!("key-{n}"),
                &format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{n:0>43} test"),
                &labels(&[("purpose", "paging")]),
            )
            .await
            .unwrap();
    }
    let keys = client
        .ssh_keys(&LabelSelector::new().eq("purpose", "paging"))
        .await
        .unwrap();
    assert_eq!(keys.len(), 55);
    assert!(
        count(&sim.request_counts(), "GET /ssh_keys") >= 2,
        "two pages at 50 per page"
    );
    sim.shutdown().await.unwrap();
}

/// The scenario the fidelity test runs with Hetzner's own Python library,
/// run with hct's client: network, placement group, private-only server,
/// label-selector listing across pages, rescue, snapshot with labels, lookup
/// by selector, and deleting everything.
#[tokio::test]
async fn the_fidelity_scenario_with_our_own_client() {
    let sim = sim().await;
    let client = client(&sim);
    let network_id = seeded_network(&sim);
    let network = client.network(network_id).await.unwrap().unwrap();
    assert_eq!(network.ip_range, "10.0.0.0/16");
    assert_eq!(network.subnets[0].ip_range, "10.0.128.0/24");
    assert_eq!(network.subnets[0].gateway, "10.0.0.1");
    assert!(network.routes.iter().any(|r| r.destination == "0.0.0.0/0"));
    assert!(client.network(999_999).await.unwrap().is_none());

    let ours = labels(&[("scenario", "fidelity")]);
    let group = client
        .create_spread_group("fidelity-spread", &ours)
        .await
        .unwrap();
    assert_eq!(group.kind, "spread");
    let mut server_spec = spec(network_id, "fidelity-1", "10.0.128.200");
    server_spec.placement_group = Some(group.id);
    server_spec.labels = ours.clone();
    let server = client
        .create_private_server(&server_spec, TIMEOUT, |_| {})
        .await
        .unwrap();

    for n in 0..52 {
        client
            .create_spread_group(&format!("fidelity-extra-{n}"), &ours)
            .await
            .unwrap();
    }
    let selector = LabelSelector::new().eq("scenario", "fidelity");
    assert_eq!(
        client.placement_groups(&selector).await.unwrap().len(),
        53,
        "across two pages"
    );

    let (_, rescue) = client.enable_rescue(server.id, &[]).await.unwrap();
    client
        .wait_for_actions(vec![rescue], "enabling rescue", TIMEOUT)
        .await
        .unwrap();
    assert!(
        client
            .server(server.id)
            .await
            .unwrap()
            .unwrap()
            .rescue_enabled
    );

    let snapshot_labels = labels(&[("os", "talos"), ("version", "v9.9.9"), ("arch", "amd64")]);
    let (image, action) = client
        .create_snapshot(server.id, "fidelity snapshot", &snapshot_labels)
        .await
        .unwrap();
    client
        .wait_for_actions(vec![action.expect("answered")], "snapshotting", TIMEOUT)
        .await
        .unwrap();
    let found = client
        .snapshots(
            &LabelSelector::new()
                .eq("os", "talos")
                .eq("version", "v9.9.9"),
        )
        .await
        .unwrap();
    assert_eq!(
        found.iter().map(|i| i.id).collect::<Vec<_>>(),
        vec![image.id]
    );
    assert_eq!(found[0].status, "available");
    assert_eq!(found[0].architecture, "x86");
    let relabelled = client.set_image_labels(image.id, &ours).await.unwrap();
    assert_eq!(relabelled.labels, ours);

    let deleted = client.delete_server(server.id).await.unwrap().unwrap();
    client
        .wait_for_actions(vec![deleted], "deleting", TIMEOUT)
        .await
        .unwrap();
    assert!(client.server(server.id).await.unwrap().is_none());
    assert!(
        client.delete_server(server.id).await.unwrap().is_none(),
        "gone is gone"
    );
    client.delete_image(image.id).await.unwrap();
    assert!(client.image(image.id).await.unwrap().is_none());
    for group in client.placement_groups(&selector).await.unwrap() {
        client.delete_placement_group(group.id).await.unwrap();
    }
    assert!(client.placement_groups(&selector).await.unwrap().is_empty());
    sim.shutdown().await.unwrap();
}
