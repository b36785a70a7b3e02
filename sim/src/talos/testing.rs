//! A world with Talos servers and a clock the tests move by hand.

use std::time::Duration;

use super::calls::NodeRef;
use super::lifecycle;
use super::sample::{SampleCluster, SampleNode};
use crate::catalog::Architecture;
use crate::clock::Timestamp;
use crate::durations::{Durations, Profile};
use crate::ids::Id;
use crate::resources::servers::{Attachment, Power, ServerSpec, TalosNode};
use crate::seed;
use crate::state::{World, WorldConfig};

pub const GATEWAY: &str = "10.0.0.1";

/// A binary `HCT_PEERS_ENV` names (a `KEY=path` line of
/// `scripts/ensure-peers`' output: `ETCD`, `ETCDUTL`), if set.
pub fn peer(key: &str) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(std::env::var_os("HCT_PEERS_ENV")?).ok()?;
    let prefix = format!("{key}=");
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&prefix).map(std::path::PathBuf::from))
}

pub struct Lab {
    pub world: World,
    pub now: Timestamp,
    network: Id,
}

pub fn cluster() -> SampleCluster {
    SampleCluster::generate("lab", "https://10.0.128.11:6443").unwrap()
}

pub fn control_plane() -> SampleNode {
    SampleNode::new(true, "v1.12.6", GATEWAY)
}

pub fn worker() -> SampleNode {
    SampleNode::new(false, "v1.12.6", GATEWAY)
}

impl Lab {
    pub fn new() -> Self {
        Self::starting_at(Timestamp::from_millis(1_800_000_000_000))
    }

    /// A lab whose clock starts at `now` (a lab some time before the wall
    /// clock can be handed to code that reads the wall clock).
    pub fn starting_at(now: Timestamp) -> Self {
        let mut world = World::new(WorldConfig {
            durations: Durations::new(Profile::Fast),
            ..WorldConfig::default()
        });
        seed::system_images(&mut world);
        seed::hct_project(&mut world, now).unwrap();
        let network = *world.networks.keys().next().unwrap();
        Self {
            world,
            now,
            network,
        }
    }

    /// Adds an x86 Talos snapshot of `version`, a copy of a seeded one,
    /// unless the seed made one.
    pub fn release(&mut self, version: &str) {
        let seeded = self.world.images.values().any(|i| {
            i.labels.get("version").map(String::as_str) == Some(version)
                && i.architecture == Architecture::X86
        });
        if seeded {
            return;
        }
        let mut image = self
            .world
            .images
            .values()
            .find(|i| i.content.is_some() && i.architecture == Architecture::X86)
            .cloned()
            .unwrap();
        let seeded = image.labels["version"].clone();
        image.id = self.world.next_id(Some(crate::ids::ResourceKind::Image));
        image.labels.insert("version".into(), version.into());
        image.description = image.description.replace(&seeded, version);
        if let Some(disk) = image.content.as_mut() {
            disk.image_url = disk.image_url.replace(&seeded, version);
            disk.version = version.into();
        }
        self.world.images.insert(image.id, image);
    }

    /// A running Talos server of `version` at `ip` (its boot has not been
    /// noticed yet: call `tick`).
    pub fn server(&mut self, name: &str, ip: &str, version: &str, user_data: Option<String>) -> Id {
        let image = self
            .world
            .images
            .values()
            .find(|i| {
                i.labels.get("version").map(String::as_str) == Some(version)
                    && i.architecture == Architecture::X86
            })
            .map(|i| i.id)
            .unwrap();
        let mut spec = ServerSpec::new(name, "cx23", &image.to_string());
        spec.start_after_create = false;
        spec.user_data = user_data;
        let id = self.world.create_server(spec, self.now).unwrap().server;
        self.hetzner();
        let attachment = Attachment {
            ip: Some(ip.into()),
            ..Attachment::default()
        };
        self.world
            .attach_to_network(id, self.network, attachment, self.now)
            .unwrap();
        self.hetzner();
        self.world.power(id, Power::On, self.now).unwrap();
        self.hetzner();
        id
    }

    /// Lets Hetzner's actions finish (a minute passes).
    pub fn hetzner(&mut self) {
        self.now = self.now.plus(Duration::from_secs(60));
        self.world.advance(self.now);
    }

    /// Moves the clock and lets the nodes catch up.
    pub fn tick(&mut self, by: Duration) {
        self.now = self.now.plus(by);
        self.world.advance(self.now);
        lifecycle::settle(&mut self.world, self.now);
    }

    /// Enough time for any boot to finish, and for a control plane that
    /// came up to join a running etcd.
    pub fn settle(&mut self) {
        self.tick(Duration::ZERO);
        self.tick(Duration::from_secs(10));
        self.etcd_join();
    }

    /// As long as a configured control plane takes to join a running etcd.
    pub fn etcd_join(&mut self) {
        let join = self.world.config.durations.for_command("talos_etcd_join");
        self.tick(join);
    }

    /// Marks the node as the one bootstrap was called on (it founds etcd).
    pub fn found_etcd(&mut self, id: Id) {
        if let Some(talos) = self
            .world
            .servers
            .get_mut(&id)
            .and_then(|s| s.talos.as_mut())
        {
            talos.node.disk.etcd.founder = true;
        }
    }

    pub fn talos(&self, id: Id) -> &TalosNode {
        self.world.servers[&id].talos.as_ref().unwrap()
    }

    /// Makes a call on the node as its current Talos start.
    pub fn on<R>(&mut self, id: Id, call: impl FnOnce(&mut World, NodeRef, Timestamp) -> R) -> R {
        let at = self.at(id);
        call(&mut self.world, at, self.now)
    }

    pub fn at(&self, id: Id) -> NodeRef {
        NodeRef {
            server: id,
            incarnation: self.talos(id).node.run.incarnation,
        }
    }

    /// A lab whose one control plane, `cp-1` at 10.0.128.11, is
    /// bootstrapped, an hour before the wall clock (which the machine API
    /// reads), and where that node is.
    pub fn bootstrapped_control_plane() -> (Self, NodeRef) {
        let mut lab = Lab::starting_at(Timestamp::from_millis(
            Timestamp::now().millis() - 3_600_000,
        ));
        let config = cluster().machine_config(&control_plane());
        let cp = lab.server("cp-1", "10.0.128.11", "v1.12.6", Some(config));
        lab.settle();
        lab.on(cp, |w, at, _| super::calls::bootstrap(w, at))
            .unwrap();
        lab.settle();
        let at = lab.at(cp);
        (lab, at)
    }

    /// The state hct-sim's services share, holding this lab's world.
    pub fn into_app(self) -> crate::app::AppState {
        std::sync::Arc::new(crate::app::Shared::new(
            self.world,
            "token".into(),
            crate::ratelimit::RateLimiter::per_hour(3600),
            crate::faults::RouteFaults::new(Vec::new(), None),
        ))
    }
}
