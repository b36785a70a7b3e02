//! apid's TLS. In maintenance mode the node shows a self-signed certificate
//! and asks for none. Configured, it shows a certificate from the OS CA and
//! requires a client certificate: the handshake only checks that the client
//! holds the certificate's key; whether the certificate chains to the OS CA
//! is judged afterwards and travels with the connection, so that a stranger
//! is answered `Unauthenticated` rather than with a torn connection. The
//! Kubernetes API server (`kube_api`) works alike with the Kubernetes CA,
//! asking for a client certificate without requiring one; from Talos v1.14
//! on it takes TLS 1.3 only, as Talos runs it (`--tls-min-version`), so a
//! TLS 1.2 client fails the handshake.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ServerConnection, VerifierBuilderError, WebPkiClientVerifier};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::Connected;

use super::auth::Caller;
use super::pki::{self, PkiError, ServerIdentity};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("the CA certificate {0}")]
    Ca(#[from] PkiError),
    #[error("cannot verify client certificates: {0}")]
    Verifier(#[from] VerifierBuilderError),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn finish(mut config: ServerConfig) -> ServerConfig {
    // apid speaks gRPC: HTTP/2 only.
    config.alpn_protocols = vec![b"h2".to_vec()];
    config
}

pub fn maintenance_config(identity: ServerIdentity) -> Result<ServerConfig, TlsError> {
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)?;
    Ok(finish(config))
}

pub fn configured_config(identity: ServerIdentity) -> Result<ServerConfig, TlsError> {
    let provider = provider();
    let verifier = ProofOfPossession {
        algorithms: provider.signature_verification_algorithms,
        mandatory: true,
        hints: Vec::new(),
    };
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(identity.chain, identity.key)?;
    Ok(finish(config))
}

/// kube-apiserver's TLS: HTTP/1.1, a client certificate asked for (naming
/// the Kubernetes CA as the one wanted) but not required, as Go's
/// `RequestClientCert`; whether it chains to the CA is judged afterwards,
/// and a request without a trusted one is answered 401. `tls13_only` for
/// the API servers of Talos v1.14 and later.
pub fn kube_api_config(
    identity: ServerIdentity,
    kubernetes_ca: &str,
    tls13_only: bool,
) -> Result<ServerConfig, TlsError> {
    let provider = provider();
    let ca = pki::certificate_der(kubernetes_ca)?;
    let hints = x509_parser::parse_x509_certificate(&ca)
        .map(|(_, parsed)| vec![DistinguishedName::from(parsed.subject().as_raw().to_vec())])
        .unwrap_or_default();
    let verifier = ProofOfPossession {
        algorithms: provider.signature_verification_algorithms,
        mandatory: false,
        hints,
    };
    let builder = ServerConfig::builder_with_provider(provider);
    let builder = if tls13_only {
        builder.with_protocol_versions(&[&rustls::version::TLS13])?
    } else {
        builder.with_safe_default_protocol_versions()?
    };
    let mut config = builder
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(identity.chain, identity.key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Asks for a client certificate and checks proof of its key, nothing more.
#[derive(Debug)]
struct ProofOfPossession {
    algorithms: WebPkiSupportedAlgorithms,
    /// Whether a client without a certificate is turned away.
    mandatory: bool,
    /// The CAs named to the client as acceptable issuers.
    hints: Vec<DistinguishedName>,
}

impl ClientCertVerifier for ProofOfPossession {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Judges client certificates against the node's OS CA.
pub struct ClientCheck {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl ClientCheck {
    pub fn trusting(os_ca: &str) -> Result<Self, TlsError> {
        let mut roots = RootCertStore::empty();
        roots.add(pki::certificate_der(os_ca)?)?;
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider()).build()?;
        Ok(Self { verifier })
    }

    pub fn caller(&self, connection: &ServerConnection) -> Caller {
        let Some((leaf, intermediates)) = connection
            .peer_certificates()
            .and_then(|chain| chain.split_first())
        else {
            return Caller::Untrusted {
                reason: "no client certificate".into(),
            };
        };
        match self
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
        {
            Ok(_) => Caller::Verified {
                roles: pki::organizations(leaf),
            },
            Err(e) => Caller::Untrusted {
                reason: e.to_string(),
            },
        }
    }
}

/// An accepted TLS connection and who is on the other end; tonic hands
/// the caller to every request on it.
pub struct TlsConnection {
    pub stream: tokio_rustls::server::TlsStream<TcpStream>,
    pub caller: Caller,
}

impl Connected for TlsConnection {
    type ConnectInfo = Caller;

    fn connect_info(&self) -> Caller {
        self.caller.clone()
    }
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use rustls::pki_types::ServerName;
    use rustls::version::{TLS12, TLS13};
    use rustls::{ClientConfig, SupportedProtocolVersion};
    use tokio_rustls::{TlsAcceptor, TlsConnector};

    use super::*;
    use crate::talos::pki::tests::ca;

    /// A handshake of a client speaking only `version` (and trusting the
    /// Kubernetes CA) with an API server; Err holds the client's error.
    async fn handshake(
        tls13_only: bool,
        version: &'static SupportedProtocolVersion,
    ) -> Result<(), String> {
        let ca = ca(&rcgen::PKCS_ECDSA_P256_SHA256, "kubernetes");
        let ip = Ipv4Addr::new(10, 0, 128, 11);
        let identity = pki::kube_apiserver_identity(&ca, &[ip], &[]).unwrap();
        let server = kube_api_config(identity, &ca.certificate, tls13_only).unwrap();
        let mut roots = RootCertStore::empty();
        roots
            .add(pki::certificate_der(&ca.certificate).unwrap())
            .unwrap();
        let client = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let accept = tokio::spawn(async move {
            TlsAcceptor::from(Arc::new(server))
                .accept(server_io)
                .await
                .map(|_| ())
        });
        let connected = TlsConnector::from(Arc::new(client))
            .connect(ServerName::IpAddress(ip.into()), client_io)
            .await;
        // The client's end stays open until the server is done too.
        let accepted = accept.await.unwrap();
        let connected = connected.map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            connected.is_ok(),
            accepted.is_ok(),
            "{connected:?} {accepted:?}"
        );
        connected
    }

    #[tokio::test]
    async fn the_v1_14_api_server_refuses_tls_1_2_clients() {
        assert_eq!(handshake(false, &TLS12).await, Ok(()), "before v1.14");
        assert_eq!(handshake(false, &TLS13).await, Ok(()));
        assert_eq!(handshake(true, &TLS13).await, Ok(()));
        let refused = handshake(true, &TLS12).await.unwrap_err();
        assert!(refused.contains("ProtocolVersion"), "{refused}");
    }
}
