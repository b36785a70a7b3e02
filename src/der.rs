//! Just enough DER to find a certificate's public key: the AutoMTLS verifier
//! checks Terraform's P-521 key, and Talos maintenance-mode certificates are
//! pinned by the SHA-256 of their SubjectPublicKeyInfo.

/// One DER element at the start of an input: its tag, the whole element,
/// its contents, and what follows it.
type Element<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

fn element(input: &[u8]) -> Option<Element<'_>> {
    let (&tag, after_tag) = input.split_first()?;
    let (&first, rest) = after_tag.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let len = rest[..count]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[count..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    Some((tag, &input[..header + len], &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const VERSION: u8 = 0xa0;
const BIT_STRING: u8 = 0x03;

/// The SubjectPublicKeyInfo element of an X.509 certificate, header included.
pub fn subject_public_key_info(certificate: &[u8]) -> Option<&[u8]> {
    let (SEQUENCE, _, certificate, _) = element(certificate)? else {
        return None;
    };
    let (SEQUENCE, _, mut tbs, _) = element(certificate)? else {
        return None;
    };
    if tbs.first() == Some(&VERSION) {
        tbs = element(tbs)?.3;
    }
    // serialNumber, signature, issuer, validity, subject
    for _ in 0..5 {
        tbs = element(tbs)?.3;
    }
    let (SEQUENCE, spki, _, _) = element(tbs)? else {
        return None;
    };
    Some(spki)
}

/// The subjectPublicKey bits of a certificate (for EC keys: the SEC1 point).
pub fn subject_public_key(certificate: &[u8]) -> Option<&[u8]> {
    let spki = subject_public_key_info(certificate)?;
    let (_, _, contents, _) = element(spki)?;
    let (_, _, _, rest) = element(contents)?; // the algorithm
    let (BIT_STRING, _, bits, _) = element(rest)? else {
        return None;
    };
    // The first byte counts unused bits, always 0 for keys.
    bits.split_first()
        .filter(|(unused, _)| **unused == 0)
        .map(|(_, key)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_public_key_of_a_real_certificate() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        assert_eq!(subject_public_key(cert.der()), Some(key.public_key_raw()));
        assert_eq!(
            subject_public_key_info(cert.der()),
            Some(rcgen::PublicKeyData::subject_public_key_info(&key).as_slice())
        );
        assert_eq!(subject_public_key(b"\x30\x03\x02\x01"), None);
    }
}
