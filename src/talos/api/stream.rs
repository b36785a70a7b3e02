//! Answers Talos sends in chunks (`Data`): a file, the kubeconfig archive,
//! an etcd snapshot (`etcd`). Each chunk's metadata is checked (apid reports a
//! proxied node's failure there), so a failure half-way is never taken for
//! the end of the answer.

use tonic::Streaming;

use super::TalosError;
use super::client::{TalosClient, classify_status, metadata_error};
use super::pb;

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
}
