//! hct's calls to the Kubernetes API: HTTP/1.1 on a control plane's
//! private IP (port 6443), with a `system:masters` client certificate, over
//! the same path as the Talos API (directly or through the SOCKS5 proxy),
//! one request per connection ([`call`]). Is the API server up? `GET
//! /readyz`: kube-apiserver is a static pod, not a Talos service, so the
//! Talos API cannot tell; its own readiness endpoint can.
//!
//! - `manifests`: the bootstrap manifests' objects, applied with
//!   server-side apply (field manager `hct`) and pruned;
//! - `drift`: which of those objects were changed by hand since;
//! - `nodes`: whether nodes are Ready;
//! - `pods`: what a node runs (static pods' images, kubelet's version).

pub mod drift;
pub mod manifests;
pub mod nodes;
pub mod pods;

use crate::net::Proxy;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

use crate::net::socks5;
use crate::network_plan::KUBE_API_PORT;
use crate::secret::Secret;
use crate::talos::api::{AdminCredentials, Trust, tls};
use crate::talos::client_config::ApiCredentials;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an answer read (kube-apiserver lists can be long).
const MAX_ANSWER: u64 = 16 * 1024 * 1024;

/// Where hct reaches a Kubernetes API server, and as whom.
#[derive(Debug, Clone, Copy)]
pub struct KubeApi<'a> {
    pub ip: IpAddr,
    pub proxy: Option<Proxy>,
    pub credentials: &'a ApiCredentials,
}

/// An answer: its status code and body (chunked transfer decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    /// The `message` of a `metav1.Status` body, else the body's start.
    pub fn message(&self) -> String {
        self.status_message()
            .unwrap_or_else(|| self.body.chars().take(200).collect())
    }

    /// The `message` of a `metav1.Status` body only: for answers whose
    /// body may be an object, a Secret's data included.
    pub fn status_message(&self) -> Option<String> {
        let status: serde_json::Value = serde_json::from_str(&self.body).ok()?;
        (status["kind"] == "Status")
            .then(|| status["message"].as_str().map(str::to_string))
            .flatten()
    }
}

/// Ok when `/readyz` answers 200; otherwise why not (for the wait's log).
pub async fn readyz(
    ip: IpAddr,
    proxy: Option<Proxy>,
    credentials: &ApiCredentials,
) -> Result<(), String> {
    let api = KubeApi {
        ip,
        proxy,
        credentials,
    };
    let answer = api.call("GET", "/readyz", None, b"").await?;
    check_answer(&answer)
}

impl KubeApi<'_> {
    /// One request; Err when no answer came (in time).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<Answer, String> {
        let ip = self.ip;
        tokio::time::timeout(
            REQUEST_TIMEOUT,
            self.exchange(method, path, content_type, body),
        )
        .await
        .map_err(|_| format!("{ip}:{KUBE_API_PORT}: no answer within {REQUEST_TIMEOUT:?}"))?
    }

    async fn exchange(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<Answer, String> {
        let (ip, proxy, credentials) = (self.ip, self.proxy, self.credentials);
        let target = SocketAddr::new(ip, KUBE_API_PORT);
        // The same mutual TLS as apid, with the Kubernetes CA; HTTP/1.1.
        let mut config = tls::client_config(&Trust::Admin(AdminCredentials {
            os_ca: credentials.ca.clone(),
            certificate: credentials.certificate.clone(),
            key: Secret::new(credentials.key.clone()),
        }))
        .map_err(|e| e.to_string())?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = match proxy {
            Some(proxy) => socks5::connect(proxy, target).await,
            None => tokio::net::TcpStream::connect(target).await,
        }
        .map_err(|e| format!("{target}: {e}"))?;
        let server_name = rustls::pki_types::ServerName::IpAddress(ip.into());
        let mut stream = TlsConnector::from(Arc::new(config))
            .connect(server_name, tcp)
            .await
            .map_err(|e| format!("{target}: TLS: {e}"))?;
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {target}\r\nAccept: application/json, */*\r\n\
         User-Agent: hct\r\nConnection: close\r\n"
        );
        if let Some(content_type) = content_type {
            request.push_str(&format!("Content-Type: {content_type}\r\n"));
        }
        if !body.is_empty() || content_type.is_some() {
            request.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        request.push_str("\r\n");
        let mut message = request.into_bytes();
        message.extend_from_slice(body);
        stream
            .write_all(&message)
            .await
            .map_err(|e| format!("{target}: {e}"))?;
        let mut answer = Vec::new();
        let read = (&mut stream)
            .take(MAX_ANSWER)
            .read_to_end(&mut answer)
            .await;
        if answer.is_empty() {
            return Err(format!(
                "{target}: no answer ({})",
                read.err().map_or("closed".into(), |e| e.to_string())
            ));
        }
        parse_answer(&answer).ok_or_else(|| format!("{target}: a malformed HTTP answer"))
    }
}

/// An HTTP/1.1 answer read to the end: status, and the body after the
/// head (de-chunked when `Transfer-Encoding: chunked`).
fn parse_answer(raw: &[u8]) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(n, v)| {
            n.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let mut body = raw[end + 4..].to_vec();
    if chunked {
        body = dechunk(&body)?;
    }
    Some(Answer {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// 200 is ready; anything else is the status and the failing check.
fn check_answer(answer: &Answer) -> Result<(), String> {
    if answer.status == 200 {
        return Ok(());
    }
    let body = &answer.body;
    let line = body
        .lines()
        .find(|l| l.contains("[-]"))
        .unwrap_or(body.trim());
    Err(format!(
        "readyz: HTTP {}: {}",
        answer.status,
        line.chars().take(200).collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(raw: &str) -> Answer {
        parse_answer(raw.as_bytes()).unwrap()
    }

    #[test]
    fn reads_plain_and_chunked_answers() {
        let plain = answer("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}");
        assert_eq!((plain.status, plain.body.as_str()), (201, "{}"));
        let chunked = answer(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n",
        );
        assert_eq!(chunked.body, "{\"a\":1}");
        assert!(parse_answer(b"garbage").is_none());
        let status = answer(
            "HTTP/1.1 404 Not Found\r\n\r\n{\"kind\":\"Status\",\"message\":\"nodes \\\"x\\\" not found\"}",
        );
        assert_eq!(status.message(), "nodes \"x\" not found");
    }

    #[test]
    fn only_200_is_ready_and_failures_say_why() {
        assert!(check_answer(&answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")).is_ok());
        let why = check_answer(&answer(
            "HTTP/1.1 500 Internal Server Error\r\n\r\n[+]ping ok\n[-]etcd failed: reason withheld\n",
        ))
        .unwrap_err();
        assert!(
            why.contains("500") && why.contains("[-]etcd failed"),
            "{why}"
        );
    }
}
