//! The managed resources' RPCs: validating a resource's config, upgrading,
//! reading, planning, applying and importing its state.

use std::future::Future;

use tonic::{Request, Response};

use super::answer::{RpcResult, or_answer, until_stopped};
use crate::protocol::convert::{self, decode, encode};
use crate::protocol::pb::tfplugin6 as pb;
use crate::provider::{ApplyRequest, Context, PlanRequest, Provider};
use crate::tf::{Diagnostic, Diagnostics, Value};

/// How long a resource may take to return its partial state after a stop.
const APPLY_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Like [`until_stopped`], but after a stop `work` gets [`APPLY_STOP_GRACE`]
/// to return on its own: an apply that notices the stop reports the state it
/// reached (servers it created), which must not be thrown away.
async fn until_stopped_with_grace<T>(
    ctx: &Context,
    work: impl Future<Output = T>,
    stopped: impl FnOnce(Diagnostic) -> T,
) -> T {
    tokio::pin!(work);
    tokio::select! {
        result = &mut work => return result,
        () = ctx.cancel.cancelled() => {}
    }
    match tokio::time::timeout(APPLY_STOP_GRACE, work).await {
        Ok(result) => result,
        Err(_) => stopped(Diagnostic::error(
            "Stopped",
            "Terraform asked hct to stop (Ctrl-C) and the operation did not wind down in time. \
             Run the command again; hct adopts what it had created.",
        )),
    }
}

pub(super) async fn validate_resource_config(
    provider: &Provider,
    request: Request<pb::validate_resource_config::Request>,
) -> RpcResult<pb::validate_resource_config::Response> {
    let answer = |d: Diagnostics| pb::validate_resource_config::Response {
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    let resource = or_answer!(provider.resource(&request.type_name), answer);
    let config = or_answer!(
        decode(request.config.as_ref(), &resource.schema().value_type()),
        answer
    );
    Ok(Response::new(answer(resource.validate(&config))))
}

pub(super) async fn upgrade_resource_state(
    provider: &Provider,
    request: Request<pb::upgrade_resource_state::Request>,
) -> RpcResult<pb::upgrade_resource_state::Response> {
    let answer = |d: Diagnostics| pb::upgrade_resource_state::Response {
        upgraded_state: None,
        diagnostics: convert::diagnostics(d),
    };
    let request = request.into_inner();
    let resource = or_answer!(provider.resource(&request.type_name), answer);
    let raw = request.raw_state.unwrap_or_default();
    if raw.json.is_empty() {
        return Ok(Response::new(answer(
            Diagnostic::error(
                "Unsupported state format",
                "The stored state uses the flatmap format of Terraform 0.11, which hct never wrote.",
            )
            .into(),
        )));
    }
    let stored: serde_json::Value = or_answer!(
        serde_json::from_slice(&raw.json).map_err(|e| Diagnostic::error(
            "Corrupt state",
            format!("The stored state is not JSON: {e}")
        )),
        answer
    );
    let upgraded = match resource.upgrade_state(request.version, stored) {
        Ok(upgraded) => upgraded,
        Err(diagnostics) => return Ok(Response::new(answer(diagnostics))),
    };
    let ty = resource.schema().value_type();
    let value = or_answer!(
        crate::tf::json::from_json(&upgraded, &ty).map_err(|e| Diagnostic::error(
            "State does not match the schema",
            format!(
                "{} state could not be read after upgrading: {e}",
                request.type_name
            )
        )),
        answer
    );
    let upgraded_state = or_answer!(encode(value, &ty), answer);
    Ok(Response::new(pb::upgrade_resource_state::Response {
        upgraded_state: Some(upgraded_state),
        diagnostics: vec![],
    }))
}

pub(super) async fn read_resource(
    provider: &Provider,
    request: Request<pb::read_resource::Request>,
) -> RpcResult<pb::read_resource::Response> {
    let request = request.into_inner();
    let answer = |d: Diagnostics| pb::read_resource::Response {
        new_state: None,
        diagnostics: convert::diagnostics(d),
        private: vec![],
    };
    let resource = or_answer!(provider.resource(&request.type_name), answer);
    let ty = resource.schema().value_type();
    let state = or_answer!(decode(request.current_state.as_ref(), &ty), answer);
    let ctx = provider.context();
    let mut private = request.private.clone();
    let (new_state, mut diagnostics) =
        until_stopped(&ctx, resource.read(&ctx, state, &mut private), |d| {
            (None, d.into())
        })
        .await;
    if diagnostics.has_errors() {
        private = request.private;
    }
    // When the read failed, keep what Terraform had; None (gone) is a null state.
    let new_state = if diagnostics.has_errors() {
        request.current_state
    } else {
        match encode(new_state.unwrap_or(Value::Null), &ty) {
            Ok(encoded) => Some(encoded),
            Err(d) => {
                diagnostics.push(d);
                request.current_state
            }
        }
    };
    Ok(Response::new(pb::read_resource::Response {
        new_state,
        diagnostics: convert::diagnostics(diagnostics),
        private,
    }))
}

pub(super) async fn plan_resource_change(
    provider: &Provider,
    request: Request<pb::plan_resource_change::Request>,
) -> RpcResult<pb::plan_resource_change::Response> {
    let request = request.into_inner();
    let answer = |d: Diagnostics| pb::plan_resource_change::Response {
        planned_state: None,
        requires_replace: vec![],
        planned_private: vec![],
        diagnostics: convert::diagnostics(d),
    };
    let resource = or_answer!(provider.resource(&request.type_name), answer);
    let ty = resource.schema().value_type();
    let plan_request = PlanRequest {
        prior: or_answer!(decode(request.prior_state.as_ref(), &ty), answer),
        proposed: or_answer!(decode(request.proposed_new_state.as_ref(), &ty), answer),
        config: or_answer!(decode(request.config.as_ref(), &ty), answer),
        prior_private: request.prior_private,
    };
    let ctx = provider.context();
    let plan = until_stopped(&ctx, resource.plan(&ctx, plan_request), |d| {
        crate::provider::Plan {
            diagnostics: d.into(),
            ..Default::default()
        }
    })
    .await;
    let mut diagnostics = plan.diagnostics;
    let planned_state = if diagnostics.has_errors() {
        None
    } else {
        match encode(plan.planned, &ty) {
            Ok(encoded) => Some(encoded),
            Err(d) => {
                diagnostics.push(d);
                None
            }
        }
    };
    Ok(Response::new(pb::plan_resource_change::Response {
        planned_state,
        requires_replace: plan
            .requires_replace
            .iter()
            .map(convert::attribute_path)
            .collect(),
        planned_private: plan.private,
        diagnostics: convert::diagnostics(diagnostics),
    }))
}

pub(super) async fn apply_resource_change(
    provider: &Provider,
    request: Request<pb::apply_resource_change::Request>,
) -> RpcResult<pb::apply_resource_change::Response> {
    let request = request.into_inner();
    let answer = |d: Diagnostics| pb::apply_resource_change::Response {
        new_state: None,
        private: vec![],
        diagnostics: convert::diagnostics(d),
    };
    let resource = or_answer!(provider.resource(&request.type_name), answer);
    let ty = resource.schema().value_type();
    let prior = or_answer!(decode(request.prior_state.as_ref(), &ty), answer);
    let apply_request = ApplyRequest {
        prior: prior.clone(),
        planned: or_answer!(decode(request.planned_state.as_ref(), &ty), answer),
        config: or_answer!(decode(request.config.as_ref(), &ty), answer),
        private: request.planned_private.clone(),
    };
    let ctx = provider.context();
    // A stop keeps the prior state: the resource reports partial state itself
    // when it notices the cancellation; this fallback only covers a resource
    // that never returned.
    let applied = until_stopped_with_grace(&ctx, resource.apply(&ctx, apply_request), |d| {
        crate::provider::Applied {
            new_state: prior,
            private: vec![],
            diagnostics: d.into(),
        }
    })
    .await;
    // No private state from the resource (a failure, or a stop): the
    // planned one stays, so what it records (etcd bootstrapped) is never
    // dropped by an error path.
    let private = if applied.private.is_empty() {
        request.planned_private
    } else {
        applied.private
    };
    let mut diagnostics = applied.diagnostics;
    let new_state = match encode(applied.new_state, &ty) {
        Ok(encoded) => Some(encoded),
        Err(d) => {
            diagnostics.push(d);
            None
        }
    };
    Ok(Response::new(pb::apply_resource_change::Response {
        new_state,
        private,
        diagnostics: convert::diagnostics(diagnostics),
    }))
}

pub(super) async fn import_resource_state(
    provider: &Provider,
    request: Request<pb::import_resource_state::Request>,
) -> RpcResult<pb::import_resource_state::Response> {
    let request = request.into_inner();
    let answer = |d: Diagnostics| pb::import_resource_state::Response {
        imported_resources: vec![],
        diagnostics: convert::diagnostics(d),
    };
    let resource = or_answer!(provider.resource(&request.type_name), answer);
    let ty = resource.schema().value_type();
    let ctx = provider.context();
    let imported = until_stopped(&ctx, resource.import(&ctx, &request.id), |d| Err(d.into())).await;
    let state = match imported {
        Ok(state) => or_answer!(encode(state, &ty), answer),
        Err(diagnostics) => return Ok(Response::new(answer(diagnostics))),
    };
    Ok(Response::new(pb::import_resource_state::Response {
        imported_resources: vec![pb::import_resource_state::ImportedResource {
            type_name: request.type_name,
            state: Some(state),
            private: vec![],
        }],
        diagnostics: vec![],
    }))
}
