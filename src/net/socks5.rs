//! A SOCKS5 client (RFC 1928, CONNECT; no authentication, or a user name
//! and password, RFC 1929): how hct reaches the nodes' private IPs from
//! outside the network — through Tailscale's userspace proxy, an `ssh -D`
//! bastion, or hct-sim's proxy.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Proxy;

const VERSION: u8 = 5;
const NO_AUTHENTICATION: u8 = 0;
const USER_PASSWORD: u8 = 2;
const USER_PASSWORD_VERSION: u8 = 1;
const CONNECT: u8 = 1;
const IPV4: u8 = 1;
const DOMAIN: u8 = 3;
const IPV6: u8 = 4;

/// Opens a TCP connection to `target` through the SOCKS5 proxy `proxy`.
pub async fn connect(proxy: Proxy, target: SocketAddr) -> io::Result<TcpStream> {
    let mut stream = TcpStream::connect(proxy.addr).await.map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot reach the SOCKS5 proxy {proxy}: {e}"),
        )
    })?;
    stream.set_nodelay(true)?;

    let method = match proxy.credentials() {
        Some(_) => USER_PASSWORD,
        None => NO_AUTHENTICATION,
    };
    stream.write_all(&[VERSION, 1, method]).await?;
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).await?;
    if choice != [VERSION, method] {
        let why = match method {
            USER_PASSWORD => "does not take a user name",
            _ => {
                "requires authentication: give talos_proxy a user name (socks5://user:password@host:port)"
            }
        };
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("the SOCKS5 proxy {proxy} {why}"),
        ));
    }
    if let Some((user, password)) = proxy.credentials() {
        let too_long = |what| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the SOCKS5 {what} is longer than 255 bytes"),
            )
        };
        let user_len = u8::try_from(user.len()).map_err(|_| too_long("user name"))?;
        let password_len = u8::try_from(password.len()).map_err(|_| too_long("password"))?;
        let mut login = vec![USER_PASSWORD_VERSION, user_len];
        login.extend_from_slice(user.as_bytes());
        login.push(password_len);
        login.extend_from_slice(password.as_bytes());
        stream.write_all(&login).await?;
        let mut status = [0u8; 2];
        stream.read_exact(&mut status).await?;
        if status[1] != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("the SOCKS5 proxy {proxy} refused the user name {user:?}"),
            ));
        }
    }

    let mut request = vec![VERSION, CONNECT, 0];
    match target {
        SocketAddr::V4(v4) => {
            request.push(IPV4);
            request.extend_from_slice(&v4.ip().octets());
        }
        SocketAddr::V6(v6) => {
            request.push(IPV6);
            request.extend_from_slice(&v6.ip().octets());
        }
    }
    request.extend_from_slice(&target.port().to_be_bytes());
    stream.write_all(&request).await?;

    let mut reply = [0u8; 4];
    stream.read_exact(&mut reply).await?;
    if reply[0] != VERSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{proxy} is not a SOCKS5 proxy"),
        ));
    }
    if reply[1] != 0 {
        return Err(refusal(reply[1], target, proxy));
    }
    // Skip the bound address the proxy reports.
    let address_len = match reply[3] {
        IPV4 => 4,
        IPV6 => 16,
        DOMAIN => usize::from(stream.read_u8().await?),
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("SOCKS5 address type {other}"),
            ));
        }
    };
    let mut bound = vec![0u8; address_len + 2];
    stream.read_exact(&mut bound).await?;
    Ok(stream)
}

fn refusal(code: u8, target: SocketAddr, proxy: Proxy) -> io::Error {
    let (kind, why) = match code {
        2 => (
            io::ErrorKind::PermissionDenied,
            "not allowed by the proxy's rules (hct-sim: the address is in more than one \
             network; name the network as the proxy's user name, socks5://<network>@host:port)",
        ),
        3 => (io::ErrorKind::NetworkUnreachable, "network unreachable"),
        4 => (io::ErrorKind::HostUnreachable, "host unreachable"),
        5 => (io::ErrorKind::ConnectionRefused, "connection refused"),
        6 => (io::ErrorKind::TimedOut, "TTL expired"),
        _ => (io::ErrorKind::Other, "general failure"),
    };
    io::Error::new(kind, format!("{target} via SOCKS5 proxy {proxy}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A one-connection proxy that answers CONNECT with `reply_code` and then
    /// echoes, checking the request names `expected`.
    async fn fake_proxy(reply_code: u8, expected: SocketAddr) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut client, _) = listener.accept().await.unwrap();
            let mut greeting = [0u8; 3];
            client.read_exact(&mut greeting).await.unwrap();
            assert_eq!(greeting, [5, 1, 0]);
            client.write_all(&[5, 0]).await.unwrap();
            let mut request = [0u8; 10];
            client.read_exact(&mut request).await.unwrap();
            let SocketAddr::V4(v4) = expected else {
                panic!()
            };
            assert_eq!(&request[..4], &[5, 1, 0, 1]);
            assert_eq!(&request[4..8], &v4.ip().octets());
            assert_eq!(&request[8..], &v4.port().to_be_bytes());
            client
                .write_all(&[5, reply_code, 0, 1, 127, 0, 0, 1, 0, 80])
                .await
                .unwrap();
            let mut byte = [0u8; 1];
            if client.read_exact(&mut byte).await.is_ok() {
                client.write_all(&byte).await.unwrap();
            }
        });
        address
    }

    #[tokio::test]
    async fn connects_through_the_proxy() {
        // The private address only travels inside the SOCKS request; nothing dials it.
        let target: SocketAddr = "10.0.128.17:50000".parse().unwrap();
        let proxy = Proxy::new(fake_proxy(0, target).await);
        let mut stream = connect(proxy, target).await.unwrap();
        stream.write_all(b"x").await.unwrap();
        let mut echo = [0u8; 1];
        stream.read_exact(&mut echo).await.unwrap();
        assert_eq!(&echo, b"x");
    }

    #[tokio::test]
    async fn gives_the_user_name_and_password_when_it_has_them() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let served = tokio::spawn(async move {
            let (mut client, _) = listener.accept().await.unwrap();
            let mut greeting = [0u8; 3];
            client.read_exact(&mut greeting).await.unwrap();
            assert_eq!(greeting, [5, 1, 2], "offers a user name and password only");
            client.write_all(&[5, 2]).await.unwrap();
            let mut login = vec![0u8; 2 + 7 + 1 + 7];
            client.read_exact(&mut login).await.unwrap();
            client.write_all(&[1, 1]).await.unwrap();
            login
        });
        let proxy = Proxy::with_user(address, "the net".into(), "hunter2".into());
        let target: SocketAddr = "10.0.128.17:50000".parse().unwrap();
        let error = connect(proxy, target).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("the net"), "{error}");
        assert!(!format!("{proxy:?} {proxy} {error}").contains("hunter2"));
        let login = served.await.unwrap();
        assert_eq!(
            login,
            [&[1u8, 7][..], b"the net", &[7], b"hunter2"].concat()
        );
    }

    #[tokio::test]
    async fn reports_what_the_proxy_refused() {
        let target: SocketAddr = "10.0.128.99:50000".parse().unwrap();
        let proxy = Proxy::new(fake_proxy(4, target).await);
        let error = connect(proxy, target).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::HostUnreachable);
        assert!(error.to_string().contains("10.0.128.99:50000"), "{error}");
    }
}
