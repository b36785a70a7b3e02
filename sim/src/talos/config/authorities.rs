//! The CAs of a config (`machine.ca`, `cluster.ca`, from v1.14 also the
//! `KubeAPIServerCAConfig` document): certificates that parse, and keys
//! only on control planes, each matching its certificate. The v1alpha1
//! fields hold base64 of PEM, the document PEM text.

use super::documents::Ca;
use super::{ConfigError, non_empty};
use crate::talos::pki::{self, CertificateAuthority};
use crate::talos::secret::Secret;

/// The field names of one CA in the config.
pub(super) struct CaFields {
    crt: &'static str,
    key: &'static str,
}

/// How a CA's fields are written.
#[derive(Clone, Copy)]
pub(super) enum Encoding {
    /// base64 of PEM (v1alpha1).
    Base64,
    /// PEM text (the v1.14 documents).
    Pem,
}

pub(super) const OS_CA: CaFields = CaFields {
    crt: "machine.ca.crt",
    key: "machine.ca.key",
};
pub(super) const KUBERNETES_CA: CaFields = CaFields {
    crt: "cluster.ca.crt",
    key: "cluster.ca.key",
};
/// `KubeAPIServerCAConfig`'s issuing CA.
pub(super) const KUBERNETES_CA_DOCUMENT: CaFields = CaFields {
    crt: "KubeAPIServerCAConfig.issuingCA.cert",
    key: "KubeAPIServerCAConfig.issuingCA.key",
};
/// `KubeAPIServerCAConfig`'s accepted CAs (the first one: the emulation
/// keeps one Kubernetes CA).
pub(super) const KUBERNETES_ACCEPTED_CA: CaFields = CaFields {
    crt: "KubeAPIServerCAConfig.acceptedCAs",
    key: "KubeAPIServerCAConfig.issuingCA.key",
};

/// A CA from the config; its key only where `control_plane`, and then it
/// must be the certificate's.
pub(super) fn authority(
    ca: Option<&Ca>,
    fields: &CaFields,
    control_plane: bool,
) -> Result<CertificateAuthority, ConfigError> {
    let crt = ca.and_then(|c| c.crt.as_ref());
    let key = ca.and_then(|c| c.key.as_ref());
    read(crt, key, fields, Encoding::Base64, control_plane)
}

/// A field's text as written, unless blank.
fn present(field: Option<&String>) -> Option<&str> {
    field
        .filter(|text| non_empty(Some(*text)).is_some())
        .map(String::as_str)
}

/// A CA from its certificate and key fields, written as `encoding` says;
/// a control plane needs the key. Talos refuses the key on a worker in
/// v1alpha1 only (`KubeAPIServerCAConfig` takes it on any node).
pub(super) fn read(
    crt: Option<&String>,
    key: Option<&String>,
    fields: &CaFields,
    encoding: Encoding,
    control_plane: bool,
) -> Result<CertificateAuthority, ConfigError> {
    let pki_error = |field| move |source| ConfigError::Pki { field, source };
    let decode = |text: &str| match encoding {
        Encoding::Base64 => pki::decode_config_pem(text),
        Encoding::Pem => Ok(text.to_string()),
    };
    let crt = present(crt).ok_or(ConfigError::Missing(fields.crt))?;
    let certificate = decode(crt).map_err(pki_error(fields.crt))?;
    let der = pki::certificate_der(&certificate).map_err(pki_error(fields.crt))?;
    let key_allowed = control_plane || matches!(encoding, Encoding::Pem);
    let key = match (present(key), control_plane) {
        (None, true) => return Err(ConfigError::Missing(fields.key)),
        (Some(_), false) if !key_allowed => return Err(ConfigError::KeyOnWorker(fields.key)),
        (None, false) => None,
        (Some(key), _) => {
            let pem = decode(key).map_err(pki_error(fields.key))?;
            let pair = pki::key_pair(&pem).map_err(pki_error(fields.key))?;
            pki::check_key_matches(&der, &pair).map_err(pki_error(fields.key))?;
            Some(Secret::new(pem))
        }
    };
    Ok(CertificateAuthority { certificate, key })
}
