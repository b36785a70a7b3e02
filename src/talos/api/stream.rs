//! Answers Talos sends in chunks (`Data`): a file, the kubeconfig archive,
//! an etcd snapshot; and the one upload, a snapshot to recover etcd from. Each chunk's metadata is checked (apid reports a
//! proxied node's failure there), so a failure half-way is never taken for
//! the end of the answer.

use tonic::Streaming;

use super::TalosError;
use super::client::{TalosClient, classify_status, metadata_error};
use super::pb;

/// Bytes per message of an upload.
const UPLOAD_CHUNK: usize = 64 * 1024;

/// A streamed answer of one node, read chunk by chunk.
pub struct DataStream {
    node: String,
    call: &'static str,
    inner: Streaming<pb::Data>,
}

impl DataStream {
    /// The next chunk; None at the end of the answer.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, TalosError> {
        let node = &self.node;
        let call = self.call;
        let Some(chunk) = self
            .inner
            .message()
            .await
            .map_err(|status| classify_status(node, call, status))?
        else {
            return Ok(None);
        };
        metadata_error(node, call, chunk.metadata.as_ref())?;
        Ok(Some(chunk.bytes))
    }

    /// The whole answer.
    pub async fn collect(mut self) -> Result<Vec<u8>, TalosError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next().await? {
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

impl TalosClient {
    pub(super) fn data_stream(&self, call: &'static str, inner: Streaming<pb::Data>) -> DataStream {
        DataStream {
            node: self.node.clone(),
            call,
            inner,
        }
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
