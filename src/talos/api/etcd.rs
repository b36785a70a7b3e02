//! The etcd calls of the machine API: Bootstrap (empty, or recovering
//! from an uploaded snapshot), the member list, and snapshots taken
//! (`EtcdSnapshot`) and uploaded (`EtcdRecover`).

use tonic::Code;

use super::answers::{Bootstrapped, EtcdMember};
use super::client::{TalosClient, metadata_error};
use super::stream::DataStream;
use super::{TalosError, pb};

/// Bytes per message of an upload.
const UPLOAD_CHUNK: usize = 64 * 1024;

impl TalosClient {
    /// Bootstraps etcd on this control-plane node. Done already is success.
    pub async fn bootstrap(&mut self) -> Result<Bootstrapped, TalosError> {
        self.send_bootstrap(false).await
    }

    /// Bootstraps etcd from the snapshot uploaded with
    /// [`TalosClient::etcd_recover`], its hash checked by Talos too.
    pub async fn bootstrap_recovering(&mut self) -> Result<Bootstrapped, TalosError> {
        self.send_bootstrap(true).await
    }

    async fn send_bootstrap(&mut self, recover_etcd: bool) -> Result<Bootstrapped, TalosError> {
        let request = pb::BootstrapRequest {
            recover_etcd,
            recover_skip_hash_check: false,
        };
        match self.inner.bootstrap(self.request(request)).await {
            Ok(_) => Ok(Bootstrapped::Now),
            Err(status) if status.code() == Code::AlreadyExists => Ok(Bootstrapped::Already),
            Err(status)
                if status.code() == Code::FailedPrecondition
                    && status.message().contains("control plane node") =>
            {
                Err(TalosError::NotControlPlane {
                    node: self.node.clone(),
                })
            }
            Err(status) => Err(self.rejected("Bootstrap", status)),
        }
    }

    pub async fn etcd_members(&mut self) -> Result<Vec<EtcdMember>, TalosError> {
        let response = self
            .inner
            .etcd_member_list(self.request(pb::EtcdMemberListRequest { query_local: false }))
            .await
            .map_err(|s| self.rejected("EtcdMemberList", s))?
            .into_inner();
        Ok(response
            .messages
            .into_iter()
            .flat_map(|m| m.members)
            .map(|m| EtcdMember {
                id: m.id,
                hostname: m.hostname,
                is_learner: m.is_learner,
            })
            .collect())
    }

    /// Uploads an etcd snapshot (as [`TalosClient::etcd_snapshot`] gives
    /// it) for a Bootstrap that recovers from it.
    pub async fn etcd_recover(&mut self, snapshot: &[u8]) -> Result<(), TalosError> {
        let chunks: Vec<pb::Data> = snapshot
            .chunks(UPLOAD_CHUNK)
            .map(|bytes| pb::Data {
                metadata: None,
                bytes: bytes.to_vec(),
            })
            .collect();
        let response = self
            .inner
            .etcd_recover(self.request(tokio_stream::iter(chunks)))
            .await
            .map_err(|s| self.rejected("EtcdRecover", s))?
            .into_inner();
        for message in &response.messages {
            metadata_error(&self.node, "EtcdRecover", message.metadata.as_ref())?;
        }
        Ok(())
    }

    /// A snapshot of the node's etcd (control planes only), as etcd gives
    /// it: the database, then its SHA-256.
    pub async fn etcd_snapshot(&mut self) -> Result<DataStream, TalosError> {
        let stream = self
            .inner
            .etcd_snapshot(self.request(pb::EtcdSnapshotRequest {}))
            .await
            .map_err(|s| self.rejected("EtcdSnapshot", s))?
            .into_inner();
        Ok(self.data_stream("EtcdSnapshot", stream))
    }
}
