//! Sample cluster secrets, machine configs and client certificates, for
//! tests and demos of the emulated nodes that need valid inputs without
//! hct's own generator: an Ed25519 OS CA, an ECDSA P-256 Kubernetes CA (as
//! Talos makes them), Talos API and Kubernetes client certificates, and
//! configs in the shapes Talos v1.11 and v1.12 (and v1.13) take, and from
//! v1.14 on the multi-document shape: a small v1alpha1 document and the
//! cluster and Kubernetes settings in their own documents.

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ED25519, SignatureAlgorithm,
};
use serde_json::{Value, json};

use super::pki::CertificateAuthority;
use super::secret::Secret;
use super::version::TalosVersion;

/// How a sample config routes traffic out of the private network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleNetwork {
    /// No default route: the node has no egress.
    Isolated,
    /// `machine.network.interfaces[].routes` (v1.11 style, deprecated in v1.12).
    Interfaces { gateway: String },
    /// A `LinkConfig` document whose route has no destination (v1.12 style,
    /// v1.13 too).
    LinkConfig { gateway: String },
}

/// One node's part of a sample config.
#[derive(Debug, Clone)]
pub struct SampleNode {
    pub control_plane: bool,
    /// The installer tag, e.g. `v1.12.6`.
    pub talos: String,
    pub network: SampleNetwork,
    pub hostname: Option<String>,
    /// The Kubernetes version, as the tag of `cluster.apiServer.image`;
    /// None leaves it to Talos' default.
    pub kubernetes: Option<String>,
}

impl SampleNode {
    /// A node with a default route via `gateway` in the style of `talos`.
    pub fn new(control_plane: bool, talos: &str, gateway: &str) -> Self {
        let gateway = gateway.to_string();
        let network = if talos.starts_with("v1.11") {
            SampleNetwork::Interfaces { gateway }
        } else {
            SampleNetwork::LinkConfig { gateway }
        };
        Self {
            control_plane,
            talos: talos.to_string(),
            network,
            hostname: None,
            kubernetes: None,
        }
    }
}

/// The secrets of one sample cluster.
#[derive(Debug, Clone)]
pub struct SampleCluster {
    pub name: String,
    pub endpoint: String,
    pub id: String,
    pub secret: Secret,
    pub trustd_token: Secret,
    pub bootstrap_token: Secret,
    pub os_ca: CertificateAuthority,
    pub kubernetes_ca: CertificateAuthority,
    /// The secretbox key of the etcd encryption config (v1.14 configs).
    pub etcd_encryption: Secret,
}

/// A client certificate with its key (PEM).
#[derive(Debug, Clone)]
pub struct ClientCertificate {
    pub certificate: String,
    pub key: Secret,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot make sample certificates: {0}")]
pub struct SampleError(#[from] rcgen::Error);

fn token(length: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..length)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

fn random_base64(bytes: usize) -> String {
    let raw: Vec<u8> = (0..bytes).map(|_| fastrand::u8(..)).collect();
    base64::engine::general_purpose::STANDARD.encode(raw)
}

fn encoded(pem: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn authority(
    algorithm: &'static SignatureAlgorithm,
    organization: &str,
) -> Result<CertificateAuthority, SampleError> {
    let key = KeyPair::generate_for(algorithm)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::OrganizationName, organization);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let certificate = params.self_signed(&key)?;
    Ok(CertificateAuthority {
        certificate: certificate.pem(),
        key: Some(Secret::new(key.serialize_pem())),
    })
}

impl SampleCluster {
    /// Fresh secrets for a cluster whose API is at `endpoint`.
    pub fn generate(name: &str, endpoint: &str) -> Result<Self, SampleError> {
        Ok(Self {
            name: name.to_string(),
            endpoint: endpoint.to_string(),
            id: random_base64(32),
            secret: Secret::new(random_base64(32)),
            trustd_token: Secret::new(format!("{}.{}", token(6), token(16))),
            bootstrap_token: Secret::new(format!("{}.{}", token(6), token(16))),
            os_ca: authority(&PKCS_ED25519, "talos")?,
            kubernetes_ca: authority(&PKCS_ECDSA_P256_SHA256, "kubernetes")?,
            etcd_encryption: Secret::new(random_base64(32)),
        })
    }

    /// A Talos API client certificate for `role` (e.g. `os:admin`), issued
    /// by the OS CA, its Ed25519 key labelled the way talosconfig does.
    pub fn client_certificate(&self, role: &str) -> Result<ClientCertificate, SampleError> {
        client_certificate(&self.os_ca, role)
    }

    /// A Kubernetes client certificate for `user` in `groups` (subject
    /// `CN=user, O=group…`), issued by the Kubernetes CA with an ECDSA
    /// P-256 key written as SEC1 (`EC PRIVATE KEY`), as in the admin
    /// kubeconfig Talos hands out.
    pub fn kubernetes_client_certificate(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<ClientCertificate, SampleError> {
        use p256::pkcs8::DecodePrivateKey;
        let issuer = issuer(&self.kubernetes_ca)?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.distinguished_name.push(DnType::CommonName, user);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let certificate = params.signed_by(&key, &issuer)?;
        let sec1 = p256::SecretKey::from_pkcs8_der(&key.serialize_der())
            .ok()
            .and_then(|k| k.to_sec1_pem(Default::default()).ok())
            .ok_or(SampleError(rcgen::Error::CouldNotParseKeyPair))?;
        Ok(ClientCertificate {
            certificate: certificate.pem(),
            key: Secret::new(sec1.to_string()),
        })
    }

    /// The admin kubeconfig's client certificate: `CN=admin`,
    /// `O=system:masters`, from the Kubernetes CA.
    pub fn kubernetes_admin(&self) -> Result<ClientCertificate, SampleError> {
        self.kubernetes_client_certificate("admin", &["system:masters"])
    }

    /// The machine config of one node, YAML documents as Talos reads them.
    pub fn machine_config(&self, node: &SampleNode) -> String {
        let control_plane = node.control_plane;
        let key = |ca: &CertificateAuthority| match (&ca.key, control_plane) {
            (Some(key), true) => encoded(key.expose()),
            _ => String::new(),
        };
        let mut machine = json!({
            "type": if control_plane { "controlplane" } else { "worker" },
            "token": self.trustd_token.expose(),
            "ca": {"crt": encoded(&self.os_ca.certificate), "key": key(&self.os_ca)},
            "install": {"image": format!("ghcr.io/siderolabs/installer:{}", node.talos)},
        });
        let mut documents = Vec::new();
        match &node.network {
            SampleNetwork::Isolated => {}
            SampleNetwork::Interfaces { gateway } => {
                machine["network"] = json!({"interfaces": [{
                    "deviceSelector": {"physical": true},
                    "dhcp": true,
                    "routes": [{"network": "0.0.0.0/0", "gateway": gateway}],
                }]});
            }
            SampleNetwork::LinkConfig { gateway } => documents.push(json!({
                "apiVersion": "v1alpha1",
                "kind": "LinkConfig",
                "name": "eth0",
                "routes": [{"gateway": gateway}],
            })),
        }
        if let Some(hostname) = &node.hostname {
            if node.talos.starts_with("v1.11") {
                machine["network"]["hostname"] = json!(hostname);
            } else {
                documents.push(json!({
                    "apiVersion": "v1alpha1",
                    "kind": "HostnameConfig",
                    "hostname": hostname,
                }));
            }
        }
        let multidoc = node
            .talos
            .parse::<TalosVersion>()
            .is_ok_and(|v| v.at_least(1, 14));
        let mut v1alpha1 = json!({"version": "v1alpha1", "machine": machine});
        if multidoc {
            v1alpha1["cluster"] = json!({"token": self.bootstrap_token.expose()});
            documents.extend(self.kubernetes_documents(node));
        } else {
            v1alpha1["cluster"] = json!({
                "id": self.id,
                "secret": self.secret.expose(),
                "clusterName": self.name,
                "controlPlane": {"endpoint": self.endpoint},
                "token": self.bootstrap_token.expose(),
                "ca": {
                    "crt": encoded(&self.kubernetes_ca.certificate),
                    "key": key(&self.kubernetes_ca),
                },
            });
            if let Some(kubernetes) = &node.kubernetes {
                v1alpha1["cluster"]["apiServer"] =
                    json!({"image": format!("registry.k8s.io/kube-apiserver:{kubernetes}")});
            }
        }
        std::iter::once(v1alpha1)
            .chain(documents)
            .map(|d: Value| serde_yaml_ng::to_string(&d).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("---\n")
    }
}

impl SampleCluster {
    /// What Talos v1.14 takes in documents of their own: the cluster's
    /// identity, name and endpoint, the Kubernetes CA (as PEM text; its
    /// key on control planes only) and, on control planes, the etcd
    /// encryption config and the API server's image when one is named.
    fn kubernetes_documents(&self, node: &SampleNode) -> Vec<Value> {
        let document = |kind: &str, mut fields: Value| {
            fields["apiVersion"] = json!("v1alpha1");
            fields["kind"] = json!(kind);
            fields
        };
        let ca = &self.kubernetes_ca;
        let authority = match (&ca.key, node.control_plane) {
            (Some(key), true) => {
                json!({"issuingCA": {"cert": ca.certificate, "key": key.expose()}})
            }
            _ => json!({"acceptedCAs": [ca.certificate]}),
        };
        let mut documents = vec![
            document(
                "DiscoveryIdentityConfig",
                json!({"clusterID": self.id, "clusterSecret": self.secret.expose()}),
            ),
            document(
                "KubeClusterConfig",
                json!({"clusterName": self.name, "endpoint": self.endpoint}),
            ),
            document("KubeAPIServerCAConfig", authority),
        ];
        if node.control_plane {
            documents.push(document(
                "KubeEtcdEncryptionConfig",
                json!({"config": {"resources": [{
                    "resources": ["secrets"],
                    "providers": [{"secretbox": {"keys": [
                        {"name": "key1", "secret": self.etcd_encryption.expose()},
                    ]}}],
                }]}}),
            ));
            if let Some(kubernetes) = &node.kubernetes {
                documents.push(document(
                    "KubeAPIServerConfig",
                    json!({"image": format!("registry.k8s.io/kube-apiserver:{kubernetes}")}),
                ));
            }
        }
        documents
    }
}

fn client_certificate(
    ca: &CertificateAuthority,
    role: &str,
) -> Result<ClientCertificate, SampleError> {
    let issuer = issuer(ca)?;
    let key = KeyPair::generate_for(&PKCS_ED25519)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::OrganizationName, role);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let certificate = params.signed_by(&key, &issuer)?;
    Ok(ClientCertificate {
        certificate: certificate.pem(),
        key: Secret::new(
            key.serialize_pem()
                .replace("PRIVATE KEY", "ED25519 PRIVATE KEY"),
        ),
    })
}

fn issuer(ca: &CertificateAuthority) -> Result<Issuer<'static, KeyPair>, SampleError> {
    let ca_key = KeyPair::from_pem(ca.key.as_ref().map(Secret::expose).unwrap_or_default())?;
    Ok(Issuer::from_ca_cert_pem(&ca.certificate, ca_key)?)
}
