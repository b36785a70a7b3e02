//! The SOCKS5 proxy into private networks: a server's private IP and a
//! registered port reach a loopback service; everything else is refused.

use crate::common::{socks5, socks5_request};

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use hct_sim::resources::networks::SubnetSpec;
use hct_sim::resources::servers::{Attachment, Power, ServerSpec};
use hct_sim::{Durations, Id, Profile, Sim, SimHandle, SimOptions, World};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An emulator with one running server at 10.0.1.10 (alias 10.0.1.11) and
/// one stopped server at 10.0.1.20.
async fn sim_with_servers() -> (SimHandle, Id, Id) {
    let sim = Sim::start(SimOptions {
        durations: Durations::new(Profile::Fast),
        ..SimOptions::default()
    })
    .await
    .unwrap();
    let (running, stopped) = sim.modify(|w| {
        let net = network(w, "net");
        let up = server(w, net, "up", "10.0.1.10", &["10.0.1.11"], true);
        let down = server(w, net, "down", "10.0.1.20", &[], false);
        (up, down)
    });
    (sim, running, stopped)
}

/// A network `10.0.0.0/16` with the cloud subnet `10.0.1.0/24`.
fn network(w: &mut World, name: &str) -> Id {
    let now = hct_sim::clock::Timestamp::now();
    w.create_network(
        name.into(),
        "10.0.0.0/16",
        vec![SubnetSpec {
            kind: "cloud".into(),
            ip_range: Some("10.0.1.0/24".into()),
            network_zone: "eu-central".into(),
        }],
        vec![],
        Default::default(),
        false,
        now,
    )
    .unwrap()
}

/// A server attached to `net` at `ip` (and `aliases`), running or not.
fn server(w: &mut World, net: Id, name: &str, ip: &str, aliases: &[&str], running: bool) -> Id {
    let now = hct_sim::clock::Timestamp::now();
    let mut spec = ServerSpec::new(name, "cx23", "debian-12");
    spec.start_after_create = false;
    let id = w.create_server(spec, now).unwrap().server;
    w.advance(now.plus(Duration::from_secs(60)));
    let attachment = Attachment {
        ip: Some(ip.into()),
        alias_ips: aliases.iter().map(|a| a.to_string()).collect(),
        ip_range: None,
    };
    w.attach_to_network(id, net, attachment, now).unwrap();
    w.advance(now.plus(Duration::from_secs(120)));
    if running {
        w.power(id, Power::On, now).unwrap();
        w.advance(now.plus(Duration::from_secs(180)));
    }
    id
}

/// A loopback echo service.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn reaches_registered_ports_of_running_servers() {
    let (sim, running, _) = sim_with_servers().await;
    let echo = echo_server().await;
    let registered = sim
        .register_private_endpoint("10.0.1.10".parse().unwrap(), 50000, echo)
        .unwrap();
    assert_eq!(registered, running);
    let endpoints = &sim.state_json()["endpoints"];
    assert_eq!(endpoints[0]["server"], running);
    assert_eq!(endpoints[0]["target"], echo.to_string());

    for ip in ["10.0.1.10", "10.0.1.11"] {
        let (code, mut stream) = socks5(sim.proxy_addr(), ip.parse().unwrap(), 50000).await;
        assert_eq!(code, 0, "connect to {ip}");
        stream.write_all(b"talos?").await.unwrap();
        let mut answer = [0u8; 6];
        stream.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"talos?");
    }
}

#[tokio::test]
async fn refuses_what_a_network_would_refuse() {
    let (sim, running, stopped) = sim_with_servers().await;
    let echo = echo_server().await;
    sim.register_endpoint(running, 50000, echo).unwrap();
    sim.register_endpoint(stopped, 50000, echo).unwrap();

    // Nobody has this address: host unreachable.
    let (code, _) = socks5(sim.proxy_addr(), "10.0.1.99".parse().unwrap(), 50000).await;
    assert_eq!(code, 0x04);
    // The server exists but nothing listens on that port: connection refused.
    let (code, _) = socks5(sim.proxy_addr(), "10.0.1.10".parse().unwrap(), 22).await;
    assert_eq!(code, 0x05);
    // A stopped server answers nothing.
    let (code, _) = socks5(sim.proxy_addr(), "10.0.1.20".parse().unwrap(), 50000).await;
    assert_eq!(code, 0x04);
    // A public address is never proxied.
    let (code, _) = socks5(sim.proxy_addr(), "203.0.113.7".parse().unwrap(), 443).await;
    assert_eq!(code, 0x04);
}

#[tokio::test]
async fn only_connect_and_only_loopback_targets() {
    let (sim, running, _) = sim_with_servers().await;
    let outside: SocketAddr = "10.0.1.10:50000".parse().unwrap();
    assert!(matches!(
        sim.register_endpoint(running, 50000, outside),
        Err(hct_sim::SimError::TargetNotLoopback(_))
    ));
    assert!(
        sim.register_private_endpoint(
            "10.9.9.9".parse().unwrap(),
            1,
            "127.0.0.1:1".parse().unwrap()
        )
        .is_err()
    );

    // BIND (0x02) is not supported.
    let mut stream = TcpStream::connect(sim.proxy_addr()).await.unwrap();
    stream.write_all(&[5, 1, 0]).await.unwrap();
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).await.unwrap();
    stream
        .write_all(&[5, 2, 0, 1, 10, 0, 1, 10, 0, 22])
        .await
        .unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[1], 0x07);

    // A client that offers only GSSAPI is turned away.
    let mut stream = TcpStream::connect(sim.proxy_addr()).await.unwrap();
    stream.write_all(&[5, 1, 1]).await.unwrap();
    stream.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 0xff]);
}

#[tokio::test]
async fn deleted_servers_lose_their_endpoints() {
    let (sim, running, _) = sim_with_servers().await;
    let echo = echo_server().await;
    sim.register_endpoint(running, 50000, echo).unwrap();
    let mut events = sim.events();
    sim.modify(|w| {
        let now = hct_sim::clock::Timestamp::now();
        w.delete_server(running, now).unwrap();
        w.advance(now.plus(Duration::from_secs(60)));
    });
    let deleted = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            if let Ok(hct_sim::SimEvent::ServerDeleted { server }) = events.recv().await {
                return server;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(deleted, running);
    let (code, _) = socks5(sim.proxy_addr(), "10.0.1.10".parse().unwrap(), 50000).await;
    assert_eq!(code, 0x04);
    assert_eq!(sim.state_json()["endpoints"], serde_json::json!([]));
}

/// A loopback service that says `banner` and closes.
async fn banner_server(banner: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(banner).await;
        }
    });
    addr
}

/// Greets the proxy with a user name (RFC 1929) and asks for `ip:port`:
/// the login status, then the reply code and the stream when logged in.
async fn connect_as(
    proxy: SocketAddr,
    user: &str,
    ip: Ipv4Addr,
    port: u16,
) -> (u8, Option<(u8, TcpStream)>) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.write_all(&[5, 2, 0, 2]).await.unwrap();
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 2], "a user name, when offered, is asked for");
    let mut login = vec![1, user.len() as u8];
    login.extend_from_slice(user.as_bytes());
    login.extend_from_slice(&[3, b'a', b'n', b'y']);
    stream.write_all(&login).await.unwrap();
    let mut status = [0u8; 2];
    stream.read_exact(&mut status).await.unwrap();
    if status != [1, 0] {
        return (status[1], None);
    }
    (0, Some(socks5_request(stream, ip, port).await))
}

/// Two networks of the same range, as two Hetzner projects (or one) may
/// have, each with a server at 10.0.1.10: the address alone is refused, and
/// the network named as the user name (by name or id) is the one reached.
#[tokio::test]
async fn overlapping_networks_are_told_apart_by_the_user_name() {
    let (sim, running, _) = sim_with_servers().await;
    let (other_net, other) = sim.modify(|w| {
        let net = network(w, "other");
        (net, server(w, net, "twin", "10.0.1.10", &[], true))
    });
    sim.register_endpoint(running, 50000, banner_server(b"net").await)
        .unwrap();
    sim.register_endpoint(other, 50000, banner_server(b"other").await)
        .unwrap();
    let ip: Ipv4Addr = "10.0.1.10".parse().unwrap();

    // The address alone: in two networks, so not allowed (never guessed).
    let (code, _) = socks5(sim.proxy_addr(), ip, 50000).await;
    assert_eq!(code, 0x02);
    // An address in one network only still needs no user name.
    let (code, _) = socks5(sim.proxy_addr(), "10.0.1.11".parse().unwrap(), 50000).await;
    assert_eq!(code, 0x00);

    for (user, banner) in [
        ("net".to_string(), b"net".as_slice()),
        ("other".to_string(), b"other".as_slice()),
        (other_net.to_string(), b"other".as_slice()),
    ] {
        let (status, connected) = connect_as(sim.proxy_addr(), &user, ip, 50000).await;
        assert_eq!(status, 0, "{user} is a network");
        let (code, mut stream) = connected.unwrap();
        assert_eq!(code, 0, "{user}");
        let mut said = Vec::new();
        stream.read_to_end(&mut said).await.unwrap();
        assert_eq!(said, banner, "{user} reaches its own network's server");
    }
    let (status, connected) = connect_as(sim.proxy_addr(), "nope", ip, 50000).await;
    assert_eq!(status, 1, "no network is named nope");
    assert!(connected.is_none());
}
