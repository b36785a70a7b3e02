//! Keeps an emulated apid running for every node that should answer, and
//! only for those: a running Talos on a server with a private address, not
//! made unreachable by a fault, and (configured) holding its certificate.
//! Each apid is registered with the proxy as the server's port 50000, so
//! clients dial `<private-ip>:50000` as on Hetzner. An endpoint that
//! someone else registered for that port is left alone.

use std::collections::BTreeMap;
use std::iter;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;

use super::apid::{APID_PORT, Apid, ApidMode, ApidSpec};
use super::calls::NodeRef;
use super::{cluster, faults, lifecycle};
use crate::app::{AppState, lock};
use crate::resources::servers::Server;
use crate::state::{Id, World};

const TICK: Duration = Duration::from_millis(50);

pub async fn supervise(sim: AppState, mut stop: watch::Receiver<bool>) {
    let mut supervisor = Supervisor {
        sim,
        running: BTreeMap::new(),
        failed: BTreeMap::new(),
    };
    loop {
        supervisor.reconcile().await;
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => break,
        }
    }
    supervisor.stop_all();
}

struct Supervisor {
    sim: AppState,
    running: BTreeMap<Id, Apid>,
    /// Specs that could not start, so that they are not retried every tick.
    failed: BTreeMap<Id, ApidSpec>,
}

impl Supervisor {
    async fn reconcile(&mut self) {
        let wanted = self.wanted();
        let outdated: Vec<Id> = self
            .running
            .iter()
            .filter(|(id, apid)| wanted.get(id) != Some(&apid.spec))
            .map(|(id, _)| *id)
            .collect();
        for id in outdated {
            if let Some(apid) = self.running.remove(&id) {
                self.withdraw(id, apid.addr);
                apid.stop();
            }
        }
        self.failed.retain(|id, spec| wanted.get(id) == Some(spec));
        for (id, spec) in wanted {
            if self.running.contains_key(&id)
                || self.failed.contains_key(&id)
                || self.taken_by_others(id)
            {
                continue;
            }
            match Apid::start(self.sim.clone(), spec.clone()).await {
                Ok(apid) => {
                    lock(&self.sim.endpoints)
                        .entry((id, APID_PORT))
                        .or_insert(apid.addr);
                    self.running.insert(id, apid);
                }
                Err(e) => {
                    warn!(server = id, "cannot start the emulated apid: {e}");
                    self.failed.insert(id, spec);
                }
            }
        }
    }

    /// Brings the nodes up to now, then says which apids should run.
    fn wanted(&self) -> BTreeMap<Id, ApidSpec> {
        let mut world = self.sim.world();
        let updates = lifecycle::plan(&world, world.now);
        if !updates.is_empty() {
            lifecycle::apply(&mut world, updates);
        }
        world
            .servers
            .values()
            .filter_map(|server| spec(&world, server))
            .map(|spec| (spec.node.server, spec))
            .collect()
    }

    fn taken_by_others(&self, id: Id) -> bool {
        lock(&self.sim.endpoints).contains_key(&(id, APID_PORT))
    }

    /// Unregisters the apid, unless the endpoint now leads elsewhere.
    fn withdraw(&self, id: Id, addr: SocketAddr) {
        let mut endpoints = lock(&self.sim.endpoints);
        if endpoints.get(&(id, APID_PORT)) == Some(&addr) {
            endpoints.remove(&(id, APID_PORT));
        }
    }

    fn stop_all(&mut self) {
        for (id, apid) in std::mem::take(&mut self.running) {
            self.withdraw(id, apid.addr);
            apid.stop();
        }
    }
}

fn spec(world: &World, server: &Server) -> Option<ApidSpec> {
    let talos = server.talos.as_ref()?;
    if !talos.node.is_running() || faults::is_unreachable(&world.config.talos_faults, server) {
        return None;
    }
    let ips: Vec<Ipv4Addr> = server
        .private_net
        .iter()
        .flat_map(|p| iter::once(p.ip).chain(p.alias_ips.iter().copied()))
        .collect();
    if ips.is_empty() {
        return None;
    }
    let mode = match talos.node.config() {
        None => ApidMode::Maintenance,
        Some(config) => ApidMode::Configured {
            issuer: talos.node.run.apid_issuer.clone()?,
            trusted: config.os_ca.certificate.clone(),
            hostname: cluster::hostname(server, Some(config)),
        },
    };
    Some(ApidSpec {
        node: NodeRef {
            server: server.id,
            incarnation: talos.node.run.incarnation,
        },
        ips,
        mode,
    })
}
