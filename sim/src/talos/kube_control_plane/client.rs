//! Requests to a ring's real kube-apiserver as one user: a client
//! certificate (the emulated kubelets as `system:node:<name>`, Talos'
//! bootstrap manifests and readiness checks as an admin) or a bootstrap
//! token (a kubelet's TLS bootstrap). JSON in, status and JSON out.

use std::sync::Arc;
use std::time::Duration;

use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use serde_json::Value;

use crate::talos::pki::{CertificateAuthority, IssuedCertificate, PkiError};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("bad credentials: {0}")]
    Credentials(String),
    #[error("{0}")]
    Pki(#[from] PkiError),
    #[error("{method} {path}: {source}")]
    Request {
        method: String,
        path: String,
        source: reqwest::Error,
    },
}

/// An answer: the HTTP status and the body (JSON, or null).
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `HTTP <status>: <the Status' message>`, for an answer that is not ok.
    pub fn why(&self) -> String {
        format!(
            "HTTP {}: {}",
            self.status,
            self.body["message"].as_str().unwrap_or("")
        )
    }

    /// The body when ok, else what went wrong doing `what`.
    pub fn into_result(self, what: &str) -> Result<Value, String> {
        if self.ok() {
            Ok(self.body)
        } else {
            Err(format!("cannot {what}: {}", self.why()))
        }
    }
}

/// Who a client is.
enum Credentials<'a> {
    Certificate(&'a IssuedCertificate),
    Token(&'a str),
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// A client of the API server at `base` (`https://127.0.0.1:port`) as
    /// the holder of `user`, trusting `ca`.
    pub fn new(
        base: &str,
        ca: &CertificateAuthority,
        user: &IssuedCertificate,
    ) -> Result<Self, ClientError> {
        Self::build(base, ca, Credentials::Certificate(user))
    }

    /// A client of the API server at `base` with a bearer token (a
    /// kubelet's bootstrap token), trusting `ca`.
    pub fn with_token(
        base: &str,
        ca: &CertificateAuthority,
        token: &str,
    ) -> Result<Self, ClientError> {
        Self::build(base, ca, Credentials::Token(token))
    }

    fn build(
        base: &str,
        ca: &CertificateAuthority,
        user: Credentials<'_>,
    ) -> Result<Self, ClientError> {
        let bad = |e: &dyn std::fmt::Display| ClientError::Credentials(e.to_string());
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_slice_iter(ca.certificate.as_bytes()) {
            roots
                .add(certificate.map_err(|e| bad(&e))?)
                .map_err(|e| bad(&e))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(&e))?
            .with_root_certificates(roots);
        let mut headers = reqwest::header::HeaderMap::new();
        let tls = match user {
            Credentials::Certificate(user) => {
                let chain: Vec<CertificateDer<'static>> =
                    CertificateDer::pem_slice_iter(user.certificate.as_bytes())
                        .collect::<Result<_, _>>()
                        .map_err(|e| bad(&e))?;
                let key = PrivateKeyDer::from_pem_slice(user.key.expose().as_bytes())
                    .map_err(|e| bad(&e))?;
                tls.with_client_auth_cert(chain, key).map_err(|e| bad(&e))?
            }
            Credentials::Token(token) => {
                let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| {
                        ClientError::Credentials("a token that is no header value".into())
                    })?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
                tls.with_no_client_auth()
            }
        };
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .default_headers(headers)
            // Loopback only: never through a proxy of hct-sim's environment.
            .no_proxy()
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| bad(&e))?;
        Ok(Self {
            http,
            base: base.to_string(),
        })
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> Result<Answer, ClientError> {
        let wrap = |source| ClientError::Request {
            method: method.to_string(),
            path: path.to_string(),
            source,
        };
        let method_value =
            reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut request = self
            .http
            .request(method_value, format!("{}{path}", self.base))
            .header("Accept", "application/json");
        if let Some(body) = body {
            request = request
                .header("Content-Type", content_type)
                .body(body.to_string());
        }
        let response = request.send().await.map_err(wrap)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(wrap)?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Answer { status, body })
    }

    pub async fn get(&self, path: &str) -> Result<Answer, ClientError> {
        self.call("GET", path, "", None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Answer, ClientError> {
        self.call("POST", path, "application/json", Some(body))
            .await
    }

    /// A strategic merge patch (lists with a merge key merge by it).
    pub async fn strategic_patch(&self, path: &str, body: &Value) -> Result<Answer, ClientError> {
        self.call(
            "PATCH",
            path,
            "application/strategic-merge-patch+json",
            Some(body),
        )
        .await
    }

    /// A merge patch.
    pub async fn patch(&self, path: &str, body: &Value) -> Result<Answer, ClientError> {
        self.call("PATCH", path, "application/merge-patch+json", Some(body))
            .await
    }
}
