//! The etcd calls of the machine API: Bootstrap (empty, or recovering
//! from an uploaded snapshot), the member list, and snapshots taken
//! (`EtcdSnapshot`) and uploaded (`EtcdRecover`).

use std::time::Duration;

use tonic::{Code, Status, TimeoutExpired};

use super::answers::{Bootstrapped, EtcdMember, EtcdMembers};
use super::client::{TalosClient, metadata_error};
use super::stream::DataStream;
use super::{TalosError, pb};

/// Bytes per message of an upload.
const UPLOAD_CHUNK: usize = 64 * 1024;

/// The failures of a member list that are answers about etcd (see
/// [`TalosClient::etcd_members`]); None for every other one.
fn failure_as_answer(status: &Status) -> Option<EtcdMembers> {
    let message = status.message();
    match status.code() {
        Code::DeadlineExceeded => Some(EtcdMembers::NoneReachable(message.to_string())),
        // The client's own end of the deadline (tonic's grpc-timeout).
        Code::Cancelled if is_own_timeout(status) => {
            Some(EtcdMembers::NoneReachable(message.to_string()))
        }
        _ if message.contains("no controlplane endpoints discovered yet") => {
            Some(EtcdMembers::NoneReachable(message.to_string()))
        }
        _ if message.contains("etcdserver: no leader") => {
            Some(EtcdMembers::NoLeader(message.to_string()))
        }
        _ => None,
    }
}

/// tonic's own end of a call at its `grpc-timeout`, before the server's.
fn is_own_timeout(status: &Status) -> bool {
    status.code() == Code::Cancelled && status.message() == TimeoutExpired(()).to_string()
}

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

    /// The members of the cluster's etcd as this control plane reaches it
    /// (`query_local: false`: through every control-plane endpoint Talos
    /// knows, so a node whose own etcd is empty or down still lists a
    /// running cluster's members). `within` bounds the call: Talos blocks
    /// until the deadline while no etcd answers, and that deadline is the
    /// answer [`EtcdMembers::NoneReachable`]. Talos' "no endpoints
    /// discovered yet" means the same; etcd's "no leader" means an etcd
    /// without quorum ([`EtcdMembers::NoLeader`]). Every other failure is
    /// an error: no answer, to be asked again, never taken for "no etcd".
    pub async fn etcd_members(&mut self, within: Duration) -> Result<EtcdMembers, TalosError> {
        let mut request = self.request(pb::EtcdMemberListRequest { query_local: false });
        // Sent as `grpc-timeout`: Talos' context ends there, and so does
        // the client's wait should the server not answer in time.
        request.set_timeout(within);
        let response = match self.inner.etcd_member_list(request).await {
            Ok(response) => response.into_inner(),
            Err(status) => {
                return match failure_as_answer(&status) {
                    Some(EtcdMembers::NoneReachable(why)) if is_own_timeout(&status) => {
                        self.confirm_no_etcd(why).await
                    }
                    Some(members) => Ok(members),
                    None => Err(self.rejected("EtcdMemberList", status)),
                };
            }
        };
        Ok(EtcdMembers::Listed(
            response
                .messages
                .into_iter()
                .flat_map(|m| m.members)
                .map(|m| EtcdMember {
                    id: m.id,
                    hostname: m.hostname,
                    is_learner: m.is_learner,
                })
                .collect(),
        ))
    }

    /// When the deadline ended on hct's side (its clock starts first, so
    /// against Talos it usually does), "no etcd reachable" stands only if
    /// the node then answers ServiceList with its own etcd not running: a
    /// node that stalls ends a call the same way. Anything else is no
    /// answer. Talos' own DeadlineExceeded needs no such check.
    async fn confirm_no_etcd(&mut self, why: String) -> Result<EtcdMembers, TalosError> {
        let services = self.services().await?;
        match services.iter().find(|s| s.id == "etcd") {
            Some(etcd) if etcd.state == "Running" => Err(self.protocol(
                "EtcdMemberList",
                &format!("no etcd answered ({why}), yet this node's etcd service runs"),
            )),
            _ => Ok(EtcdMembers::NoneReachable(why)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn said(code: Code, message: &str) -> Option<EtcdMembers> {
        failure_as_answer(&Status::new(code, message))
    }

    #[test]
    fn only_a_deadline_or_no_endpoints_mean_no_etcd_and_no_leader_means_one() {
        let none = |m: &str| Some(EtcdMembers::NoneReachable(m.to_string()));
        assert_eq!(
            said(Code::DeadlineExceeded, "context deadline exceeded"),
            none("context deadline exceeded")
        );
        assert_eq!(
            said(Code::Cancelled, "Timeout expired"),
            none("Timeout expired"),
            "tonic's own end of the grpc-timeout"
        );
        assert_eq!(
            said(Code::Unknown, "no controlplane endpoints discovered yet"),
            none("no controlplane endpoints discovered yet")
        );
        assert_eq!(
            said(Code::Unknown, "etcdserver: no leader"),
            Some(EtcdMembers::NoLeader("etcdserver: no leader".into()))
        );
        for (code, message) in [
            (Code::Unavailable, "connection refused"),
            (Code::Cancelled, "operation was canceled"),
            (Code::PermissionDenied, "not authorized"),
            (
                Code::Unimplemented,
                "member list is only available on control plane nodes",
            ),
            (Code::Unknown, "etcdserver: request timed out"),
        ] {
            assert_eq!(said(code, message), None, "{code:?} {message}");
        }
    }
}
