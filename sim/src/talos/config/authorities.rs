//! The CAs of a config (`machine.ca`, `cluster.ca`): certificates that
//! parse, and keys only on control planes, each matching its certificate.

use super::documents::Ca;
use super::{ConfigError, non_empty};
use crate::talos::pki::{self, CertificateAuthority};
use crate::talos::secret::Secret;

/// The field names of one CA in the config.
pub(super) struct CaFields {
    crt: &'static str,
    key: &'static str,
}

pub(super) const OS_CA: CaFields = CaFields {
    crt: "machine.ca.crt",
    key: "machine.ca.key",
};
pub(super) const KUBERNETES_CA: CaFields = CaFields {
    crt: "cluster.ca.crt",
    key: "cluster.ca.key",
};

/// A CA from the config; its key only where `control_plane`, and then it
/// must be the certificate's.
pub(super) fn authority(
    ca: Option<&Ca>,
    fields: &CaFields,
    control_plane: bool,
) -> Result<CertificateAuthority, ConfigError> {
    let pki_error = |field| move |source| ConfigError::Pki { field, source };
    let crt = non_empty(ca.and_then(|c| c.crt.as_ref())).ok_or(ConfigError::Missing(fields.crt))?;
    let certificate = pki::decode_config_pem(crt).map_err(pki_error(fields.crt))?;
    let der = pki::certificate_der(&certificate).map_err(pki_error(fields.crt))?;
    let key = match (non_empty(ca.and_then(|c| c.key.as_ref())), control_plane) {
        (None, true) => return Err(ConfigError::Missing(fields.key)),
        (Some(_), false) => return Err(ConfigError::KeyOnWorker(fields.key)),
        (None, false) => None,
        (Some(key), true) => {
            let pem = pki::decode_config_pem(key).map_err(pki_error(fields.key))?;
            let pair = pki::key_pair(&pem).map_err(pki_error(fields.key))?;
            pki::check_key_matches(&der, &pair).map_err(pki_error(fields.key))?;
            Some(Secret::new(pem))
        }
    };
    Ok(CertificateAuthority { certificate, key })
}
