//! etcd's cluster API over its JSON gateway (the client port, plaintext on
//! loopback): `POST /v3/cluster/member/{list,add,promote,remove}` and `GET
//! /health`, as `etcd_ring` uses them to join, promote and remove members
//! the way Talos' etcd service does with clientv3. Member IDs are uint64s,
//! which proto3 JSON writes as decimal strings. A member added but not
//! started yet is listed with its peer URLs only (no name, no client
//! URLs).

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::talos::etcd_snapshot::gateway::{self, GatewayError};

/// How long a call may take. A ring with a quorum answers on loopback in
/// milliseconds; one without blocks a change (or `/health`'s read) until
/// etcd's own request timeout, which is not worth waiting for here.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum EtcdApiError {
    #[error(transparent)]
    Client(#[from] GatewayError),
    #[error("etcd at {addr}: {source}")]
    Request {
        addr: SocketAddr,
        source: reqwest::Error,
    },
    /// etcd said no: its gRPC error's message (e.g. "etcdserver:
    /// re-configuration failed due to not enough started members").
    #[error("etcd at {addr} refused member {what}: {message}")]
    Refused {
        addr: SocketAddr,
        what: &'static str,
        message: String,
    },
    #[error("etcd at {addr} answered member {what} with something else: {why}")]
    Malformed {
        addr: SocketAddr,
        what: &'static str,
        why: String,
    },
}

/// A member as etcd lists it (and `/_sim/state` shows it, but its ID).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Member {
    #[serde(rename = "ID", deserialize_with = "decimal", skip_serializing)]
    pub id: u64,
    /// Empty until the member has started.
    #[serde(default)]
    pub name: String,
    #[serde(rename = "peerURLs", default)]
    pub peer_urls: Vec<String>,
    #[serde(rename = "clientURLs", default)]
    pub client_urls: Vec<String>,
    /// Added as a learner and not promoted yet: it follows the log but
    /// neither votes nor counts for the quorum.
    #[serde(rename = "isLearner", default)]
    pub is_learner: bool,
}

impl Member {
    pub fn started(&self) -> bool {
        !self.name.is_empty()
    }

    /// Started and promoted: it votes and counts for the quorum.
    pub fn voter(&self) -> bool {
        self.started() && !self.is_learner
    }
}

fn decimal<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

#[derive(Deserialize)]
struct Members {
    #[serde(default)]
    members: Vec<Member>,
}

/// The members the etcd at `addr` lists, as it knows them (not
/// linearized: it answers without a quorum too).
pub async fn list(addr: SocketAddr) -> Result<Vec<Member>, EtcdApiError> {
    let answer: Members = call(addr, "list", json!({})).await?;
    Ok(answer.members)
}

/// Adds a learner that will listen for peers at `peer_url`, as Talos
/// joins a control plane (MemberAddAsLearner): it cannot cost the ring its
/// quorum while it catches up. The members after that (the new one
/// unnamed), as MemberAdd answers.
pub async fn add_learner(addr: SocketAddr, peer_url: &str) -> Result<Vec<Member>, EtcdApiError> {
    let body = json!({"peerURLs": [peer_url], "isLearner": true});
    let answer: Members = call(addr, "add", body).await?;
    Ok(answer.members)
}

/// Makes learner `id` a voting member; etcd refuses until it has caught
/// up with the leader's log.
pub async fn promote(addr: SocketAddr, id: u64) -> Result<(), EtcdApiError> {
    let _: serde_json::Value = call(addr, "promote", json!({"ID": id.to_string()})).await?;
    Ok(())
}

/// Removes member `id`.
pub async fn remove(addr: SocketAddr, id: u64) -> Result<(), EtcdApiError> {
    let _: serde_json::Value = call(addr, "remove", json!({"ID": id.to_string()})).await?;
    Ok(())
}

/// Whether the etcd at `addr` says it is healthy (`/health`: it has a
/// leader and answers a linearized read, so its ring has a quorum).
pub async fn healthy(addr: SocketAddr) -> bool {
    let Ok(http) = gateway::client() else {
        return false;
    };
    let asked = http
        .get(format!("http://{addr}/health"))
        .timeout(ANSWER_WITHIN)
        .send();
    match asked.await {
        Ok(answer) => answer.text().await.is_ok_and(|t| t.contains("\"true\"")),
        Err(_) => false,
    }
}

/// `POST /v3/cluster/member/<what>` with `body`.
async fn call<T: serde::de::DeserializeOwned>(
    addr: SocketAddr,
    what: &'static str,
    body: serde_json::Value,
) -> Result<T, EtcdApiError> {
    let request = |source| EtcdApiError::Request { addr, source };
    let answer = gateway::client()?
        .post(format!("http://{addr}/v3/cluster/member/{what}"))
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .timeout(ANSWER_WITHIN)
        .send()
        .await
        .map_err(request)?;
    let status = answer.status();
    let bytes = answer.bytes().await.map_err(request)?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| EtcdApiError::Malformed {
            addr,
            what,
            why: format!("{e}: {}", String::from_utf8_lossy(&bytes)),
        })?;
    if !status.is_success() || value.get("error").is_some() {
        let message = value["message"]
            .as_str()
            .or(value["error"].as_str())
            .unwrap_or("no message")
            .to_string();
        return Err(EtcdApiError::Refused {
            addr,
            what,
            message,
        });
    }
    serde_json::from_value(value).map_err(|e| EtcdApiError::Malformed {
        addr,
        what,
        why: e.to_string(),
    })
}
