//! What a project starts with: Hetzner's system images always, and with
//! `--seed` the network and Talos snapshots an hct cluster expects to find.

use crate::catalog::Architecture;
use crate::clock::Timestamp;
use crate::ids::{Id, ResourceKind};
use crate::labels::Labels;
use crate::resources::images::{CreatedFrom, Image, ImageStatus, ImageType};
use crate::resources::networks::{RouteSpec, SubnetSpec};
use crate::state::World;

/// The Image Factory schematic of the seeded Talos snapshots.
pub const TALOS_SCHEMATIC: &str =
    "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";
pub const TALOS_VERSIONS: [&str; 3] = ["v1.11.3", "v1.12.6", "v1.13.9"];
pub const SEED_NETWORK: &str = "the private network";

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

/// The seed network and Talos snapshots.
pub fn hct_project(world: &mut World, now: Timestamp) -> Result<(), crate::errors::ApiError> {
    world.create_network(
        SEED_NETWORK.into(),
        "10.0.0.0/16",
        vec![SubnetSpec {
            kind: "cloud".into(),
            ip_range: Some("10.0.128.0/24".into()),
            network_zone: "eu-central".into(),
        }],
        vec![RouteSpec {
            destination: "0.0.0.0/0".into(),
            gateway: "10.0.128.2".into(),
        }],
        Labels::new(),
        false,
        now,
    )?;
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
                    content: None,
                },
            );
        }
    }
    Ok(())
}
