//! The end-to-end suites: each module drives a real CLI (Terraform, or
//! OpenTofu with `HCT_CLI=tofu`) against the provider cargo built, mostly on
//! hct-sim. One test target, so that `tests/support` and `tests/peers` are
//! compiled and linked once; `scripts/test` runs this target under both CLIs
//! at once. A suite is a module: `"$(scripts/ensure-rust-tool cargo-nextest)" nextest run
//! --test e2e -E 'test(/^kube_e2e::/)'`, or `cargo test --test e2e kube_e2e::`.

#[path = "../peers/mod.rs"]
mod peers;
#[path = "../support/mod.rs"]
mod support;

mod approver_e2e;
mod backup_e2e;
mod bring_up_e2e;
mod bucket_backup_e2e;
mod cluster_e2e;
mod cluster_hetzner_e2e;
mod complete_e2e;
mod debug_mode_e2e;
mod endpoint_e2e;
mod etcd_snapshot_action_e2e;
mod fault_matrix;
mod kube_e2e;
mod kubeconfig_e2e;
mod kubectl_e2e;
mod mutations;
mod network_plan_e2e;
mod never_lose_e2e;
mod overlapping_networks_e2e;
mod packaging;
mod real_kube_e2e;
mod security_e2e;
mod talos_image_e2e;
mod talos_image_resource_e2e;
