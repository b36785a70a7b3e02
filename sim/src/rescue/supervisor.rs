//! Keeps an SSH server running for every server in rescue, and only for
//! those: running, booted into rescue with keys, and past any `slow_ssh`
//! delay. Each is registered with the proxy as the server's port 22, so a
//! client dials `<public-ipv4>:22` through the proxy as it would dial it on
//! Hetzner.

use std::collections::BTreeMap;
use std::time::Duration;

use russh::keys::PrivateKey;
use russh::keys::ssh_key::private::{Ed25519Keypair, Ed25519PrivateKey};
use tokio::sync::watch;
use tracing::warn;

use super::ssh::{RescueSpec, RescueSsh};
use crate::app::{AppState, lock};
use crate::ids::Id;
use crate::resources::servers::{BootTarget, ServerStatus};

pub const SSH_PORT: u16 = 22;
const TICK: Duration = Duration::from_millis(50);

/// The rescue systems' host key: one per emulator run.
fn host_key() -> PrivateKey {
    let mut seed = [0u8; Ed25519PrivateKey::BYTE_SIZE];
    if getrandom::fill(&mut seed).is_err() {
        // An emulator on loopback: a predictable host key only weakens a test.
        seed.iter_mut().for_each(|b| *b = fastrand::u8(..));
    }
    PrivateKey::from(Ed25519Keypair::from(Ed25519PrivateKey::from_bytes(&seed)))
}

pub async fn supervise(sim: AppState, mut stop: watch::Receiver<bool>) {
    let host_key = host_key();
    let mut running: BTreeMap<Id, RescueSsh> = BTreeMap::new();
    loop {
        reconcile(&sim, &host_key, &mut running).await;
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stop.changed() => break,
        }
    }
    for (id, ssh) in std::mem::take(&mut running) {
        withdraw(&sim, id, &ssh);
        ssh.stop();
    }
}

fn wanted(sim: &AppState) -> BTreeMap<Id, RescueSpec> {
    let world = sim.world();
    let now = world.now;
    world
        .servers
        .values()
        .filter(|s| s.status == ServerStatus::Running && s.boot == Some(BootTarget::Rescue))
        .filter_map(|s| {
            let rescue = s.rescue.as_ref()?;
            if rescue.keys.is_empty() {
                return None; // password-only rescue: nothing hct could log in with
            }
            let up_at = rescue
                .booted_at
                .plus(super::ssh_delay(&world.config.rescue_faults, s));
            (now >= up_at).then(|| RescueSpec {
                server: s.id,
                booted_at: rescue.booted_at.millis(),
                keys: rescue.keys.clone(),
            })
        })
        .map(|spec| (spec.server, spec))
        .collect()
}

async fn reconcile(sim: &AppState, host_key: &PrivateKey, running: &mut BTreeMap<Id, RescueSsh>) {
    let wanted = wanted(sim);
    let outdated: Vec<Id> = running
        .iter()
        .filter(|(id, ssh)| wanted.get(id) != Some(&ssh.spec))
        .map(|(id, _)| *id)
        .collect();
    for id in outdated {
        if let Some(ssh) = running.remove(&id) {
            withdraw(sim, id, &ssh);
            ssh.stop();
        }
    }
    for (id, spec) in wanted {
        if running.contains_key(&id) {
            continue;
        }
        match RescueSsh::start(sim.clone(), spec, host_key.clone()).await {
            Ok(ssh) => {
                lock(&sim.endpoints).insert((id, SSH_PORT), ssh.addr);
                running.insert(id, ssh);
            }
            Err(e) => warn!(server = id, "cannot start the rescue SSH server: {e}"),
        }
    }
}

/// Unregisters the listener, unless the endpoint now leads elsewhere.
fn withdraw(sim: &AppState, id: Id, ssh: &RescueSsh) {
    let mut endpoints = lock(&sim.endpoints);
    if endpoints.get(&(id, SSH_PORT)) == Some(&ssh.addr) {
        endpoints.remove(&(id, SSH_PORT));
    }
}
