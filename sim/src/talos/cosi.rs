//! The COSI state API apid serves beside the machine API, as far as
//! `talosctl upgrade-k8s` and hct use it: `List` of the bootstrap manifests
//! a control plane renders (`Manifests.kubernetes.talos.dev` in the
//! `controlplane` namespace, from `manifests`), each resource with its
//! spec twice, as Talos sends it: the protobuf encoding of Talos'
//! `ManifestSpec` (objects as `google.protobuf.Struct`s) and YAML (a list
//! of the objects). A worker lists none. Other types are not emulated.

use prost::Message;
use serde_json::Value;
use tonic::{Request, Response, Status};

use super::auth::Call;
use super::calls::{self, CallError};
use super::lifecycle;
use super::manifests::{self, Manifest};
use super::pb::cosi::{self, state_server::State};
use super::service::MachineApi;

pub const MANIFEST_TYPE: &str = "Manifests.kubernetes.talos.dev";
pub const MANIFEST_NAMESPACE: &str = "controlplane";

type ListStream = tokio_stream::Iter<std::vec::IntoIter<Result<cosi::ListResponse, Status>>>;

#[tonic::async_trait]
impl State for MachineApi {
    type ListStream = ListStream;

    async fn list(
        &self,
        request: Request<cosi::ListRequest>,
    ) -> Result<Response<ListStream>, Status> {
        self.authorize(&request, Call::CosiList)?;
        let message = request.get_ref();
        if message.r#type != MANIFEST_TYPE || message.namespace != MANIFEST_NAMESPACE {
            return Err(Status::unimplemented(format!(
                "hct-sim lists only {MANIFEST_TYPE} in {MANIFEST_NAMESPACE}, not {} in {}",
                message.r#type, message.namespace
            )));
        }
        let world = self.world();
        let (at, _) = self.target(&world, &request)?;
        let rendered = rendered(&world, at).map_err(|e| Status::new(e.code(), e.to_string()))?;
        let answers: Vec<Result<cosi::ListResponse, Status>> =
            rendered.iter().map(|m| Ok(resource(m))).collect();
        Ok(Response::new(tokio_stream::iter(answers)))
    }
}

/// What the node `at` renders now.
fn rendered(world: &crate::state::World, at: calls::NodeRef) -> Result<Vec<Manifest>, CallError> {
    let (_, talos) = calls::node(world, at)?;
    let config = calls::configured(talos, "List")?;
    let Some(version) = lifecycle::running_version(talos) else {
        return Ok(Vec::new());
    };
    let mut problems = Vec::new();
    Ok(manifests::render(&config, &version, &mut problems))
}

fn resource(manifest: &Manifest) -> cosi::ListResponse {
    let owner = if manifest.id.starts_with("99-") {
        "k8s.ExtraManifestController"
    } else {
        "k8s.ManifestController"
    };
    let spec = cosi::ManifestSpec {
        items: manifest
            .objects
            .iter()
            .map(|o| cosi::SingleManifest {
                object: match json_to_value(o).kind {
                    Some(prost_types::value::Kind::StructValue(s)) => Some(s),
                    _ => None,
                },
            })
            .collect(),
    };
    let yaml = serde_yaml_ng::to_string(&manifest.objects).unwrap_or_default();
    cosi::ListResponse {
        resource: Some(cosi::Resource {
            metadata: Some(cosi::Metadata {
                namespace: MANIFEST_NAMESPACE.into(),
                r#type: MANIFEST_TYPE.into(),
                id: manifest.id.clone(),
                version: "1".into(),
                owner: owner.into(),
                phase: "running".into(),
                ..Default::default()
            }),
            spec: Some(cosi::Spec {
                proto_spec: spec.encode_to_vec(),
                yaml_spec: yaml,
            }),
        }),
    }
}

/// JSON as a protobuf `Value` (numbers become doubles, as in Talos).
fn json_to_value(json: &Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match json {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(json_to_value).collect(),
        }),
        Value::Object(fields) => Kind::StructValue(prost_types::Struct {
            fields: fields
                .iter()
                .map(|(k, v)| (k.clone(), json_to_value(v)))
                .collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}
