//! The bootstrap manifests a control plane renders, read as `talosctl
//! upgrade-k8s` reads them: Talos keeps each as a `Manifest` resource
//! (type `Manifests.kubernetes.talos.dev`, namespace `controlplane`) and
//! serves it through the COSI state API on apid, beside the machine API.
//! Each resource's protobuf spec holds its objects as
//! `google.protobuf.Struct`s; they come back as JSON objects, integers as
//! integers (a Struct only knows doubles).

use serde_json::{Map, Number, Value};

use super::client::{MAX_ANSWER, TalosClient};
use super::error::TalosError;
use super::pb::cosi::{self, state_client::StateClient};
use prost::Message;

/// The COSI type of Talos' rendered manifests.
pub const MANIFEST_TYPE: &str = "Manifests.kubernetes.talos.dev";
/// The COSI namespace they live in.
pub const MANIFEST_NAMESPACE: &str = "controlplane";

/// One manifest Talos rendered: its id (`10-kube-proxy`, `11-core-dns`;
/// inline manifests are `99-<name>`) and its objects, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedManifest {
    pub id: String,
    pub objects: Vec<Value>,
}

impl TalosClient {
    /// The manifests the node renders, sorted by id as Talos lists them
    /// (none on a worker).
    pub async fn bootstrap_manifests(&mut self) -> Result<Vec<RenderedManifest>, TalosError> {
        const CALL: &str = "List Manifests";
        let request = cosi::ListRequest {
            namespace: MANIFEST_NAMESPACE.into(),
            r#type: MANIFEST_TYPE.into(),
        };
        let mut stream = StateClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_ANSWER)
            .list(self.request(request))
            .await
            .map_err(|s| self.rejected(CALL, s))?
            .into_inner();
        let mut out = Vec::new();
        while let Some(answer) = stream.message().await.map_err(|s| self.rejected(CALL, s))? {
            let resource = answer
                .resource
                .ok_or_else(|| self.protocol(CALL, "an answer without a resource"))?;
            let id = resource.metadata.map(|m| m.id).unwrap_or_default();
            let spec = resource.spec.unwrap_or_default();
            let decoded = cosi::ManifestSpec::decode(spec.proto_spec.as_slice())
                .map_err(|e| self.protocol(CALL, &format!("manifest {id}: {e}")))?;
            let objects = decoded
                .items
                .into_iter()
                .map(|item| item.object.map(object).unwrap_or(Value::Null))
                .collect();
            out.push(RenderedManifest { id, objects });
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }
}

fn object(fields: prost_types::Struct) -> Value {
    Value::Object(
        fields
            .fields
            .into_iter()
            .map(|(k, v)| (k, value(v)))
            .collect::<Map<_, _>>(),
    )
}

fn value(v: prost_types::Value) -> Value {
    use prost_types::value::Kind;
    match v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::NumberValue(n)) => number(n),
        Some(Kind::StructValue(s)) => object(s),
        Some(Kind::ListValue(l)) => Value::Array(l.values.into_iter().map(value).collect()),
    }
}

/// A whole number as an integer (`replicas: 2`, not `2.0`, which the API
/// server refuses for integer fields), as Go's JSON encoding prints it.
fn number(n: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() < EXACT {
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_types::value::Kind;

    fn v(kind: Kind) -> prost_types::Value {
        prost_types::Value { kind: Some(kind) }
    }

    #[test]
    fn structs_become_json_with_whole_numbers_as_integers() {
        let spec = prost_types::Struct {
            fields: [
                ("replicas".to_string(), v(Kind::NumberValue(2.0))),
                ("ratio".to_string(), v(Kind::NumberValue(0.5))),
                ("name".to_string(), v(Kind::StringValue("coredns".into()))),
                (
                    "args".to_string(),
                    v(Kind::ListValue(prost_types::ListValue {
                        values: vec![v(Kind::BoolValue(true)), v(Kind::NullValue(0))],
                    })),
                ),
            ]
            .into_iter()
            .collect(),
        };
        let json = object(spec);
        assert_eq!(
            json,
            serde_json::json!({"args": [true, null], "name": "coredns", "ratio": 0.5, "replicas": 2})
        );
        assert_eq!(json["replicas"].to_string(), "2");
    }
}
