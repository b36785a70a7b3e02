//! Tokens in kubeadm's bootstrap-token form, `[0-9a-z]{6}.[0-9a-z]{16}`:
//! Talos uses it for the Kubernetes bootstrap token and for trustd's token.

use super::SecretsError;
use super::random_bytes;

const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
const ID_LEN: usize = 6;
const SECRET_LEN: usize = 16;

/// A new random token.
pub(crate) fn generate() -> Result<String, SecretsError> {
    Ok(format!(
        "{}.{}",
        random_word(ID_LEN)?,
        random_word(SECRET_LEN)?
    ))
}

/// Whether `token` has the bootstrap-token form Kubernetes requires.
pub(crate) fn is_valid(token: &str) -> bool {
    let valid_word =
        |word: &str, len: usize| word.len() == len && word.bytes().all(|b| ALPHABET.contains(&b));
    match token.split_once('.') {
        Some((id, secret)) => valid_word(id, ID_LEN) && valid_word(secret, SECRET_LEN),
        None => false,
    }
}

/// `len` characters drawn uniformly from the alphabet.
fn random_word(len: usize) -> Result<String, SecretsError> {
    let mut word = String::with_capacity(len);
    while word.len() < len {
        extend_word(&mut word, len, &random_bytes::<32>()?);
    }
    Ok(word)
}

/// Turns random bytes into characters until `word` is `len` long. Bytes of
/// 252 and up are dropped so every character is equally likely (256 is not
/// a multiple of 36), as kubeadm and Talos do.
fn extend_word(word: &mut String, len: usize, bytes: &[u8]) {
    const LIMIT: u8 = 252;
    for &byte in bytes {
        if byte < LIMIT && word.len() < len {
            word.push(char::from(ALPHABET[usize::from(byte) % ALPHABET.len()]));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn generated_tokens_have_the_bootstrap_form() {
        let tokens: Vec<String> = (0..200).map(|_| generate().unwrap()).collect();
        for token in &tokens {
            assert!(is_valid(token), "{token}");
            assert_eq!(token.len(), 23);
        }
        assert_eq!(tokens.iter().collect::<HashSet<_>>().len(), tokens.len());
        // Every character shows up across many tokens: no stuck alphabet.
        let seen: HashSet<char> = tokens.iter().flat_map(|t| t.chars()).collect();
        assert_eq!(seen.len(), 37, "36 characters plus the dot");
    }

    #[test]
    fn bytes_map_uniformly_onto_the_alphabet() {
        let mut word = String::new();
        extend_word(&mut word, 5, &[0, 35, 36, 252, 255, 251, 71, 9]);
        // 252 and 255 are dropped; 251 = 6 × 36 + 35; the fifth char ends it.
        assert_eq!(word, "0z0zz");
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        for token in [
            "",
            "abcdef",
            "abcdef.0123456789abcde",
            "abcdef.0123456789abcdefg",
            "ABCDEF.0123456789abcdef",
            "abcde.0123456789abcdef0",
            "abcdef-0123456789abcdef",
            "abcdef.0123456789abcd_f",
        ] {
            assert!(!is_valid(token), "{token:?}");
        }
        assert!(is_valid("inn7ol.u4ehnti8qyls9ymo"));
    }
}
