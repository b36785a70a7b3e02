//! The files a ring's components start from, in its work directory:
//! `pki/` (the Kubernetes CA, kube-apiserver's serving certificate, the
//! service-account key, kube-controller-manager's client certificate as a
//! kubeconfig), the encryption and authentication configurations, and
//! `etcd/` (a directory per member of its data, kept across restarts, and
//! their ports: `etcd_ring`). Keys are written owner-only.

use std::fs;
use std::io::Write;
use std::net::Ipv4Addr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ipnet::IpNet;
use serde_json::json;

use super::spec::{ControlPlaneSpec, ServingNames};
use crate::talos::pki::{self, IssuedCertificate, PkiError};

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot issue a certificate: {0}")]
    Pki(#[from] PkiError),
    #[error("the control planes' config holds no service-account key")]
    NoServiceAccountKey,
}

/// The paths of one ring's files.
#[derive(Debug, Clone)]
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    /// The directory of `store` under `work_dir`.
    pub fn of(work_dir: &Path, store: &str) -> Self {
        let name: String = store
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        Self {
            dir: work_dir.join(name),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Writes everything the components read; the serving certificate is made
/// anew each time (for the names the spec gives).
pub fn write(layout: &Layout, spec: &ControlPlaneSpec, api_server: &str) -> Result<(), FilesError> {
    let ca = &spec.kubernetes_ca;
    let ca_key = ca.key.as_ref().ok_or(PkiError::NoKey)?;
    put(layout, "pki/ca.crt", &ca.certificate, false)?;
    put(layout, "pki/ca.key", ca_key.expose(), true)?;
    serving_certificate(layout, spec, &spec.names)?;
    let account = spec
        .settings
        .service_account_key
        .as_ref()
        .ok_or(FilesError::NoServiceAccountKey)?;
    put(layout, "pki/sa.key", account.expose(), true)?;
    if let Some(encryption) = &spec.settings.encryption {
        put(layout, "encryption.json", encryption.expose(), true)?;
    }
    put(
        layout,
        "authentication.json",
        &json!({
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AuthenticationConfiguration",
            "anonymous": {
                "enabled": true,
                "conditions": [{"path": "/livez"}, {"path": "/readyz"}, {"path": "/healthz"}],
            },
        })
        .to_string(),
        false,
    )?;
    let manager = pki::client_certificate(ca, "system:kube-controller-manager", &[])?;
    put(
        layout,
        "controller-manager.kubeconfig",
        &kubeconfig(api_server, &ca.certificate, User::Certificate(&manager)),
        true,
    )?;
    Ok(())
}

/// kube-apiserver's serving certificate for `names` (it reloads the
/// files when they change).
pub fn serving_certificate(
    layout: &Layout,
    spec: &ControlPlaneSpec,
    names: &ServingNames,
) -> Result<(), FilesError> {
    // Besides the nodes': loopback (where hct-sim and the components dial
    // it, as KubePrism does on a node) and the `kubernetes` Service's IP.
    let mut ips = names.ips.clone();
    ips.push(Ipv4Addr::LOCALHOST);
    ips.extend(spec.services.iter().find_map(|net| match net {
        IpNet::V4(v4) => v4.hosts().next(),
        IpNet::V6(_) => None,
    }));
    let serving = pki::kube_apiserver_pem(&spec.kubernetes_ca, &ips, &names.dns_names)?;
    // The key first: a reload between the two writes then fails to match
    // and keeps the old pair, rather than pairing a new certificate with
    // the old key.
    put(layout, "pki/apiserver.key", serving.key.expose(), true)?;
    put(layout, "pki/apiserver.crt", &serving.certificate, false)?;
    Ok(())
}

/// Who a kubeconfig is for.
pub enum User<'a> {
    Certificate(&'a IssuedCertificate),
    /// A bearer token (a ServiceAccount's).
    Token(&'a str),
}

/// A kubeconfig for `user` at `server`.
pub fn kubeconfig(server: &str, ca: &str, user: User<'_>) -> String {
    use base64::Engine;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let user = match user {
        User::Certificate(issued) => json!({
            "client-certificate-data": b64(&issued.certificate),
            "client-key-data": b64(issued.key.expose()),
        }),
        User::Token(token) => json!({"token": token}),
    };
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sim", "cluster": {
            "server": server,
            "certificate-authority-data": b64(ca),
        }}],
        "users": [{"name": "sim", "user": user}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim"}}],
        "current-context": "sim",
    })
    .to_string()
}

/// Writes `text` to `name` in the ring's directory (owner-only when
/// `private`) and says where.
pub fn put(layout: &Layout, name: &str, text: &str, private: bool) -> Result<PathBuf, FilesError> {
    let path = layout.path(name);
    let wrap = |source| FilesError::Write {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(wrap)?;
    }
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    // Made anew, so that its mode is this one.
    let _ = fs::remove_file(&tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(&tmp)
        .map_err(wrap)?;
    file.write_all(text.as_bytes()).map_err(wrap)?;
    fs::rename(&tmp, &path).map_err(wrap)?;
    Ok(path)
}
