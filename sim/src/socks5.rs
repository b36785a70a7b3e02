//! A SOCKS5 proxy (RFC 1928, CONNECT only) into the emulated private
//! networks. `<private-ip>:<port>` (or `<public-ipv4>:<port>`) of a running
//! server leads to the loopback service registered for that server and
//! port, a load balancer's private `<ip>:<port>` to that service of one of
//! its healthy targets; anything else gets the failure a real network would
//! give. The proxy never connects anywhere but 127.0.0.0/8.
//!
//! Networks may overlap, as on Hetzner (two projects' `10.0.0.0/16`), and
//! an address then means nothing on its own, as two overlapping subnets
//! behind one VPN need a site each. A client names its network as the user
//! name (RFC 1929; the network's name or id, any password):
//! `socks5://<network>@127.0.0.1:<port>`. Without one, an address in more
//! than one network is refused (not allowed), never guessed.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tracing::debug;

use crate::app::{AppState, lock};
use crate::ids::Id;
use crate::resources::load_balancers::Listening;
use crate::resources::servers::ServerStatus;
use crate::state::World;

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0x00;
const USER_PASSWORD: u8 = 0x02;
const USER_PASSWORD_VERSION: u8 = 0x01;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CONNECT: u8 = 0x01;
const ATYP_IPV4: u8 = 0x01;
const ATYP_DOMAIN: u8 = 0x03;
const ATYP_IPV6: u8 = 0x04;

/// Reply codes of RFC 1928 section 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reply {
    Succeeded = 0x00,
    GeneralFailure = 0x01,
    NotAllowed = 0x02,
    HostUnreachable = 0x04,
    ConnectionRefused = 0x05,
    CommandNotSupported = 0x07,
    AddressTypeNotSupported = 0x08,
}

#[derive(Debug, thiserror::Error)]
enum Socks5Error {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("client spoke SOCKS version {0}")]
    Version(u8),
    #[error("client offers neither no authentication nor a user name")]
    NoAcceptableMethod,
    #[error("no network is named {0:?}")]
    UnknownNetwork(String),
    #[error("client spoke user name/password version {0}")]
    LoginVersion(u8),
    #[error("refused with reply {0:?}")]
    Refused(Reply),
}

/// Whether `addr` is one the proxy may connect to.
pub fn is_allowed_target(addr: SocketAddr) -> bool {
    matches!(addr, SocketAddr::V4(v4) if v4.ip().is_loopback())
}

pub async fn serve(listener: TcpListener, sim: AppState, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let sim = sim.clone();
                    tokio::spawn(async move {
                        if let Err(e) = handle(stream, &sim).await {
                            debug!(%peer, "socks5: {e}");
                        }
                    });
                }
                Err(e) => debug!("socks5 accept: {e}"),
            },
            _ = stop.changed() => return,
        }
    }
}

/// Spreads connections to a load balancer over its healthy targets.
static NEXT_TARGET: AtomicUsize = AtomicUsize::new(0);

/// Where a load balancer's private `ip:port` leads: a healthy target
/// (round robin), refused when it has none or no service on that port;
/// `None` when no load balancer has `ip`.
fn resolve_load_balancer(
    sim: &AppState,
    network: Id,
    ip: Ipv4Addr,
    port: u16,
) -> Option<Result<SocketAddr, Reply>> {
    let listening: Listening = lock(&sim.endpoints).keys().copied().collect();
    let route = sim
        .world()
        .load_balancer_route(network, ip, port, &listening)?;
    let Some(route) = route.filter(|r| !r.servers.is_empty()) else {
        return Some(Err(Reply::ConnectionRefused));
    };
    let pick = NEXT_TARGET.fetch_add(1, Ordering::Relaxed) % route.servers.len();
    let server = route.servers[pick];
    let target = lock(&sim.endpoints)
        .get(&(server, route.destination_port))
        .copied();
    Some(match target {
        Some(target) if is_allowed_target(target) => Ok(target),
        Some(_) => Err(Reply::NotAllowed),
        None => Err(Reply::ConnectionRefused),
    })
}

/// The networks `ip` is a private address in (of a server, an alias, or a
/// load balancer).
fn networks_of(world: &World, ip: Ipv4Addr) -> BTreeSet<Id> {
    let servers = world.servers.values().flat_map(|s| {
        s.private_net
            .iter()
            .filter(|p| p.has(ip))
            .map(|p| p.network)
    });
    let load_balancers = world.load_balancers.values().flat_map(|lb| {
        lb.private_net
            .iter()
            .filter(|p| p.ip == ip)
            .map(|p| p.network)
    });
    servers.chain(load_balancers).collect()
}

/// Where a server's address leads, or the reply that explains why nowhere.
/// Private IPs (and aliases) and public IPv4s lead to the services
/// registered for the server (e.g. the rescue system's SSH on port 22); a
/// load balancer's private IP leads to one of its healthy targets.
/// `network`: the one the client named; without, the only one `ip` is in.
pub fn resolve(
    sim: &AppState,
    network: Option<Id>,
    ip: Ipv4Addr,
    port: u16,
) -> Result<SocketAddr, Reply> {
    let network = match network {
        Some(named) => Some(named),
        None => {
            let within = networks_of(&sim.world(), ip);
            if within.len() > 1 {
                debug!(%ip, "socks5: {ip} is in {} networks; the client names none", within.len());
                return Err(Reply::NotAllowed);
            }
            within.first().copied()
        }
    };
    if let Some(network) = network
        && let Some(found) = resolve_load_balancer(sim, network, ip, port)
    {
        return found;
    }
    let server = {
        let world = sim.world();
        let public = ip.to_string();
        let found = world.servers.values().find(|s| {
            s.private_net
                .iter()
                .any(|p| Some(p.network) == network && (p.ip == ip || p.alias_ips.contains(&ip)))
                || s.public_ipv4.as_ref().is_some_and(|p| p.ip == public)
        });
        match found {
            Some(s) if s.status == ServerStatus::Running => s.id,
            _ => return Err(Reply::HostUnreachable),
        }
    };
    let target = lock(&sim.endpoints)
        .get(&(server, port))
        .copied()
        .ok_or(Reply::ConnectionRefused)?;
    if !is_allowed_target(target) {
        return Err(Reply::NotAllowed);
    }
    Ok(target)
}

/// The network a user name names: its id, else its name.
fn network_named(sim: &AppState, user: &str) -> Option<Id> {
    let world = sim.world();
    if let Ok(id) = user.parse::<Id>()
        && world.networks.contains_key(&id)
    {
        return Some(id);
    }
    world
        .networks
        .values()
        .find(|n| n.name == user)
        .map(|n| n.id)
}

/// RFC 1929: VER ULEN UNAME PLEN PASSWD; the user name names the network.
async fn user_name(client: &mut TcpStream, sim: &AppState) -> Result<Id, Socks5Error> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut user = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut user).await?;
    let mut length = [0u8; 1];
    client.read_exact(&mut length).await?;
    let mut password = vec![0u8; usize::from(length[0])];
    client.read_exact(&mut password).await?;
    let user = String::from_utf8_lossy(&user).into_owned();
    if head[0] != USER_PASSWORD_VERSION {
        client.write_all(&[USER_PASSWORD_VERSION, 0x01]).await?;
        return Err(Socks5Error::LoginVersion(head[0]));
    }
    match network_named(sim, &user) {
        Some(network) => {
            client.write_all(&[USER_PASSWORD_VERSION, 0x00]).await?;
            Ok(network)
        }
        None => {
            client.write_all(&[USER_PASSWORD_VERSION, 0x01]).await?;
            Err(Socks5Error::UnknownNetwork(user))
        }
    }
}

async fn reply(stream: &mut TcpStream, code: Reply, bound: SocketAddr) -> std::io::Result<()> {
    let (ip, port) = match bound {
        SocketAddr::V4(v4) => (v4.ip().octets(), v4.port()),
        SocketAddr::V6(_) => ([0; 4], 0),
    };
    let mut message = vec![VERSION, code as u8, 0x00, ATYP_IPV4];
    message.extend_from_slice(&ip);
    message.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&message).await
}

async fn refuse(stream: &mut TcpStream, code: Reply) -> Result<(), Socks5Error> {
    reply(stream, code, SocketAddr::from(([0, 0, 0, 0], 0))).await?;
    Err(Socks5Error::Refused(code))
}

async fn handle(mut client: TcpStream, sim: &AppState) -> Result<(), Socks5Error> {
    // Greeting: VER NMETHODS METHODS…
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    if head[0] != VERSION {
        return Err(Socks5Error::Version(head[0]));
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    let network = if methods.contains(&USER_PASSWORD) {
        client.write_all(&[VERSION, USER_PASSWORD]).await?;
        Some(user_name(&mut client, sim).await?)
    } else if methods.contains(&NO_AUTH) {
        client.write_all(&[VERSION, NO_AUTH]).await?;
        None
    } else {
        client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await?;
        return Err(Socks5Error::NoAcceptableMethod);
    };

    // Request: VER CMD RSV ATYP DST.ADDR DST.PORT
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    if request[0] != VERSION {
        return Err(Socks5Error::Version(request[0]));
    }
    let ip = match request[3] {
        ATYP_IPV4 => {
            let mut octets = [0u8; 4];
            client.read_exact(&mut octets).await?;
            Some(Ipv4Addr::from(octets))
        }
        ATYP_DOMAIN => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await?;
            // Private networks have no DNS; only literal addresses resolve.
            String::from_utf8_lossy(&name).parse::<Ipv4Addr>().ok()
        }
        ATYP_IPV6 => {
            let mut skip = [0u8; 16];
            client.read_exact(&mut skip).await?;
            let mut port = [0u8; 2];
            client.read_exact(&mut port).await?;
            return refuse(&mut client, Reply::AddressTypeNotSupported).await;
        }
        _ => return refuse(&mut client, Reply::AddressTypeNotSupported).await,
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await?;
    let port = u16::from_be_bytes(port);
    if request[1] != CONNECT {
        return refuse(&mut client, Reply::CommandNotSupported).await;
    }
    let Some(ip) = ip else {
        return refuse(&mut client, Reply::HostUnreachable).await;
    };
    let target = match resolve(sim, network, ip, port) {
        Ok(target) => target,
        Err(code) => return refuse(&mut client, code).await,
    };
    let connected = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(target)).await;
    let mut upstream = match connected {
        Ok(Ok(stream)) => stream,
        Ok(Err(_)) => return refuse(&mut client, Reply::ConnectionRefused).await,
        Err(_) => return refuse(&mut client, Reply::GeneralFailure).await,
    };
    let bound = client.local_addr()?;
    reply(&mut client, Reply::Succeeded, bound).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}
