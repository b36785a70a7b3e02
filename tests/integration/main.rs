//! The provider's integration tests that run no CLI: the plugin protocol and
//! its process, the Hetzner and Talos clients against hct-sim, Talos' own
//! machinery and hcloud's Python library as judges, the docs and the peers.
//! One test target, so that the harness is compiled and linked once; what
//! drives Terraform or OpenTofu lives in `tests/e2e` (`cli_suites` checks).

#[path = "../peers/mod.rs"]
mod peers;
#[path = "../support/mod.rs"]
mod support;

mod cli_suites;
mod docs_fresh;
mod endpoint_steps;
mod hcloud_client;
mod kubeconfig_rpcs;
mod pace;
mod peer_tools;
mod plugin_process;
mod protocol_rpcs;
mod sim_fidelity;
mod snapshot_answers;
mod talos_api;
mod talos_machinery;
mod talos_machinery_client;
