//! Is the Kubernetes API server up? `GET /readyz` on a control plane's
//! private IP (port 6443), with a `system:masters` client certificate, over
//! the same path as the Talos API (directly or through the SOCKS5 proxy).
//! kube-apiserver is a static pod, not a Talos service, so the Talos API
//! cannot tell; its own readiness endpoint can.

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
/// Enough of an answer to read its status and reason.
const MAX_ANSWER: u64 = 64 * 1024;

/// Ok when `/readyz` answers 200; otherwise why not (for the wait's log).
pub async fn readyz(
    ip: IpAddr,
    proxy: Option<SocketAddr>,
    credentials: &ApiCredentials,
) -> Result<(), String> {
    tokio::time::timeout(REQUEST_TIMEOUT, get_readyz(ip, proxy, credentials))
        .await
        .map_err(|_| format!("{ip}:{KUBE_API_PORT}: no answer within {REQUEST_TIMEOUT:?}"))?
}

async fn get_readyz(
    ip: IpAddr,
    proxy: Option<SocketAddr>,
    credentials: &ApiCredentials,
) -> Result<(), String> {
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
    let request = format!(
        "GET /readyz HTTP/1.1\r\nHost: {target}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
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
    check_answer(&String::from_utf8_lossy(&answer))
}

/// 200 is ready; anything else is the status line and the first body line.
fn check_answer(answer: &str) -> Result<(), String> {
    let status_line = answer.lines().next().unwrap_or_default();
    let status = status_line.split_whitespace().nth(1).unwrap_or_default();
    if status == "200" {
        return Ok(());
    }
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| {
            body.lines()
                .find(|l| l.contains("[-]"))
                .unwrap_or(body.trim())
        })
        .unwrap_or_default();
    Err(format!(
        "readyz: {status_line}: {}",
        body.chars().take(200).collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_200_is_ready_and_failures_say_why() {
        assert!(check_answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_ok());
        let why = check_answer(
            "HTTP/1.1 500 Internal Server Error\r\n\r\n[+]ping ok\n[-]etcd failed: reason withheld\n",
        )
        .unwrap_err();
        assert!(
            why.contains("500") && why.contains("[-]etcd failed"),
            "{why}"
        );
    }
}
