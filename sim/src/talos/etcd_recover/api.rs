//! EtcdRecover as apid serves it: authorized (os:admin), routed with the
//! `node` metadata like any call (apid proxies a client stream one to one
//! as it does a unary call), checked, then the stream read without the
//! world's lock and kept on the node's disk once it ended. Generic over
//! the stream, so that tests send one without a gRPC connection.

use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use super::{MAX_UPLOAD, RecoverError, accepts, keep};
use crate::talos::auth::Call;
use crate::talos::pb;
use crate::talos::service::MachineApi;

fn status(error: RecoverError) -> Status {
    Status::new(error.code(), error.to_string())
}

impl MachineApi {
    /// The upload of a snapshot for a recovering Bootstrap.
    pub async fn etcd_recover_upload<S>(
        &self,
        request: Request<S>,
    ) -> Result<Response<pb::EtcdRecoverResponse>, Status>
    where
        S: Stream<Item = Result<pb::Data, Status>> + Unpin,
    {
        self.authorize(&request, Call::EtcdRecover)?;
        let (at, metadata) = {
            let world = self.world();
            let (at, metadata) = self.target(&world, &request)?;
            accepts(&world, at).map_err(|e| status(e.into()))?;
            (at, metadata)
        };
        let mut stream = request.into_inner();
        let mut snapshot = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            if snapshot.len() + chunk.bytes.len() > MAX_UPLOAD {
                return Err(status(RecoverError::TooLarge));
            }
            snapshot.extend_from_slice(&chunk.bytes);
        }
        keep(&mut self.world(), at, snapshot).map_err(|e| status(e.into()))?;
        Ok(Response::new(pb::EtcdRecoverResponse {
            messages: vec![pb::EtcdRecoverResult { metadata }],
        }))
    }
}
