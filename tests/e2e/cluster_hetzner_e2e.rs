//! What a cluster needs from Hetzner's side, through a real Terraform or
//! OpenTofu against hct-sim with the reference example: egress through the
//! network's NAT gateway, spread placement groups past Hetzner's 10 servers
//! per group, and an apply at production polling that stays inside a low
//! hourly request budget.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};

use hct_sim::{Sim, SimHandle, SimOptions};
use support::Workspace;
use support::reference::{EXAMPLE, pools, workspace};
use support::{plan_exit_code, unwrapped};

fn nat_gateway(sim: &SimHandle) -> i64 {
    sim.inspect(|w| {
        w.servers
            .values()
            .find(|s| hct_sim::seed::is_seeded(&s.labels) && s.name == hct_sim::seed::NAT_SERVER)
            .map(|s| s.id)
    })
    .expect("the seed's NAT gateway")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_running_nat_gateway_the_nodes_have_no_egress_and_hct_says_so() {
    let sim = support::sim::start().await;
    // The network still routes 0.0.0.0/0 to 10.0.128.2 (so the plan-time
    // check passes), but nothing runs there any more.
    let nat = nat_gateway(&sim);
    sim.modify(|w| {
        w.servers.get_mut(&nat).unwrap().status = hct_sim::resources::servers::ServerStatus::Off
    });
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        let out = ws
            .terraform(&["apply", "-auto-approve", "-var", "create_timeout=6s"])
            .expect_failure("no egress");
        let words = unwrapped(&out.stderr);
        assert!(
            words.contains("Timed out waiting for noreturn-cp-"),
            "{out}"
        );
        assert!(
            words.contains("routes 0.0.0.0/0 to 10.0.128.2, but no running server"),
            "the node's own report of the failed image pull: {out}"
        );
        assert!(words.contains("no egress"), "{out}");
        assert!(words.contains("working NAT gateway"), "{out}");
        // What a node reports while it cannot pull: its services wait.
        let problems: Vec<String> = sim.inspect(|w| {
            w.servers
                .values()
                .filter_map(|s| s.talos.as_ref()?.node.summary.problem.clone())
                .collect()
        });
        assert!(
            !problems.is_empty() && problems.iter().all(|p| p.contains("no egress")),
            "{problems:?}"
        );

        // With the NAT gateway back, the next apply converges.
        sim.modify(|w| {
            w.servers.get_mut(&nat).unwrap().status =
                hct_sim::resources::servers::ServerStatus::Running
        });
        ws.terraform(&["untaint", "hct_cluster.this"])
            .expect_success("untaint");
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply with egress");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");
    });
}

/// Each of the `general` pool's spread placement groups on the sim, by name,
/// with how many servers it holds.
fn general_groups(sim: &SimHandle) -> BTreeMap<String, usize> {
    sim.inspect(|w| {
        w.placement_groups
            .values()
            .filter(|g| g.name.starts_with("noreturn-general-spread-"))
            .map(|g| {
                let members = w
                    .servers
                    .values()
                    .filter(|s| s.placement_group == Some(g.id))
                    .count();
                (g.name.clone(), members)
            })
            .collect()
    })
}

/// The `general` servers on the sim, by name, with their placement group's name.
fn general_servers(sim: &SimHandle) -> BTreeMap<String, String> {
    sim.inspect(|w| {
        w.servers
            .values()
            .filter(|s| s.name.starts_with("noreturn-general-"))
            .map(|s| {
                let group = s
                    .placement_group
                    .and_then(|g| w.placement_groups.get(&g))
                    .map(|g| g.name.clone())
                    .unwrap_or_default();
                (s.name.clone(), group)
            })
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_past_ten_servers_spreads_over_two_groups_and_shrinks_back_to_one() {
    let sim = support::sim::start().await;
    let ws = workspace(&sim);
    tokio::task::block_in_place(|| {
        for (nodes, groups) in [(3, 1), (11, 2), (9, 1)] {
            ws.write("pools.auto.tfvars", &pools(nodes));
            ws.terraform(&["apply", "-auto-approve"])
                .expect_success(&format!("apply with {nodes} general nodes"));
            let on_sim = general_groups(&sim);
            assert_eq!(on_sim.len(), groups, "{nodes} nodes: {on_sim:?}");
            assert!(
                on_sim.values().all(|&n| (1..=10).contains(&n)),
                "{nodes} nodes: a group with no servers or more than 10: {on_sim:?}"
            );
            assert_eq!(on_sim.values().sum::<usize>(), nodes as usize);
            let servers = general_servers(&sim);
            let expected: BTreeSet<String> = (1..=nodes)
                .map(|n| format!("noreturn-general-{n}"))
                .collect();
            assert_eq!(servers.keys().cloned().collect::<BTreeSet<_>>(), expected);
            // Node n sits in group ⌈n / 10⌉.
            for n in 1..=nodes {
                assert_eq!(
                    servers[&format!("noreturn-general-{n}")],
                    format!("noreturn-general-spread-{}", n.div_ceil(10)),
                    "{nodes} nodes: noreturn-general-{n}"
                );
            }
            let (code, out) = plan_exit_code(&ws, &[]);
            assert_eq!(code, 0, "a plan after the apply with {nodes} nodes\n{out}");
        }
    });
}

/// The sim's hourly budget for the production-polling run, far below
/// Hetzner's 3600: the reference cluster's first apply and a plan take
/// about 75 requests at production polling. hct paces itself at the refill
/// rate (24 s a request here) once fewer than 30 are left, so this leaves
/// room for it never to need that, and a 429 would mean it misjudged.
const BUDGET: u32 = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn production_polling_builds_the_cluster_inside_a_low_request_budget() {
    let sim = Sim::start(SimOptions {
        rate_limit: BUDGET,
        ..SimOptions::seeded_fast()
    })
    .await
    .unwrap();
    // The reference workspace without the fast-polling override: the
    // provider's defaults (a first poll after Hetzner's typical duration).
    let mut ws = Workspace::dev_override(&[("main.tf", EXAMPLE)]);
    ws.write("pools.auto.tfvars", &pools(3));
    ws.write(
        "network.auto.tfvars",
        &format!("network_id = {}\n", support::sim::seeded_network(&sim)),
    );
    ws.env("HCLOUD_ENDPOINT", sim.endpoint())
        .env("HCLOUD_TOKEN", sim.token())
        .env("HCT_TALOS_PROXY", sim.proxy_url());
    tokio::task::block_in_place(|| {
        ws.terraform(&["apply", "-auto-approve"])
            .expect_success("apply at production polling");
        let (code, out) = plan_exit_code(&ws, &[]);
        assert_eq!(code, 0, "{out}");
    });
    let requests = sim.requests();
    let limited: Vec<String> = requests
        .iter()
        .filter(|r| r.status == 429)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        limited.is_empty(),
        "hct paces itself before the budget runs out: no 429, got {limited:?}"
    );
    let total = requests.len();
    let mut by_route: BTreeMap<String, u64> = sim.request_counts();
    by_route.retain(|_, n| *n >= 5);
    eprintln!("{total} Hetzner requests; routes with 5 or more: {by_route:#?}");
    assert!(
        total <= BUDGET as usize,
        "{total} requests exceed the budget of {BUDGET}: {by_route:#?}"
    );
}
