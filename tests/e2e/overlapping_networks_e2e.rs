//! Two clusters on two private networks of the same range (`10.0.0.0/16`,
//! as Hetzner allows) on one hct-sim, through the real CLI. Each workspace
//! names its network to the sim's SOCKS5 proxy as the user name, as two
//! overlapping sites behind one VPN each need their own route: both
//! clusters come up (their workers find their own control plane's trustd,
//! though the other network has a node at the same address), the plans
//! after are empty, and kubectl through each proxy lists each cluster's
//! own nodes. Without a user name, an address in both networks is refused.

use crate::peers;
use crate::support;

use hct_sim::SimHandle;
use peers::kubectl::{kubeconfig_file, kubectl, run, succeeded};
use support::Workspace;
use support::reference::{pools, workspace};
use support::sim::seeded_network;

/// The reference example with one general worker, named `name`, on
/// `network`, reaching it through the proxy as that network.
fn cluster_on(sim: &SimHandle, network: i64, name: &str) -> Workspace {
    let mut ws = workspace(sim);
    ws.write("pools.auto.tfvars", &pools(1));
    ws.write("network.auto.tfvars", &format!("network_id = {network}\n"));
    ws.write("name.auto.tfvars", &format!("cluster_name = \"{name}\"\n"));
    ws.env("HCT_TALOS_PROXY", proxy_as(sim, network));
    ws
}

fn proxy_as(sim: &SimHandle, network: i64) -> String {
    format!("socks5://{network}@{}", sim.proxy_addr())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_on_overlapping_networks_each_reach_their_own() {
    let sim = support::sim::start().await;
    let seeded = seeded_network(&sim);
    let second = sim
        .modify(|w| {
            let now = hct_sim::clock::Timestamp::now();
            hct_sim::seed::private_network(w, "second", "second-nat", now)
        })
        .unwrap();
    let clusters = [
        (cluster_on(&sim, seeded, "first"), seeded, "first"),
        (cluster_on(&sim, second, "second"), second, "second"),
    ];
    tokio::task::block_in_place(|| {
        for (ws, _, name) in &clusters {
            ws.terraform(&["apply", "-auto-approve"])
                .expect_success(&format!("apply {name}"));
        }
        let kubectl = kubectl();
        for (ws, network, name) in &clusters {
            let (code, out) = support::plan_exit_code(ws, &[]);
            assert_eq!(code, 0, "{name}: the plan after is empty\n{out}");
            let dir = tempfile::tempdir().unwrap();
            let config = kubeconfig_file(&ws.outputs(), &proxy_as(&sim, *network), dir.path());
            let nodes = succeeded(
                &format!("kubectl get nodes of {name}"),
                run(
                    &kubectl,
                    dir.path(),
                    &config,
                    &["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"],
                ),
            );
            let names: Vec<&str> = nodes.split_whitespace().collect();
            assert_eq!(names.len(), 7, "{name}: {names:?}");
            assert!(
                names.iter().all(|n| n.starts_with(&format!("{name}-"))),
                "{name} lists its own nodes only: {names:?}"
            );
        }
        // Without the network's name, the first control plane's address is
        // in both networks: refused, never guessed.
        let (ws, _, _) = &clusters[0];
        let dir = tempfile::tempdir().unwrap();
        let config = kubeconfig_file(&ws.outputs(), &sim.proxy_url(), dir.path());
        let out = run(&kubectl, dir.path(), &config, &["get", "nodes"]);
        assert!(
            !out.status.success(),
            "an address in two networks is not proxied"
        );
    });
}
