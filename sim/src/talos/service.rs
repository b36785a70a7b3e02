//! The machine API as apid serves it: each call is authorized, the world
//! brought up to now, the call routed to this node or (with `node`
//! metadata) a peer of its cluster, carried out, and answered in Talos'
//! message shapes.

use std::net::IpAddr;
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::auth::{self, Call, Caller};
use super::call_log::TalosCall;
use super::calls::{self, ApplyMode, ApplyRequest, CallError, NodeRef, etcd_health, etcd_members};
use super::etcd_recover;
use super::etcd_snapshot;
use super::faults;
use super::kubeconfig;
use super::lifecycle;
use super::pb::{self, machine_service_server::MachineService};
use crate::app::{AppState, WorldGuard};

type DataStream = tokio_stream::Iter<std::vec::IntoIter<Result<pb::Data, Status>>>;

/// Bytes per chunk of a streamed answer (kubeconfig archive, file).
const CHUNK: usize = 512;
/// Bytes per chunk of an etcd snapshot: at most what Talos' stream chunker
/// reads at a time (`pkg/chunker/stream`, 1024 unless told otherwise).
const SNAPSHOT_CHUNK: usize = 1024;

pub struct MachineApi {
    sim: AppState,
    node: NodeRef,
}

impl MachineApi {
    pub fn new(sim: AppState, node: NodeRef) -> Self {
        Self { sim, node }
    }

    pub(super) fn authorize<T>(&self, request: &Request<T>, call: Call) -> Result<(), Status> {
        let caller = request
            .extensions()
            .get::<Caller>()
            .ok_or_else(|| Status::internal("the connection has no TLS caller"))?;
        self.log(request, call, caller);
        auth::authorize(caller, call)?;
        self.injected_failure(call)
    }

    /// Adds the call to the world's call log, refused or not.
    fn log<T>(&self, request: &Request<T>, call: Call, caller: &Caller) {
        let mut world = self.sim.world();
        let Some(name) = world.servers.get(&self.node.server).map(|s| s.name.clone()) else {
            return;
        };
        let proxied_to = request
            .metadata()
            .get("node")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let at_ms = world.now.millis();
        world.talos_calls.push(TalosCall::new(
            at_ms,
            (self.node.server, name),
            call,
            caller,
            proxied_to,
        ));
    }

    /// A `call_fails` fault on this node and call answers instead.
    fn injected_failure(&self, call: Call) -> Result<(), Status> {
        let mut guard = self.sim.world();
        if !faults::fails_calls(&guard.config.talos_faults) {
            return Ok(());
        }
        let world = &mut *guard;
        let Some(server) = world.servers.get(&self.node.server) else {
            return Ok(());
        };
        match faults::take_call_failure(&mut world.config.talos_faults, server, &call.to_string()) {
            Some((code, message)) => Err(Status::new(code, message)),
            None => Ok(()),
        }
    }

    /// The world, as of now.
    pub(super) fn world(&self) -> WorldGuard<'_> {
        let mut world = self.sim.world();
        let now = world.now;
        lifecycle::settle(&mut world, now);
        world
    }

    /// Carries out a call that changes the node, and lets the node
    /// summaries show the change at once.
    fn change<T, R>(
        &self,
        request: &Request<T>,
        call: impl FnOnce(&mut WorldGuard<'_>, NodeRef) -> Result<R, CallError>,
    ) -> Result<(R, Option<pb::Metadata>), Status> {
        let mut world = self.world();
        let (at, metadata) = self.target(&world, request)?;
        let outcome = call(&mut world, at).map_err(status)?;
        let now = world.now;
        lifecycle::settle(&mut world, now);
        Ok((outcome, metadata))
    }

    /// The node that answers: this one, or the peer the `node` metadata
    /// names; with the metadata the answer says which node it came from.
    pub(super) fn target<T>(
        &self,
        world: &WorldGuard<'_>,
        request: &Request<T>,
    ) -> Result<(NodeRef, Option<pb::Metadata>), Status> {
        let Some(value) = request.metadata().get("node") else {
            return Ok((self.node, None));
        };
        let ip = value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<IpAddr>().ok())
            .ok_or_else(|| Status::invalid_argument("the node metadata is not an IP address"))?;
        let at = calls::peer(world, self.node, ip).map_err(status)?;
        let hostname = calls::hostname(world, at).map_err(status)?;
        Ok((
            at,
            Some(pb::Metadata {
                hostname,
                error: String::new(),
            }),
        ))
    }
}

fn status(error: CallError) -> Status {
    Status::new(error.code(), error.to_string())
}

fn snapshot_status(error: etcd_snapshot::SnapshotError) -> Status {
    Status::new(error.code(), error.to_string())
}

/// An ID for the task a call started, in the shape of Talos' UUIDs.
fn actor_id() -> String {
    let hex = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    format!(
        "{}-{}-4{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[13..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn apply_mode(wire: i32) -> Result<ApplyMode, Status> {
    use pb::apply_configuration_request::Mode;
    Ok(match Mode::try_from(wire) {
        Ok(Mode::Reboot) => ApplyMode::Reboot,
        Ok(Mode::Auto) => ApplyMode::Auto,
        Ok(Mode::NoReboot) => ApplyMode::NoReboot,
        Ok(Mode::Staged) => ApplyMode::Staged,
        Ok(Mode::Try) => ApplyMode::Try,
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "unknown apply mode {wire}"
            )));
        }
    })
}

fn wire_mode(mode: ApplyMode) -> i32 {
    use pb::apply_configuration_request::Mode;
    (match mode {
        ApplyMode::Reboot => Mode::Reboot,
        ApplyMode::Auto => Mode::Auto,
        ApplyMode::NoReboot => Mode::NoReboot,
        ApplyMode::Staged => Mode::Staged,
        ApplyMode::Try => Mode::Try,
    }) as i32
}

fn duration(wire: Option<&prost_types::Duration>) -> Option<Duration> {
    let wire = wire?;
    let seconds = u64::try_from(wire.seconds).ok()?;
    let nanos = u32::try_from(wire.nanos).ok()?;
    Some(Duration::new(seconds, nanos)).filter(|d| !d.is_zero())
}

#[tonic::async_trait]
impl MachineService for MachineApi {
    type KubeconfigStream = DataStream;

    async fn apply_configuration(
        &self,
        request: Request<pb::ApplyConfigurationRequest>,
    ) -> Result<Response<pb::ApplyConfigurationResponse>, Status> {
        self.authorize(&request, Call::ApplyConfiguration)?;
        let message = request.get_ref();
        let apply = ApplyRequest {
            data: &message.data,
            mode: apply_mode(message.mode)?,
            dry_run: message.dry_run,
            try_timeout: duration(message.try_mode_timeout.as_ref()),
        };
        let (applied, metadata) = self.change(&request, |world, at| {
            let now = world.now;
            calls::apply_configuration(world, at, &apply, now)
        })?;
        Ok(Response::new(pb::ApplyConfigurationResponse {
            messages: vec![pb::ApplyConfigurationResult {
                metadata,
                warnings: applied.warnings,
                mode: wire_mode(applied.mode),
                mode_details: applied.details,
            }],
        }))
    }

    async fn bootstrap(
        &self,
        request: Request<pb::BootstrapRequest>,
    ) -> Result<Response<pb::BootstrapResponse>, Status> {
        self.authorize(&request, Call::Bootstrap)?;
        let release = self.sim.kube_binaries.as_ref().map(|b| b.version.as_str());
        let message = request.get_ref();
        let (recover, skip_hash_check) = (message.recover_etcd, message.recover_skip_hash_check);
        let ((), metadata) = self.change(&request, |world, at| {
            if recover {
                etcd_recover::bootstrap(world, at, skip_hash_check, release)
            } else {
                calls::bootstrap(world, at)
            }
        })?;
        Ok(Response::new(pb::BootstrapResponse {
            messages: vec![pb::BootstrapResult { metadata }],
        }))
    }

    async fn etcd_member_list(
        &self,
        request: Request<pb::EtcdMemberListRequest>,
    ) -> Result<Response<pb::EtcdMemberListResponse>, Status> {
        self.authorize(&request, Call::EtcdMemberList)?;
        let query_local = request.get_ref().query_local;
        let until = tokio::time::Instant::now() + etcd_members::held_for(request.metadata());
        // Held while no etcd answers, as Talos' etcd client waits for one.
        let (listed, metadata) = loop {
            let asked = {
                let world = self.world();
                let (at, metadata) = self.target(&world, &request)?;
                (etcd_members::as_asked(&world, at, query_local), metadata)
            };
            match asked {
                (Err(CallError::EtcdUnreachable), _)
                    if tokio::time::Instant::now() + etcd_members::RETRY < until =>
                {
                    tokio::time::sleep(etcd_members::RETRY).await;
                }
                (answer, metadata) => break (answer.map_err(status)?, metadata),
            }
        };
        // Where the ring's real etcd runs, it says which members there are
        // and whether it has a leader.
        let real = self.sim.control_planes.etcd_listing(&listed.store);
        let members = etcd_members::answer(listed, real).map_err(status)?;
        Ok(Response::new(pb::EtcdMemberListResponse {
            messages: vec![pb::EtcdMembers {
                metadata,
                legacy_members: Vec::new(),
                members,
            }],
        }))
    }

    async fn etcd_recover(
        &self,
        request: Request<tonic::Streaming<pb::Data>>,
    ) -> Result<Response<pb::EtcdRecoverResponse>, Status> {
        self.etcd_recover_upload(request).await
    }

    type EtcdSnapshotStream = DataStream;

    async fn etcd_snapshot(
        &self,
        request: Request<pb::EtcdSnapshotRequest>,
    ) -> Result<Response<Self::EtcdSnapshotStream>, Status> {
        self.authorize(&request, Call::EtcdSnapshot)?;
        let release = self.sim.kube_binaries.as_ref().map(|b| b.version.as_str());
        let (source, metadata) = {
            let mut world = self.world();
            let (at, metadata) = self.target(&world, &request)?;
            let now = world.now;
            let source =
                etcd_snapshot::source(&mut world, at, release, now).map_err(snapshot_status)?;
            (source, metadata)
        };
        let snapshot = etcd_snapshot::take(&self.sim.control_planes, source)
            .await
            .map_err(snapshot_status)?;
        Ok(Response::new(in_chunks(
            &snapshot,
            SNAPSHOT_CHUNK,
            metadata,
        )))
    }

    async fn kubeconfig(
        &self,
        request: Request<()>,
    ) -> Result<Response<Self::KubeconfigStream>, Status> {
        self.authorize(&request, Call::Kubeconfig)?;
        let (source, metadata) = {
            let world = self.world();
            let (at, metadata) = self.target(&world, &request)?;
            (
                calls::kubeconfig_source(&world, at).map_err(status)?,
                metadata,
            )
        };
        let archive = kubeconfig::render(&source)
            .and_then(|text| kubeconfig::archive(&text))
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(in_chunks(&archive, CHUNK, metadata)))
    }

    type ReadStream = DataStream;

    async fn read(
        &self,
        request: Request<pb::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        self.authorize(&request, Call::Read)?;
        let world = self.world();
        let (at, metadata) = self.target(&world, &request)?;
        let bytes = calls::read_file(&world, at, &request.get_ref().path).map_err(status)?;
        Ok(Response::new(in_chunks(&bytes, CHUNK, metadata)))
    }

    async fn reboot(
        &self,
        request: Request<pb::RebootRequest>,
    ) -> Result<Response<pb::RebootResponse>, Status> {
        self.authorize(&request, Call::Reboot)?;
        let ((), metadata) = self.change(&request, |world, at| {
            let now = world.now;
            calls::reboot(world, at, now)
        })?;
        Ok(Response::new(pb::RebootResponse {
            messages: vec![pb::RebootResult {
                metadata,
                actor_id: actor_id(),
            }],
        }))
    }

    async fn reset(
        &self,
        request: Request<pb::ResetRequest>,
    ) -> Result<Response<pb::ResetResponse>, Status> {
        self.authorize(&request, Call::Reset)?;
        let message = request.get_ref();
        let ((), metadata) = self.change(&request, |world, at| {
            let now = world.now;
            calls::reset(world, at, message.graceful, message.reboot, now)
        })?;
        Ok(Response::new(pb::ResetResponse {
            messages: vec![pb::ResetResult {
                metadata,
                actor_id: actor_id(),
            }],
        }))
    }

    async fn service_list(
        &self,
        request: Request<()>,
    ) -> Result<Response<pb::ServiceListResponse>, Status> {
        self.authorize(&request, Call::ServiceList)?;
        let world = self.world();
        let (at, metadata) = self.target(&world, &request)?;
        let mut services = calls::services(&world, at).map_err(status)?;
        // Where the ring's real etcd runs, its word on the node's own
        // member decides whether etcd's health check passes.
        let failing = etcd_health::on_node(&world, at, &self.sim.control_planes);
        etcd_health::judge(&mut services, failing);
        Ok(Response::new(pb::ServiceListResponse {
            messages: vec![pb::ServiceList {
                metadata,
                services: services
                    .into_iter()
                    .map(|s| pb::ServiceInfo {
                        id: s.id.to_string(),
                        state: s.state.to_string(),
                        health: Some(pb::ServiceHealth {
                            unknown: false,
                            healthy: s.healthy,
                            last_message: s.message,
                        }),
                    })
                    .collect(),
            }],
        }))
    }

    async fn upgrade(
        &self,
        request: Request<pb::UpgradeRequest>,
    ) -> Result<Response<pb::UpgradeResponse>, Status> {
        self.authorize(&request, Call::Upgrade)?;
        let (_, metadata) = self.change(&request, |world, at| {
            let now = world.now;
            calls::upgrade(world, at, &request.get_ref().image, now)
        })?;
        Ok(Response::new(pb::UpgradeResponse {
            messages: vec![pb::UpgradeResult {
                metadata,
                ack: "Upgrade request received".into(),
                actor_id: actor_id(),
            }],
        }))
    }

    async fn version(&self, request: Request<()>) -> Result<Response<pb::VersionResponse>, Status> {
        self.authorize(&request, Call::Version)?;
        let world = self.world();
        let (at, metadata) = self.target(&world, &request)?;
        let report = calls::version(&world, at).map_err(status)?;
        Ok(Response::new(pb::VersionResponse {
            messages: vec![pb::VersionResult {
                metadata,
                version: Some(pb::VersionInfo {
                    tag: report.tag,
                    sha: String::new(),
                    built: String::new(),
                    go_version: String::new(),
                    os: "linux".into(),
                    arch: report.arch,
                }),
                platform: Some(pb::PlatformInfo {
                    name: "hcloud".into(),
                    mode: if report.maintenance {
                        "maintenance"
                    } else {
                        "cloud"
                    }
                    .into(),
                }),
            }],
        }))
    }
}

/// A byte stream as Talos sends it: chunks of `size` bytes, each with the
/// answering node.
fn in_chunks(bytes: &[u8], size: usize, metadata: Option<pb::Metadata>) -> DataStream {
    let chunks: Vec<Result<pb::Data, Status>> = bytes
        .chunks(size)
        .map(|chunk| {
            Ok(pb::Data {
                metadata: metadata.clone(),
                bytes: chunk.to_vec(),
            })
        })
        .collect();
    tokio_stream::iter(chunks)
}
