//! A real etcd's snapshot over its gRPC gateway, the JSON face of its
//! client port (plaintext on loopback, see `kube_control_plane::start`):
//! `POST /v3/maintenance/snapshot` with `{}` answers newline-delimited
//! JSON, one object per message of the `Maintenance.Snapshot` stream:
//! `{"result":{"blob":"<base64>","remaining_bytes":"<n>","version":"3.6.0"}}`
//! (as etcd v3.6 answers: `remaining_bytes`, a decimal string, is left
//! out when 0, as proto3 JSON leaves out zeros), or `{"error":{…}}` if
//! the stream broke off. The blobs, in order, are what clientv3 reads: the
//! database, then (a message of its own) its SHA-256.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::Value;
use tonic::Code;

/// How long the whole snapshot may take (a loopback copy of a database
/// of a few megabytes takes well under a second).
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("etcd at {addr}: {source}")]
    Request {
        addr: SocketAddr,
        source: reqwest::Error,
    },
    #[error("cannot make an HTTP client: {0}")]
    Client(String),
    #[error("etcd at {addr} answered HTTP {status}: {body}")]
    Refused {
        addr: SocketAddr,
        status: u16,
        body: String,
    },
    #[error("etcd at {addr} broke off the snapshot: {message}")]
    Broken { addr: SocketAddr, message: String },
    #[error("etcd at {addr} answered no snapshot: {why}")]
    Malformed { addr: SocketAddr, why: String },
}

impl GatewayError {
    pub fn code(&self) -> Code {
        match self {
            Self::Request { .. } | Self::Refused { .. } | Self::Broken { .. } => Code::Unavailable,
            Self::Client(_) | Self::Malformed { .. } => Code::Internal,
        }
    }
}

/// One line of the answer.
#[derive(Deserialize)]
struct Message {
    result: Option<Chunk>,
    error: Option<Value>,
}

/// etcd's `SnapshotResponse` in proto3 JSON (the `header` and `version`
/// fields are of no use here).
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    blob: String,
    #[serde(default)]
    remaining_bytes: Option<String>,
}

/// The snapshot of the etcd whose client URL is `http://<etcd>`: the
/// database and its hash, as etcd sent them (unchecked).
pub async fn snapshot(etcd: SocketAddr) -> Result<Vec<u8>, GatewayError> {
    let request = |source| GatewayError::Request { addr: etcd, source };
    let malformed = |why: String| GatewayError::Malformed { addr: etcd, why };
    let response = client()?
        .post(format!("http://{etcd}/v3/maintenance/snapshot"))
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .map_err(request)?;
    let status = response.status();
    let body = response.bytes().await.map_err(request)?;
    if !status.is_success() {
        return Err(GatewayError::Refused {
            addr: etcd,
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    let mut snapshot = Vec::new();
    let mut remaining = None;
    for line in body.split(|b| *b == b'\n') {
        if line.trim_ascii().is_empty() {
            continue;
        }
        let message: Message =
            serde_json::from_slice(line).map_err(|e| malformed(format!("a line: {e}")))?;
        if let Some(error) = message.error {
            return Err(GatewayError::Broken {
                addr: etcd,
                message: error["message"].as_str().unwrap_or("").to_string(),
            });
        }
        let chunk = message
            .result
            .ok_or_else(|| malformed("a line with neither result nor error".into()))?;
        let blob = STANDARD
            .decode(chunk.blob.as_bytes())
            .map_err(|e| malformed(format!("a blob that is no base64: {e}")))?;
        snapshot.extend_from_slice(&blob);
        remaining = chunk.remaining_bytes;
    }
    match remaining.as_deref() {
        None | Some("0") if !snapshot.is_empty() => Ok(snapshot),
        None | Some("0") => Err(malformed("no data".into())),
        Some(left) => Err(GatewayError::Broken {
            addr: etcd,
            message: format!("it ended with {left} bytes to come"),
        }),
    }
}

/// A plain-HTTP client of loopback. reqwest builds TLS settings even for
/// plain HTTP, and hct-sim installs no process-wide crypto provider: it
/// gets ring's (never used).
pub(crate) fn client() -> Result<reqwest::Client, GatewayError> {
    let bad = |e: &dyn std::fmt::Display| GatewayError::Client(e.to_string());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        // Loopback only: never through a proxy of hct-sim's environment.
        .no_proxy()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| bad(&e))
}
