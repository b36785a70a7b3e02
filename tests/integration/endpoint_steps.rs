//! The API load balancer's steps against hct-sim when an answer is lost:
//! Hetzner carried out `add_service` (or `add_target`), the answer never
//! came, and the retry is refused as done already
//! (`source_port_already_used`, `target_already_defined`). hct looks again
//! and goes on; the load balancer ends up whole, each service once.

use crate::support;

use std::time::Duration;

use hct::cluster::endpoint::{Endpoint, gaps};
use hct::cluster::wait::Deadline;
use hct::pace::Pace;
use hct_sim::FaultSpec;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_to_a_load_balancer_step_is_done_after_a_fresh_look() {
    let sim = support::sim::start().await;
    let client = support::sim::client(&sim);
    let network_plan = support::plan::with_endpoint(1, "load_balancer");
    let ip = network_plan.load_balancer_ip().unwrap();
    for route in [
        "POST /load_balancers/{id}/actions/add_service",
        "POST /load_balancers/{id}/actions/add_target",
    ] {
        sim.add_fault(
            FaultSpec::parse(&format!(
                r#"{{"route": "{route}", "respond": "timeout", "count": 1, "after_handling": true}}"#
            ))
            .unwrap(),
        );
    }
    let deadline = Deadline::new(
        Duration::from_secs(60),
        CancellationToken::new(),
        Pace::set(Duration::from_millis(50)),
    );
    let network_id = support::sim::seeded_network(&sim);
    let endpoint = Endpoint {
        client: &client,
        cluster: "noreturn",
        network_id,
        location: "nbg1",
        plan: &network_plan,
        deadline: &deadline,
    };
    let id = endpoint.ensure().await.unwrap().unwrap();
    let lbs = client
        .load_balancers(&hct::cluster::naming::cluster_selector("noreturn"))
        .await
        .unwrap();
    assert_eq!(lbs.len(), 1);
    assert_eq!(lbs[0].id, id);
    assert!(gaps(&lbs[0], "noreturn", network_id, ip).is_empty());
    assert_eq!(lbs[0].services.len(), 3, "{:?}", lbs[0].services);
    assert_eq!(lbs[0].targets.len(), 1);
    let faults = sim.faults_json();
    assert_eq!(
        faults["routes"].as_array().map_or(0, Vec::len),
        0,
        "both lost answers happened: {faults}"
    );
}
