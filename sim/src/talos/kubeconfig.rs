//! The admin kubeconfig a control plane hands out: the cluster's endpoint,
//! its CA, and a fresh `system:masters` client certificate signed with the
//! cluster CA key, packed (as Talos streams it) as a tar.gz holding one file
//! named `kubeconfig`.

use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::json;

use super::pki::{self, CertificateAuthority, PkiError};

/// What a kubeconfig is made from.
pub struct KubeconfigSource {
    pub cluster_name: String,
    pub endpoint: String,
    pub ca: CertificateAuthority,
}

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("cannot issue the admin certificate: the cluster CA {0}")]
    Certificate(#[from] PkiError),
    #[error("cannot write the kubeconfig: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("cannot pack the kubeconfig: {0}")]
    Archive(#[from] std::io::Error),
}

fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The kubeconfig YAML.
pub fn render(source: &KubeconfigSource) -> Result<String, KubeconfigError> {
    let admin = pki::kubernetes_admin(&source.ca)?;
    let name = &source.cluster_name;
    let user = format!("admin@{name}");
    let document = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": name,
            "cluster": {
                "server": source.endpoint,
                "certificate-authority-data": base64(&source.ca.certificate),
            },
        }],
        "users": [{
            "name": user,
            "user": {
                "client-certificate-data": base64(&admin.certificate),
                "client-key-data": base64(admin.key.expose()),
            },
        }],
        "contexts": [{
            "name": user,
            "context": {"cluster": name, "namespace": "default", "user": user},
        }],
        "current-context": user,
    });
    Ok(serde_yaml_ng::to_string(&document)?)
}

/// A tar.gz holding `kubeconfig`.
pub fn archive(kubeconfig: &str) -> Result<Vec<u8>, KubeconfigError> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    let mut header = tar::Header::new_gnu();
    header.set_size(kubeconfig.len() as u64);
    header.set_mode(0o600);
    header.set_cksum();
    builder.append_data(&mut header, "kubeconfig", kubeconfig.as_bytes())?;
    Ok(builder.into_inner()?.finish()?)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::talos::sample::SampleCluster;

    #[test]
    fn packs_an_admin_kubeconfig_for_the_endpoint() {
        let cluster = SampleCluster::generate("demo", "https://10.0.128.10:6443").unwrap();
        let source = KubeconfigSource {
            cluster_name: cluster.name.clone(),
            endpoint: cluster.endpoint.clone(),
            ca: cluster.kubernetes_ca.clone(),
        };
        let packed = archive(&render(&source).unwrap()).unwrap();

        let mut files = tar::Archive::new(flate2::read::GzDecoder::new(packed.as_slice()));
        let mut entries = files.entries().unwrap();
        let mut file = entries.next().unwrap().unwrap();
        assert_eq!(file.path().unwrap().to_str(), Some("kubeconfig"));
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert!(entries.next().is_none());

        let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(
            yaml["clusters"][0]["cluster"]["server"],
            "https://10.0.128.10:6443"
        );
        assert_eq!(yaml["current-context"], "admin@demo");
        let decode = |v: &serde_yaml_ng::Value| {
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(v.as_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
        };
        let ca = decode(&yaml["clusters"][0]["cluster"]["certificate-authority-data"]);
        assert_eq!(ca, cluster.kubernetes_ca.certificate);
        let cert = decode(&yaml["users"][0]["user"]["client-certificate-data"]);
        let der = pki::certificate_der(&cert).unwrap();
        assert_eq!(pki::organizations(&der), vec!["system:masters".to_string()]);
    }

    #[test]
    fn needs_the_cluster_ca_key() {
        let cluster = SampleCluster::generate("demo", "https://10.0.128.10:6443").unwrap();
        let source = KubeconfigSource {
            cluster_name: "demo".into(),
            endpoint: cluster.endpoint.clone(),
            ca: CertificateAuthority {
                key: None,
                ..cluster.kubernetes_ca
            },
        };
        assert!(matches!(
            render(&source),
            Err(KubeconfigError::Certificate(PkiError::NoKey))
        ));
    }
}
