//! What the emulation tests share: a seeded emulator with fast actions,
//! calls to its API, its Talos snapshot, and SOCKS5 requests to its proxy.
#![allow(dead_code)] // each test file uses its own part

use std::net::{Ipv4Addr, SocketAddr};

use hct_sim::{Id, Sim, SimHandle, SimOptions};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn sim() -> SimHandle {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Sim::start(SimOptions::seeded_fast()).await.unwrap()
}

pub async fn call(
    sim: &SimHandle,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let base = sim.endpoint();
    let url = match path.strip_prefix("/_sim") {
        Some(rest) => format!("{}/_sim{rest}", base.trim_end_matches("/v1")),
        None => format!("{base}{path}"),
    };
    let mut request = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(sim.token());
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

pub fn talos_image(sim: &SimHandle) -> Id {
    sim.inspect(|w| {
        w.images
            .values()
            .find(|i| {
                i.labels.get("version").map(String::as_str) == Some("v1.12.6")
                    && i.labels.get("arch").map(String::as_str) == Some("amd64")
            })
            .map(|i| i.id)
            .unwrap()
    })
}

/// Greets the proxy without authentication and asks for `ip:port`; the
/// reply code and the stream.
pub async fn socks5(proxy: SocketAddr, ip: Ipv4Addr, port: u16) -> (u8, TcpStream) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.write_all(&[5, 1, 0]).await.unwrap();
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 0], "the proxy accepts no authentication");
    socks5_request(stream, ip, port).await
}

/// CONNECT `ip:port` on a greeted stream; the reply code and the stream.
pub async fn socks5_request(mut stream: TcpStream, ip: Ipv4Addr, port: u16) -> (u8, TcpStream) {
    let mut request = vec![5, 1, 0, 1];
    request.extend_from_slice(&ip.octets());
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request).await.unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!((reply[0], reply[3]), (5, 1));
    (reply[1], stream)
}

/// Waits until every action has finished (a request lets due ones finish).
pub async fn settle(sim: &SimHandle) {
    for _ in 0..200 {
        let _ = call(sim, Method::GET, "/servers", None).await;
        if sim.inspect(|w| w.actions.values().all(|a| !a.is_running())) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("actions still running");
}
