//! What a new 9-node cluster costs: the secrets bundle (RSA-4096 dominates),
//! nine machine configs with user data, and both client configs. Run with
//! `cargo test --release --lib talos::benchmark -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use super::Secrets;
use super::client_config::{admin_kubeconfig, talosconfig};
use super::config::{NodeConfigInput, Role, generate, user_data};
use super::testing::reference_plan;

const ROUNDS: usize = 10;
/// The budget for the whole job, secrets included (release build).
const TARGET: Duration = Duration::from_millis(1500);

fn nine_nodes() -> Vec<NodeConfigInput> {
    let groups = [
        ("cp", Role::ControlPlane),
        ("platform", Role::Worker),
        ("general", Role::Worker),
    ];
    groups
        .iter()
        .flat_map(|(group, role)| {
            (1..=3).map(move |n| NodeConfigInput {
                cluster_name: "demo".into(),
                talos_version: "v1.12.6".parse().unwrap(),
                kubernetes_version: None,
                schematic_id: "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
                    .into(),
                install_disk: None,
                hostname: format!("demo-{group}-{n}"),
                role: *role,
                node_labels: Default::default(),
                node_taints: Default::default(),
                inline_manifests: Vec::new(),
                config_patches: vec![
                    "machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n".into(),
                ],
                interface: None,
                ip: None,
            })
        })
        .collect()
}

#[test]
#[ignore = "timing; run in release with --nocapture"]
fn secrets_and_configs_for_nine_nodes() {
    let plan = reference_plan();
    let nodes = nine_nodes();
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let secrets = Secrets::generate().expect("secrets");
        let secrets_took = start.elapsed();
        for node in &nodes {
            let config = generate(node, &plan, &secrets).expect("config");
            user_data(config.as_str()).expect("fits");
        }
        talosconfig("demo", &plan, &secrets).expect("talosconfig");
        admin_kubeconfig("demo", &plan, &secrets).expect("kubeconfig");
        rounds.push((start.elapsed(), secrets_took));
    }
    rounds.sort();
    let (median, max) = (rounds[ROUNDS / 2], rounds[ROUNDS - 1]);
    let configs_only = rounds
        .iter()
        .map(|(all, secrets)| *all - *secrets)
        .max()
        .unwrap_or_default();
    println!(
        "{ROUNDS} rounds: median {:?} (secrets {:?}), slowest {:?} (secrets {:?}); \
         configs alone at most {configs_only:?}",
        median.0, median.1, max.0, max.1
    );
    assert!(median.0 <= TARGET, "median {:?} over {TARGET:?}", median.0);
}
