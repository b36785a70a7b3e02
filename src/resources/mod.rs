//! The Terraform data sources and managed resources hct serves, one module
//! each, and the list of them ([`provider`]).
//!
//! - `network_plan`: `data "hct_network_plan"` (the address plan, no I/O).
//! - `talos_image`: `resource` and `data "hct_talos_image"`.
//! - `cluster`: `resource "hct_cluster"` (the control plane).
//! - `cluster_secrets`: `resource "hct_cluster_secrets"` (the secrets and
//!   settings the cluster and its pools share, made before either).
//! - `worker_pool`: `resource "hct_worker_pool"`.
//! - `kubeconfig`: `ephemeral "hct_kubeconfig"` (short-lived admin
//!   credentials for the helm and kubernetes providers).
//! - `etcd_snapshots`: `data "hct_etcd_snapshots"` (a cluster's etcd
//!   snapshots in a bucket); `s3_bucket`: the `bucket` attribute it shares
//!   with `etcd_backup`; `snapshot_destination`: `etcd_backup` itself (a
//!   directory or a bucket, and the age recipients), which `hct_cluster`
//!   and `hct_etcd_snapshot` share.
//! - `etcd_snapshot`: `action "hct_etcd_snapshot"` (an etcd snapshot when
//!   a person invokes it).
//! - `node_group`: the lifecycle the cluster and pool resources share (the
//!   node list in state, plan, apply, drift, import); `labels`, `timeouts`
//!   and `values`: their shared attribute rules and helpers.

pub mod cluster;
pub mod cluster_secrets;
pub mod etcd_snapshot;
pub mod etcd_snapshots;
pub mod kubeconfig;
pub mod labels;
pub mod network_plan;
pub mod node_group;
pub mod s3_bucket;
pub mod snapshot_destination;
pub mod talos_image;
pub mod timeouts;
pub mod values;
pub mod worker_pool;

use std::sync::Arc;

use crate::provider::Provider;

/// hct as shipped: every data source and resource.
pub fn provider() -> Provider {
    Provider::new(
        vec![
            Arc::new(etcd_snapshots::EtcdSnapshotsDataSource),
            Arc::new(network_plan::NetworkPlanDataSource),
            Arc::new(talos_image::data_source::TalosImageDataSource),
        ],
        vec![
            Arc::new(cluster::ClusterResource::new()),
            Arc::new(cluster_secrets::ClusterSecretsResource),
            Arc::new(worker_pool::WorkerPoolResource::new()),
            Arc::new(talos_image::TalosImageResource),
        ],
    )
    .with_ephemeral_resources(vec![Arc::new(kubeconfig::KubeconfigEphemeral)])
    .with_actions(vec![Arc::new(etcd_snapshot::EtcdSnapshotAction)])
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_write_only_attribute_has_a_path_hct_can_null() {
        let provider = super::provider();
        for resource in provider.resources() {
            // Panics on one it could not keep out of plan and state.
            resource.schema().write_only_paths();
        }
    }
}
