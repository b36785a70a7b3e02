//! Kubernetes' protobuf wire format, as far as the sim reads it: kubectl's
//! typed clients (`kubectl certificate approve`) send
//! `application/vnd.kubernetes.protobuf` bodies: the `k8s\0` magic, then a
//! `runtime.Unknown` (apiVersion and kind, the raw object). Decoded: the
//! CertificateSigningRequest, to the fields its `approval` and `status`
//! subresources take (name, resourceVersion and the conditions), and the
//! Namespace that typed clients create (e.g. HashiCorp's kubernetes
//! provider): its metadata (name, generateName, labels, annotations,
//! resourceVersion) and its spec's finalizers.

use serde_json::{Value, json};

/// The media type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

/// One field: its number and its value (varint or bytes).
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(data: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = data.split_first()?;
        *data = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The fields of a message, in order; None when it is malformed.
fn fields(mut data: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = varint(&mut data)?;
        let field = match key & 7 {
            0 => Field::Varint(varint(&mut data)?),
            2 => {
                let len = usize::try_from(varint(&mut data)?).ok()?;
                let (bytes, rest) = (data.get(..len)?, data.get(len..)?);
                data = rest;
                Field::Bytes(bytes)
            }
            1 => {
                data = data.get(8..)?;
                continue;
            }
            5 => {
                data = data.get(4..)?;
                continue;
            }
            _ => return None,
        };
        out.push((key >> 3, field));
    }
    Some(out)
}

fn bytes<'a>(fields: &[(u64, Field<'a>)], number: u64) -> Vec<&'a [u8]> {
    fields
        .iter()
        .filter_map(|(n, f)| match f {
            Field::Bytes(b) if *n == number => Some(*b),
            _ => None,
        })
        .collect()
}

fn text(fields: &[(u64, Field<'_>)], number: u64) -> Option<String> {
    bytes(fields, number)
        .first()
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(str::to_string)
}

/// A `metav1.Time` (seconds since the epoch) as RFC 3339.
fn time(data: &[u8]) -> Option<String> {
    let fields = fields(data)?;
    let seconds = fields.iter().find_map(|(n, f)| match f {
        Field::Varint(v) if *n == 1 => Some(*v),
        _ => None,
    })?;
    Some(super::timestamp(seconds))
}

/// The object inside the envelope: (apiVersion, kind, raw bytes).
fn unwrap(body: &[u8]) -> Option<(String, String, &[u8])> {
    let unknown = fields(body.strip_prefix(MAGIC)?)?;
    let type_meta = fields(bytes(&unknown, 1).first()?)?;
    let raw = *bytes(&unknown, 2).first()?;
    Some((text(&type_meta, 1)?, text(&type_meta, 2)?, raw))
}

/// A protobuf object the sim reads, as JSON; None for anything else.
pub fn decode(body: &[u8]) -> Option<Value> {
    let (api_version, kind, _) = unwrap(body)?;
    match (api_version.as_str(), kind.as_str()) {
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => csr_status(body),
        ("v1", "Namespace") => namespace(body),
        _ => None,
    }
}

/// The map entries (key 1, value 2) of a `map<string, string>` field.
fn string_map(fields: &[(u64, Field<'_>)], number: u64) -> Option<serde_json::Map<String, Value>> {
    let mut out = serde_json::Map::new();
    for entry in bytes(fields, number) {
        let entry = self::fields(entry)?;
        out.insert(
            text(&entry, 1).unwrap_or_default(),
            json!(text(&entry, 2).unwrap_or_default()),
        );
    }
    Some(out)
}

/// An ObjectMeta, as far as a create takes it.
fn object_meta(raw: &[u8]) -> Option<Value> {
    let meta = fields(raw)?;
    let mut metadata = json!({});
    for (number, name) in [(1, "name"), (2, "generateName"), (6, "resourceVersion")] {
        if let Some(value) = text(&meta, number).filter(|v| !v.is_empty()) {
            metadata[name] = json!(value);
        }
    }
    for (number, name) in [(11, "labels"), (12, "annotations")] {
        let map = string_map(&meta, number)?;
        if !map.is_empty() {
            metadata[name] = Value::Object(map);
        }
    }
    Some(metadata)
}

fn namespace(body: &[u8]) -> Option<Value> {
    let (api_version, kind, raw) = unwrap(body)?;
    let object = fields(raw)?;
    let metadata = object_meta(bytes(&object, 1).first().copied().unwrap_or_default())?;
    let spec = fields(bytes(&object, 2).first().copied().unwrap_or_default())?;
    let finalizers: Vec<String> = bytes(&spec, 1)
        .into_iter()
        .filter_map(|b| std::str::from_utf8(b).ok().map(str::to_string))
        .collect();
    let mut namespace = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata});
    if !finalizers.is_empty() {
        namespace["spec"] = json!({"finalizers": finalizers});
    }
    Some(namespace)
}

/// A protobuf CertificateSigningRequest as the JSON its subresources read;
/// None for anything else.
pub fn csr_status(body: &[u8]) -> Option<Value> {
    let (api_version, kind, raw) = unwrap(body)?;
    if api_version != "certificates.k8s.io/v1" || kind != "CertificateSigningRequest" {
        return None;
    }
    let object = fields(raw)?;
    let meta = fields(bytes(&object, 1).first().copied().unwrap_or_default())?;
    let status = fields(bytes(&object, 3).first().copied().unwrap_or_default())?;
    let mut conditions = Vec::new();
    for condition in bytes(&status, 1) {
        let c = fields(condition)?;
        let mut entry = json!({
            "type": text(&c, 1).unwrap_or_default(),
            "status": text(&c, 6).unwrap_or_default(),
        });
        for (number, name) in [(2, "reason"), (3, "message")] {
            if let Some(value) = text(&c, number) {
                entry[name] = json!(value);
            }
        }
        for (number, name) in [(4, "lastUpdateTime"), (5, "lastTransitionTime")] {
            if let Some(value) = bytes(&c, number).first().and_then(|b| time(b)) {
                entry[name] = json!(value);
            }
        }
        conditions.push(entry);
    }
    let mut metadata = json!({});
    if let Some(name) = text(&meta, 1) {
        metadata["name"] = json!(name);
    }
    if let Some(version) = text(&meta, 6).filter(|v| !v.is_empty()) {
        metadata["resourceVersion"] = json!(version);
    }
    Some(json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": metadata,
        "status": {"conditions": conditions},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![((number << 3) | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn reads_a_csr_approval() {
        let time = [0x08, 0x80, 0xa8, 0xd6, 0xb9, 0x07]; // seconds: 1999999999-ish
        let condition = [
            field(1, b"Approved"),
            field(6, b"True"),
            field(2, b"KubectlApprove"),
            field(4, &time),
        ]
        .concat();
        let status = field(1, &condition);
        let meta = [field(1, b"csr-abcde"), field(6, b"42")].concat();
        let raw = [field(1, &meta), field(3, &status)].concat();
        let type_meta = [
            field(1, b"certificates.k8s.io/v1"),
            field(2, b"CertificateSigningRequest"),
        ]
        .concat();
        let mut body = MAGIC.to_vec();
        body.extend([field(1, &type_meta), field(2, &raw)].concat());
        let csr = csr_status(&body).unwrap();
        assert_eq!(
            csr["metadata"],
            json!({"name": "csr-abcde", "resourceVersion": "42"})
        );
        let c = &csr["status"]["conditions"][0];
        assert_eq!(
            (&c["type"], &c["status"], &c["reason"]),
            (&json!("Approved"), &json!("True"), &json!("KubectlApprove"))
        );
        assert!(c["lastUpdateTime"].as_str().unwrap().ends_with('Z'));
        assert_eq!(csr_status(b"{}"), None);
        assert_eq!(decode(&body), Some(csr));
    }

    #[test]
    fn reads_a_namespace_create() {
        let label = [field(1, b"team"), field(2, b"apps")].concat();
        let meta = [field(1, b"apps"), field(11, &label)].concat();
        let spec = field(1, b"kubernetes");
        let raw = [field(1, &meta), field(2, &spec)].concat();
        let type_meta = [field(1, b"v1"), field(2, b"Namespace")].concat();
        let mut body = MAGIC.to_vec();
        body.extend([field(1, &type_meta), field(2, &raw)].concat());
        assert_eq!(
            decode(&body).unwrap(),
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "apps", "labels": {"team": "apps"}},
                "spec": {"finalizers": ["kubernetes"]},
            })
        );
    }
}
