//! A node group as a Terraform resource: [`NodeGroupResource`] runs the
//! shared lifecycle, a [`GroupKind`] supplies what its resource does its
//! own way.

use std::marker::PhantomData;

use async_trait::async_trait;

use super::plan::clients;
use super::private::{etcd_record, with_etcd_record};
use super::read::refresh;
use super::state::{nodes_from, nodes_value};
use crate::cluster::apply::{self, Outcome, Run};
use crate::cluster::bootstrap::EtcdRecord;
use crate::cluster::preflight::Paths;
use crate::cluster::read::{Recorded, Refreshed};
use crate::cluster::settings::ClusterSettings;
use crate::cluster::wait::Deadline;
use crate::cluster::{GroupSpec, NodeSlot, this_run};
use crate::hcloud::models::Labels;
use crate::provider::{Applied, ApplyRequest, Context, Plan, PlanRequest, Resource};
use crate::resources::timeouts::{self, Operation};
use crate::resources::values::{failed, get_at, set, set_at};
use crate::talos::Role;
use crate::tf::{Diagnostic, Diagnostics, Schema, Value};

/// What a node-group resource prepares for an apply from its planned state.
pub struct Prepared {
    pub settings: ClusterSettings,
    pub spec: GroupSpec,
    pub slots: Vec<NodeSlot>,
    pub paths: Paths,
}

/// Where a group's refresh starts from, as its state has it.
pub struct StateGroup {
    pub cluster: String,
    pub group: String,
    pub network: Option<i64>,
    pub server_labels: Labels,
    pub server_type: Option<String>,
    pub settings: Result<ClusterSettings, String>,
}

/// One kind of node-group resource (`hct_cluster`, `hct_worker_pool`):
/// only what differs between them. [`NodeGroupResource`] turns it into a
/// Terraform resource with the lifecycle they share.
#[async_trait]
pub trait GroupKind: Send + Sync + 'static {
    const TYPE_NAME: &'static str;
    /// The state attribute with the node list.
    const NODES: &'static str;
    /// The group's servers in messages ("the pool's servers").
    const SERVERS: &'static str;
    /// Whether the resource records its placement groups' ids.
    const PLACEMENT_GROUP_IDS: bool;
    /// The control plane (which records etcd's bootstrap) or a pool.
    const ROLE: Role;

    const SCHEMA: fn() -> Schema;
    /// Checks without API calls; unknown values pass.
    const VALIDATE: fn(&Value) -> Diagnostics;
    /// The plan from Terraform's proposal in `plan.planned`: changes it
    /// cannot make in place (replacements, or errors that say what to do
    /// instead), defaults, computed values, the node list, preflight.
    async fn plan(ctx: &Context, prior: &Value, config: &Value, plan: &mut Plan);
    /// The settings and nodes to converge, from the state to be (which it
    /// may complete, e.g. with generated secrets).
    fn prepare(state: &mut Value) -> Result<Prepared, Diagnostic>;
    /// Computed attributes after the apply, also after a failure; and what
    /// is done through the Kubernetes API once the nodes run (`prior` is
    /// the state before the apply, Null on create).
    async fn finish(
        ctx: &Context,
        prior: &Value,
        state: &mut Value,
        prepared: &Prepared,
        outcome: &mut Outcome,
    );
    async fn destroy(ctx: &Context, prior: Value) -> Applied;
    /// The group as state records it, for a refresh.
    fn state_group(state: &Value) -> Option<StateGroup>;
    /// Writes drift into state; `None` when the object is gone. `etcd` is
    /// what state records of the cluster's etcd.
    fn drifted(state: Value, refreshed: &Refreshed, etcd: EtcdRecord) -> Option<Value>;
    /// What else a refresh finds beyond the servers (the control plane:
    /// its objects in Kubernetes changed by hand), written into `state`,
    /// with the group's `settings` as state records them; warnings.
    async fn drifted_beyond(
        _ctx: &Context,
        _state: &mut Value,
        _refreshed: &Refreshed,
        _settings: &ClusterSettings,
    ) -> Diagnostics {
        Diagnostics::new()
    }
    async fn import(ctx: &Context, id: &str) -> Result<Value, Diagnostics>;
}

/// When a control plane's apply has errors, tells the cluster's pools
/// applied beside it in this run, which would otherwise wait for it until
/// their timeouts.
fn tell_pools_if_failed(prepared: &Prepared, diagnostics: &Diagnostics) {
    if prepared.spec.role != Role::ControlPlane {
        return;
    }
    if let Some(error) = diagnostics.iter().find(|d| d.is_error()) {
        this_run::control_plane_failed(&prepared.settings, &error.summary);
    }
}

/// A node-group resource of kind `K`.
pub struct NodeGroupResource<K>(PhantomData<K>);

impl<K> NodeGroupResource<K> {
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<K> Default for NodeGroupResource<K> {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl<K: GroupKind> Resource for NodeGroupResource<K> {
    fn type_name(&self) -> &'static str {
        K::TYPE_NAME
    }

    fn schema(&self) -> Schema {
        (K::SCHEMA)()
    }

    fn validate(&self, config: &Value) -> Diagnostics {
        (K::VALIDATE)(config)
    }

    async fn plan(&self, ctx: &Context, request: PlanRequest) -> Plan {
        if request.proposed.is_null() {
            return Plan::default();
        }
        let mut plan = Plan {
            planned: request.proposed.clone(),
            // What state keeps of etcd goes on to the apply.
            private: request.prior_private.clone(),
            ..Plan::default()
        };
        // Write-only attributes are null in plan and state; the plan sees
        // their configured values as the apply does (`prepare`).
        let write_only = (K::SCHEMA)().write_only_paths();
        for path in &write_only {
            set_at(
                &mut plan.planned,
                path,
                get_at(&request.config, path).clone(),
            );
        }
        K::plan(ctx, &request.prior, &request.config, &mut plan).await;
        for path in &write_only {
            set_at(&mut plan.planned, path, Value::Null);
        }
        plan
    }

    async fn apply(&self, ctx: &Context, request: ApplyRequest) -> Applied {
        if request.planned.is_null() {
            return K::destroy(ctx, request.prior).await;
        }
        let operation = if request.prior.is_null() {
            Operation::Create
        } else {
            Operation::Update
        };
        let timeout = match timeouts::limit(&request.config, operation) {
            Ok(t) => t,
            Err(d) => return failed(request.prior, d),
        };
        let mut state = request.planned.clone();
        let write_only = (K::SCHEMA)().write_only_paths();
        for path in &write_only {
            set_at(&mut state, path, get_at(&request.config, path).clone());
        }
        let prepared = match K::prepare(&mut state) {
            Ok(p) => p,
            Err(d) => return failed(request.prior, d),
        };
        // Until this apply ends, however it ends, the cluster's pools wait
        // for its manifests before their Ready wait.
        let _applying = (K::ROLE == Role::ControlPlane)
            .then(|| this_run::ControlPlaneApply::start(&prepared.settings));
        let clients = match clients(ctx, &prepared.settings).await {
            Ok(c) => c,
            Err(d) => return failed(request.prior, d),
        };
        let prior_nodes = nodes_from(request.prior.get(K::NODES));
        let run = Run {
            clients: &clients,
            settings: &prepared.settings,
            spec: &prepared.spec,
            slots: &prepared.slots,
            etcd: etcd_record(&request.private, &prior_nodes),
            prior_nodes,
            deadline: Deadline::new(timeout, ctx.cancel.clone(), ctx.pace()),
            paths: &prepared.paths,
            placement_group_ids: K::PLACEMENT_GROUP_IDS,
        };
        let mut outcome = match apply::apply(run).await {
            Ok(outcome) => outcome,
            Err(found) => {
                tell_pools_if_failed(&prepared, &found);
                return Applied {
                    new_state: request.prior,
                    private: request.private,
                    diagnostics: found,
                };
            }
        };
        // Whatever happened, state gets every server that exists.
        set(&mut state, K::NODES, nodes_value(&outcome.nodes));
        tell_pools_if_failed(&prepared, &outcome.diagnostics);
        K::finish(ctx, &request.prior, &mut state, &prepared, &mut outcome).await;
        for path in &write_only {
            set_at(&mut state, path, Value::Null);
        }
        tell_pools_if_failed(&prepared, &outcome.diagnostics);
        if request.prior.is_null() && !outcome.left_something && outcome.diagnostics.has_errors() {
            // Nothing was created: no state at all.
            state = Value::Null;
        }
        let private = match K::ROLE {
            Role::ControlPlane => with_etcd_record(&request.private, outcome.etcd),
            Role::Worker => request.private,
        };
        Applied {
            new_state: state,
            private,
            diagnostics: outcome.diagnostics,
        }
    }

    async fn read(
        &self,
        ctx: &Context,
        state: Value,
        private: &mut Vec<u8>,
    ) -> (Option<Value>, Diagnostics) {
        let Some(group) = K::state_group(&state) else {
            return (Some(state), Diagnostics::new());
        };
        let recorded = Recorded {
            cluster: &group.cluster,
            group: &group.group,
            servers: K::SERVERS,
            network: group.network,
            nodes: nodes_from(state.get(K::NODES)),
            server_labels: &group.server_labels,
            server_type: group.server_type.as_deref(),
        };
        // What state knows of etcd, inferred once (an import, a state from
        // before hct kept it) and from then on kept, whatever the refresh
        // finds of the servers.
        let etcd = etcd_record(private, &recorded.nodes);
        if K::ROLE == Role::ControlPlane {
            *private = with_etcd_record(private, etcd);
        }
        let (refreshed, warning) = match refresh(ctx, recorded, &group.settings).await {
            Ok(r) => r,
            Err(d) => return (Some(state), d.into()),
        };
        let mut state = state;
        set(&mut state, K::NODES, nodes_value(&refreshed.nodes));
        let mut diagnostics: Diagnostics = warning.into_iter().collect();
        let mut state = K::drifted(state, &refreshed, etcd);
        if let Some(state) = &mut state
            && let Ok(settings) = &group.settings
        {
            diagnostics.extend(K::drifted_beyond(ctx, state, &refreshed, settings).await);
        }
        (state, diagnostics)
    }

    async fn import(&self, ctx: &Context, id: &str) -> Result<Value, Diagnostics> {
        K::import(ctx, id).await
    }
}
