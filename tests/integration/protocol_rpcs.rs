//! The resource RPCs (validate, plan, apply, read, import, upgrade, stop)
//! through the real gRPC service implementation, with a small resource made
//! for the test. hct's shipped resources arrive with later features; this
//! proves the plumbing they will stand on.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hct::protocol::pb::tfplugin6::{self as pb, provider_server::Provider as _};
use hct::protocol::service::ProviderService;
use hct::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Provider, Resource};
use hct::tf::{AttrPath, Attribute, Diagnostic, Diagnostics, Schema, Type, Value, msgpack};
use tonic::Request;

/// A widget: `name` forces replacement, `size` defaults to 1, `id` is computed.
/// Version 1 of its schema renamed `label` to `name`.
struct Widget;

fn widget_schema() -> Schema {
    Schema::new(1, "A test widget.")
        .attribute(Attribute::required("name", Type::String))
        .attribute(Attribute::optional_computed("size", Type::Number))
        .attribute(Attribute::computed("id", Type::String))
}

#[async_trait]
impl Resource for Widget {
    fn type_name(&self) -> &'static str {
        "hct_widget"
    }

    fn schema(&self) -> Schema {
        widget_schema()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        match config.get("name").as_str() {
            Some(name) if name.contains(' ') => Diagnostic::error("Bad name", "no spaces")
                .at(AttrPath::attr("name"))
                .into(),
            _ => Diagnostics::new(),
        }
    }

    async fn plan(&self, _ctx: &Context, request: PlanRequest) -> Plan {
        if request.proposed.is_null() {
            return Plan::default();
        }
        let mut planned = request.proposed.as_map().cloned().unwrap_or_default();
        if planned.get("size").is_none_or(Value::is_null) {
            planned.insert("size".into(), Value::from(1));
        }
        let mut requires_replace = vec![];
        if !request.prior.is_null() && request.prior.get("name") != request.proposed.get("name") {
            requires_replace.push(AttrPath::attr("name"));
            planned.insert("id".into(), Value::Unknown);
        } else if request.prior.is_null() {
            planned.insert("id".into(), Value::Unknown);
        }
        Plan {
            planned: Value::Map(planned),
            requires_replace,
            private: b"planned".to_vec(),
            diagnostics: Diagnostics::new(),
        }
    }

    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied {
        if request.planned.is_null() {
            return Applied::default();
        }
        let name = request
            .planned
            .get("name")
            .as_str()
            .unwrap_or_default()
            .to_string();
        if name == "slow" {
            ctx.cancel.cancelled().await;
            return Applied {
                new_state: request.prior,
                diagnostics: Diagnostic::error("Stopped", "cancelled by StopProvider").into(),
                ..Applied::default()
            };
        }
        let mut state = request.planned.as_map().cloned().unwrap_or_default();
        state.insert("id".into(), Value::string(format!("w-{name}")));
        Applied {
            new_state: Value::Map(state),
            private: request.private,
            diagnostics: Diagnostics::new(),
        }
    }

    async fn read(
        &self,
        _ctx: &Context,
        state: Value,
        _private: &mut Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        if state.get("name").as_str() == Some("gone") {
            (None, Diagnostics::new())
        } else {
            (Some(state), Diagnostics::new())
        }
    }

    async fn import(&self, _ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        let name = id
            .strip_prefix("w-")
            .ok_or_else(|| Diagnostics::from(Diagnostic::error("Bad import id", "use w-<name>")))?;
        Ok(Value::object([
            ("name", Value::from(name)),
            ("size", Value::from(1)),
            ("id", Value::from(id)),
        ]))
    }

    fn upgrade_state(
        &self,
        version: i64,
        mut state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        if version == 0
            && let Some(object) = state.as_object_mut()
            && let Some(label) = object.remove("label")
        {
            object.insert("name".into(), label);
        }
        Ok(state)
    }
}

fn service() -> (ProviderService, Arc<Provider>) {
    let provider = Arc::new(Provider::new(vec![], vec![Arc::new(Widget)]));
    (ProviderService::new(provider.clone()), provider)
}

fn dynamic(value: Value) -> Option<pb::DynamicValue> {
    let ty = widget_schema().value_type();
    Some(pb::DynamicValue {
        msgpack: msgpack::encode(&value.conform(&ty), &ty).unwrap(),
        json: vec![],
    })
}

fn value(dynamic: Option<pb::DynamicValue>) -> Value {
    msgpack::decode(&dynamic.unwrap().msgpack, &widget_schema().value_type()).unwrap()
}

fn widget(name: &str, size: Value, id: Value) -> Value {
    Value::object([("name", Value::from(name)), ("size", size), ("id", id)])
}

#[tokio::test]
async fn validate_reports_the_attribute_path() {
    let (service, _) = service();
    let response = service
        .validate_resource_config(Request::new(pb::validate_resource_config::Request {
            type_name: "hct_widget".into(),
            config: dynamic(widget("a b", Value::Null, Value::Null)),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    let diagnostic = &response.diagnostics[0];
    assert_eq!(diagnostic.summary, "Bad name");
    let step = diagnostic.attribute.as_ref().unwrap().steps[0]
        .selector
        .clone()
        .unwrap();
    assert_eq!(
        step,
        pb::attribute_path::step::Selector::AttributeName("name".into())
    );
}

#[tokio::test]
async fn plan_apply_read_lifecycle() {
    let (service, _) = service();
    // Create: computed id is unknown, default size filled in.
    let config = widget("a", Value::Null, Value::Null);
    let plan = service
        .plan_resource_change(Request::new(pb::plan_resource_change::Request {
            type_name: "hct_widget".into(),
            prior_state: dynamic(Value::Null),
            proposed_new_state: dynamic(config.clone()),
            config: dynamic(config.clone()),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(plan.diagnostics.is_empty(), "{:?}", plan.diagnostics);
    assert_eq!(
        value(plan.planned_state.clone()),
        widget("a", Value::from(1), Value::Unknown)
    );

    let applied = service
        .apply_resource_change(Request::new(pb::apply_resource_change::Request {
            type_name: "hct_widget".into(),
            prior_state: dynamic(Value::Null),
            planned_state: plan.planned_state,
            config: dynamic(config),
            planned_private: plan.planned_private,
            provider_meta: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(applied.private, b"planned");
    let state = value(applied.new_state);
    assert_eq!(state, widget("a", Value::from(1), Value::from("w-a")));

    // Renaming requires replacement.
    let renamed = widget("b", Value::from(1), Value::from("w-a"));
    let plan = service
        .plan_resource_change(Request::new(pb::plan_resource_change::Request {
            type_name: "hct_widget".into(),
            prior_state: dynamic(state.clone()),
            proposed_new_state: dynamic(renamed.clone()),
            config: dynamic(renamed),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(plan.requires_replace.len(), 1);

    // Read keeps existing objects and reports vanished ones as null.
    let read = |state: Value| {
        service.read_resource(Request::new(pb::read_resource::Request {
            type_name: "hct_widget".into(),
            current_state: dynamic(state),
            ..Default::default()
        }))
    };
    assert_eq!(
        value(read(state.clone()).await.unwrap().into_inner().new_state),
        state
    );
    let gone = read(widget("gone", Value::from(1), Value::from("w-gone")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(value(gone.new_state), Value::Null);
}

#[tokio::test]
async fn import_and_upgrade_state() {
    let (service, _) = service();
    let imported = service
        .import_resource_state(Request::new(pb::import_resource_state::Request {
            type_name: "hct_widget".into(),
            id: "w-x".into(),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(imported.imported_resources[0].type_name, "hct_widget");
    assert_eq!(
        value(imported.imported_resources[0].state.clone()),
        widget("x", Value::from(1), Value::from("w-x"))
    );
    let bad = service
        .import_resource_state(Request::new(pb::import_resource_state::Request {
            type_name: "hct_widget".into(),
            id: "nope".into(),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(bad.diagnostics[0].summary, "Bad import id");

    let upgraded = service
        .upgrade_resource_state(Request::new(pb::upgrade_resource_state::Request {
            type_name: "hct_widget".into(),
            version: 0,
            raw_state: Some(pb::RawState {
                json: br#"{"label":"old","size":2,"id":"w-old"}"#.to_vec(),
                flatmap: Default::default(),
            }),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(
        upgraded.diagnostics.is_empty(),
        "{:?}",
        upgraded.diagnostics
    );
    assert_eq!(
        value(upgraded.upgraded_state),
        widget("old", Value::from(2), Value::from("w-old"))
    );
}

#[tokio::test]
async fn unknown_types_are_diagnostics_not_crashes() {
    let (service, _) = service();
    let response = service
        .read_resource(Request::new(pb::read_resource::Request {
            type_name: "hct_nothing".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(response.diagnostics[0].summary.contains("hct_nothing"));
    let unsupported = service
        .get_functions(Request::new(pb::Unsupported {}))
        .await
        .unwrap_err();
    assert_eq!(unsupported.code(), tonic::Code::Unimplemented);
    assert!(unsupported.message().contains("GetFunctions"));
}

#[tokio::test]
async fn stop_provider_cancels_work_in_flight_and_keeps_serving() {
    let (service, _) = service();
    let service = Arc::new(service);
    let slow = widget("slow", Value::from(1), Value::Unknown);
    let apply = {
        let service = service.clone();
        tokio::spawn(async move {
            service
                .apply_resource_change(Request::new(pb::apply_resource_change::Request {
                    type_name: "hct_widget".into(),
                    prior_state: dynamic(Value::Null),
                    planned_state: dynamic(slow.clone()),
                    config: dynamic(slow),
                    planned_private: vec![],
                    provider_meta: None,
                }))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!apply.is_finished());
    service
        .stop_provider(Request::new(pb::stop_provider::Request {}))
        .await
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(2), apply)
        .await
        .expect("StopProvider ends the apply promptly")
        .unwrap()
        .unwrap()
        .into_inner();
    assert!(response.diagnostics.iter().any(|d| d.summary == "Stopped"));

    // The server still answers afterwards.
    let schema = service
        .get_provider_schema(Request::new(pb::get_provider_schema::Request {}))
        .await
        .unwrap()
        .into_inner();
    assert!(schema.resource_schemas.contains_key("hct_widget"));
}
