//! What a project starts with: Hetzner's system images always, and with
//! `--seed` the network, its NAT gateway and the Talos snapshots an hct
//! cluster expects to find. The network routes 0.0.0.0/0 to the NAT
//! gateway, a running server `hct-sim-nat` attached at that address:
//! without it the nodes would have no egress. It is labelled
//! [`SEEDED_LABEL`], so what compares a cluster's servers with the sim's
//! can leave it out. The Talos snapshots' disks hold the release their
//! labels name, as a snapshot build would have written it.

use std::net::Ipv4Addr;

use crate::catalog::{self, Architecture};
use crate::clock::Timestamp;
use crate::errors::ApiError;
use crate::ids::{Id, ResourceKind};
use crate::labels::Labels;
use crate::rescue::DiskImage;
use crate::resources::images::{CreatedFrom, Image, ImageStatus, ImageType};
use crate::resources::networks::{RouteSpec, SubnetSpec};
use crate::resources::primary_ips::IpType;
use crate::resources::servers::{BootTarget, PrivateNet, Server, ServerStatus, mac_address};
use crate::state::World;

/// The Image Factory schematic of the seeded Talos snapshots.
pub const TALOS_SCHEMATIC: &str =
    "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";
pub const TALOS_VERSIONS: [&str; 4] = ["v1.11.3", "v1.12.6", "v1.13.9", "v1.14.0"];
pub const SEED_NETWORK: &str = "the private network";
/// The seed network's NAT gateway: its name and its address in the network.
pub const NAT_SERVER: &str = "hct-sim-nat";
pub const NAT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 128, 2);
/// The label of the servers the seed made (value: what it is for).
pub const SEEDED_LABEL: &str = "hct-sim/seeded";

/// Whether a server with these labels came with the seed.
pub fn is_seeded(labels: &Labels) -> bool {
    labels.contains_key(SEEDED_LABEL)
}

struct SystemImage {
    ids: (Id, Id),
    name: &'static str,
    description: &'static str,
    os_flavor: &'static str,
    os_version: &'static str,
    created: u64,
}

const SYSTEM_IMAGES: [SystemImage; 3] = [
    SystemImage {
        ids: (114_690_387, 114_690_389),
        name: "debian-12",
        description: "Debian 12",
        os_flavor: "debian",
        os_version: "12",
        created: 1_686_614_400_000,
    },
    SystemImage {
        ids: (281_226_587, 281_226_588),
        name: "debian-13",
        description: "Debian 13",
        os_flavor: "debian",
        os_version: "13",
        created: 1_754_697_600_000,
    },
    SystemImage {
        ids: (161_547_269, 161_547_270),
        name: "ubuntu-24.04",
        description: "Ubuntu 24.04",
        os_flavor: "ubuntu",
        os_version: "24.04",
        created: 1_714_003_200_000,
    },
];

/// Adds the system images, for x86 and arm each.
pub fn system_images(world: &mut World) {
    for image in &SYSTEM_IMAGES {
        for (id, architecture) in [
            (image.ids.0, Architecture::X86),
            (image.ids.1, Architecture::Arm),
        ] {
            world.images.insert(
                id,
                Image {
                    id,
                    kind: ImageType::System,
                    status: ImageStatus::Available,
                    name: Some(image.name.into()),
                    description: image.description.into(),
                    image_size: None,
                    disk_size: 5.0,
                    created: Timestamp::from_millis(image.created),
                    created_from: None,
                    os_flavor: image.os_flavor.into(),
                    os_version: Some(image.os_version.into()),
                    architecture,
                    labels: Labels::new(),
                    delete_protected: false,
                    content: None,
                },
            );
        }
    }
}

fn talos_labels(version: &str, arch: &str) -> Labels {
    [
        ("os", "talos"),
        ("type", "infra"),
        ("version", version),
        ("arch", arch),
        // Hetzner label values hold at most 63 characters, one less than a
        // schematic ID: the label carries its first 32 hex digits (the full
        // ID is in the description).
        ("schematic", &TALOS_SCHEMATIC[..32]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// What the disk of a seeded Talos snapshot holds: the factory's raw image
/// of `version`, as a snapshot build would have written it.
fn seeded_disk(version: &str, arch: &str, now: Timestamp) -> DiskImage {
    DiskImage {
        image_url: format!(
            "https://factory.talos.dev/image/{TALOS_SCHEMATIC}/{version}/hcloud-{arch}.raw.xz"
        ),
        version: version.into(),
        arch: arch.into(),
        schematic: TALOS_SCHEMATIC.into(),
        server_type: if arch == "arm64" { "cax11" } else { "cx23" }.into(),
        written_at: now,
    }
}

/// The seed network and Talos snapshots.
pub fn hct_project(world: &mut World, now: Timestamp) -> Result<(), ApiError> {
    private_network(world, SEED_NETWORK, NAT_SERVER, now)?;
    for version in TALOS_VERSIONS {
        for (arch, architecture) in [("amd64", Architecture::X86), ("arm64", Architecture::Arm)] {
            let id = world.next_id(Some(ResourceKind::Image));
            world.images.insert(
                id,
                Image {
                    id,
                    kind: ImageType::Snapshot,
                    status: ImageStatus::Available,
                    name: None,
                    description: format!(
                        "Talos Linux {version} ({arch}), schematic {TALOS_SCHEMATIC}"
                    ),
                    image_size: Some(0.31),
                    disk_size: 40.0,
                    created: now,
                    created_from: Some(CreatedFrom {
                        id: 4_900_001,
                        name: format!("talos-image-builder-{arch}"),
                    }),
                    os_flavor: "unknown".into(),
                    os_version: None,
                    architecture,
                    labels: talos_labels(version, arch),
                    delete_protected: false,
                    content: Some(seeded_disk(version, arch, now)),
                },
            );
        }
    }
    Ok(())
}

/// A private network as hct wants one: `10.0.0.0/16`, the cloud subnet
/// `10.0.128.0/24`, a route `0.0.0.0/0` to its NAT box `nat` (a running
/// Debian server at [`NAT_IP`] with a public IPv4). The seed makes one;
/// tests make more (networks may overlap, as on Hetzner).
pub fn private_network(
    world: &mut World,
    name: &str,
    nat: &str,
    now: Timestamp,
) -> Result<Id, ApiError> {
    let network = world.create_network(
        name.into(),
        "10.0.0.0/16",
        vec![SubnetSpec {
            kind: "cloud".into(),
            ip_range: Some("10.0.128.0/24".into()),
            network_zone: "eu-central".into(),
        }],
        vec![RouteSpec {
            destination: "0.0.0.0/0".into(),
            gateway: NAT_IP.to_string(),
        }],
        Labels::new(),
        false,
        now,
    )?;
    nat_gateway(world, network, nat, now)?;
    Ok(network)
}

/// The NAT box of a network: a Debian server, running, with a public IPv4
/// and attached to `network` at [`NAT_IP`].
fn nat_gateway(world: &mut World, network: Id, name: &str, now: Timestamp) -> Result<(), ApiError> {
    let server_type = catalog::server_type("cx23")
        .ok_or_else(|| ApiError::Internal("no server type cx23".into()))?;
    let image = world
        .images
        .values()
        .find(|i| i.name.as_deref() == Some("debian-12") && i.architecture == Architecture::X86)
        .map(|i| i.id);
    let id = world.next_id(Some(ResourceKind::Server));
    let labels: Labels = [("role", "nat"), (SEEDED_LABEL, "nat")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    world.servers.insert(
        id,
        Server {
            id,
            name: name.into(),
            status: ServerStatus::Running,
            created: now,
            server_type: server_type.name.into(),
            location: "nbg1".into(),
            image,
            primary_disk_size: server_type.disk,
            public_ipv4: None,
            public_ipv6: None,
            private_net: vec![PrivateNet {
                network,
                ip: NAT_IP,
                alias_ips: Vec::new(),
                mac_address: mac_address(id, network),
            }],
            placement_group: None,
            labels,
            rescue_enabled: false,
            user_data: None,
            ssh_keys: Vec::new(),
            delete_protected: false,
            rebuild_protected: false,
            boot: Some(BootTarget::Disk),
            talos: None,
            rescue_keys: Vec::new(),
            rescue: None,
            disk: None,
            iso: None,
            backup_window: None,
        },
    );
    world.give_server_primary_ip(id, IpType::Ipv4, None, now)
}
