//! talosctl's `secrets.yaml`: the bundle as `talosctl gen secrets` writes it.
//!
//! ```yaml
//! cluster: {id, secret}
//! secrets: {bootstraptoken, secretboxencryptionsecret | aescbcencryptionsecret}
//! trustdinfo: {token}
//! certs:
//!     etcd / k8s / k8saggregator / os: {crt, key}   # base64 of PEM
//!     k8sserviceaccount: {key}
//! ```
//!
//! Unknown keys are ignored, as talosctl ignores them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::{EncryptionSecret, Secrets, SecretsError, token};
use crate::talos::pki::{CertificateAuthority, PrivateKeyPem};
use crate::talos::yaml;

const CLUSTER_ID: &str = "cluster.id";
const CLUSTER_SECRET: &str = "cluster.secret";
const BOOTSTRAP_TOKEN: &str = "secrets.bootstraptoken";
const SECRETBOX: &str = "secrets.secretboxencryptionsecret";
const AESCBC: &str = "secrets.aescbcencryptionsecret";
const TRUSTD_TOKEN: &str = "trustdinfo.token";
const SERVICE_ACCOUNT_KEY: &str = "certs.k8sserviceaccount.key";

/// Where one CA lives in the file.
struct CaFields {
    name: &'static str,
    crt: &'static str,
    key: &'static str,
}

const ETCD: CaFields = CaFields {
    name: "certs.etcd",
    crt: "certs.etcd.crt",
    key: "certs.etcd.key",
};
const K8S: CaFields = CaFields {
    name: "certs.k8s",
    crt: "certs.k8s.crt",
    key: "certs.k8s.key",
};
const K8S_AGGREGATOR: CaFields = CaFields {
    name: "certs.k8saggregator",
    crt: "certs.k8saggregator.crt",
    key: "certs.k8saggregator.key",
};
const OS: CaFields = CaFields {
    name: "certs.os",
    crt: "certs.os.crt",
    key: "certs.os.key",
};

pub(super) fn read(text: &str) -> Result<Secrets, SecretsError> {
    let documents = yaml::parse_documents(text)?;
    let root = match documents.as_slice() {
        [root @ Value::Object(_)] => root,
        [] => return Err(SecretsError::Missing("cluster")),
        _ => {
            return Err(SecretsError::Invalid {
                field: "the file",
                reason: "must be a single YAML mapping".into(),
            });
        }
    };

    let bootstrap_token = required(root, BOOTSTRAP_TOKEN)?;
    if !token::is_valid(bootstrap_token) {
        return Err(invalid(
            BOOTSTRAP_TOKEN,
            "must have the form [0-9a-z]{6}.[0-9a-z]{16}",
        ));
    }
    Ok(Secrets {
        cluster_id: required(root, CLUSTER_ID)?.to_owned(),
        cluster_secret: required(root, CLUSTER_SECRET)?.to_owned(),
        bootstrap_token: bootstrap_token.to_owned(),
        encryption: encryption(root)?,
        trustd_token: required(root, TRUSTD_TOKEN)?.to_owned(),
        etcd_ca: ca(root, &ETCD)?,
        kubernetes_ca: ca(root, &K8S)?,
        aggregator_ca: ca(root, &K8S_AGGREGATOR)?,
        service_account_key: PrivateKeyPem::parse(&pem_text(root, SERVICE_ACCOUNT_KEY)?)
            .map_err(|e| invalid(SERVICE_ACCOUNT_KEY, e.to_string()))?,
        os_ca: ca(root, &OS)?,
    })
}

pub(super) fn write(secrets: &Secrets) -> String {
    let b64 = |text: &str| STANDARD.encode(text);
    let ca = |ca: &CertificateAuthority| json!({"crt": b64(ca.certificate_pem()), "key": b64(ca.key().as_pem())});
    let encryption = match &secrets.encryption {
        EncryptionSecret::Secretbox(key) => json!({"secretboxencryptionsecret": key}),
        EncryptionSecret::AesCbc(key) => json!({"aescbcencryptionsecret": key}),
    };
    let mut secrets_section = json!({"bootstraptoken": secrets.bootstrap_token});
    if let (Value::Object(section), Value::Object(encryption)) = (&mut secrets_section, encryption)
    {
        section.extend(encryption);
    }
    let document = json!({
        "cluster": {"id": secrets.cluster_id, "secret": secrets.cluster_secret},
        "secrets": secrets_section,
        "trustdinfo": {"token": secrets.trustd_token},
        "certs": {
            "etcd": ca(&secrets.etcd_ca),
            "k8s": ca(&secrets.kubernetes_ca),
            "k8saggregator": ca(&secrets.aggregator_ca),
            "k8sserviceaccount": {"key": b64(secrets.service_account_key.as_pem())},
            "os": ca(&secrets.os_ca),
        },
    });
    yaml::to_string(&[document])
}

fn encryption(root: &Value) -> Result<EncryptionSecret, SecretsError> {
    match (optional(root, SECRETBOX)?, optional(root, AESCBC)?) {
        (Some(key), None) => {
            check_key_length(SECRETBOX, key, &[32])?;
            Ok(EncryptionSecret::Secretbox(key.to_owned()))
        }
        (None, Some(key)) => {
            check_key_length(AESCBC, key, &[16, 24, 32])?;
            Ok(EncryptionSecret::AesCbc(key.to_owned()))
        }
        (None, None) => Err(SecretsError::Missing(SECRETBOX)),
        (Some(_), Some(_)) => Err(invalid(
            "secrets",
            "holds both secretboxencryptionsecret and aescbcencryptionsecret; keep one",
        )),
    }
}

fn check_key_length(field: &'static str, key: &str, lengths: &[usize]) -> Result<(), SecretsError> {
    match STANDARD.decode(key) {
        Ok(bytes) if lengths.contains(&bytes.len()) => Ok(()),
        Ok(_) => Err(invalid(field, format!("must decode to {lengths:?} bytes"))),
        Err(_) => Err(invalid(field, "is not base64")),
    }
}

fn ca(root: &Value, fields: &CaFields) -> Result<CertificateAuthority, SecretsError> {
    let crt = pem_text(root, fields.crt)?;
    let key = pem_text(root, fields.key)?;
    CertificateAuthority::from_pem(&crt, &key).map_err(|e| invalid(fields.name, e.to_string()))
}

/// A base64-encoded PEM field, decoded.
fn pem_text(root: &Value, field: &'static str) -> Result<String, SecretsError> {
    let bytes = STANDARD
        .decode(required(root, field)?)
        .map_err(|_| invalid(field, "is not base64"))?;
    String::from_utf8(bytes).map_err(|_| invalid(field, "is not PEM text"))
}

fn required<'a>(root: &'a Value, field: &'static str) -> Result<&'a str, SecretsError> {
    optional(root, field)?.ok_or(SecretsError::Missing(field))
}

/// A non-empty string at the dotted `field` path, if present.
fn optional<'a>(root: &'a Value, field: &'static str) -> Result<Option<&'a str>, SecretsError> {
    let value = field.split('.').try_fold(root, |value, key| value.get(key));
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(invalid(field, "must be a string")),
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> SecretsError {
    SecretsError::Invalid {
        field,
        reason: reason.into(),
    }
}
