//! The server types, in Hetzner's IDs and order (the list is by ID): the
//! retired CX11 (still answered by ID), the first CPX generation (withdrawn
//! from the European locations, still sold in the US and Singapore), the Arm
//! CAX, the dedicated CCX, the second CX generation (deprecated, still sold
//! until 2027 since hct's examples used cx22), the second CPX generation and
//! the third CX generation; and how they are looked up.

use super::Architecture;
use super::server_types::{Deprecation, Offer, ServerType};

/// CX11 and its generation: gone since September 2024.
const RETIRED_2024: Deprecation = Deprecation {
    announced: "2024-06-06T00:00:00+00:00",
    unavailable_after: "2024-09-06T00:00:00+00:00",
};

/// The second CX generation, replaced by the third.
const CX_GEN2: Deprecation = Deprecation {
    announced: "2025-10-16T06:00:00+00:00",
    unavailable_after: "2027-01-01T00:00:00+00:00",
};

/// The first CPX generation's European offers, replaced by the second.
const CPX_GEN1_EU: Deprecation = Deprecation {
    announced: "2025-10-16T06:00:00+00:00",
    unavailable_after: "2026-01-01T00:00:00+00:00",
};

/// Sold in Falkenstein, Nuremberg and Helsinki.
macro_rules! europe {
    ($monthly:expr) => {
        &[
            Offer::eu("fsn1", $monthly),
            Offer::eu("nbg1", $monthly),
            Offer::eu("hel1", $monthly),
        ]
    };
}

/// Sold everywhere.
macro_rules! everywhere {
    ($eu:expr, $us:expr, $sg:expr) => {
        &[
            Offer::eu("fsn1", $eu),
            Offer::eu("nbg1", $eu),
            Offer::eu("hel1", $eu),
            Offer::us("ash", $us),
            Offer::us("hil", $us),
            Offer::sg($sg),
        ]
    };
}

/// The first CPX generation: withdrawn from Europe.
macro_rules! cpx_gen1 {
    ($eu:expr, $us:expr, $sg:expr) => {
        &[
            Offer::eu("fsn1", $eu).withdrawn(CPX_GEN1_EU),
            Offer::eu("nbg1", $eu).withdrawn(CPX_GEN1_EU),
            Offer::eu("hel1", $eu).withdrawn(CPX_GEN1_EU),
            Offer::us("ash", $us),
            Offer::us("hil", $us),
            Offer::sg($sg),
        ]
    };
}

/// The second CPX generation: Europe and Singapore.
macro_rules! cpx_gen2 {
    ($eu:expr, $sg:expr) => {
        &[
            Offer::eu("fsn1", $eu),
            Offer::eu("nbg1", $eu),
            Offer::eu("hel1", $eu),
            Offer::sg($sg),
        ]
    };
}

pub const SERVER_TYPES: &[ServerType] = &[
    ServerType {
        id: 1,
        name: "cx11",
        description: "CX11",
        category: "cost_optimized",
        cores: 1,
        memory: 2.0,
        disk: 20,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: Some(RETIRED_2024),
        offers: europe!(3.29),
    },
    ServerType {
        id: 22,
        name: "cpx11",
        description: "CPX 11",
        category: "regular_purpose",
        cores: 2,
        memory: 2.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen1!(4.99, 5.49, 8.49),
    },
    ServerType {
        id: 23,
        name: "cpx21",
        description: "CPX 21",
        category: "regular_purpose",
        cores: 3,
        memory: 4.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen1!(8.49, 9.49, 15.49),
    },
    ServerType {
        id: 24,
        name: "cpx31",
        description: "CPX 31",
        category: "regular_purpose",
        cores: 4,
        memory: 8.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen1!(15.49, 16.99, 28.49),
    },
    ServerType {
        id: 25,
        name: "cpx41",
        description: "CPX 41",
        category: "regular_purpose",
        cores: 8,
        memory: 16.0,
        disk: 240,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen1!(28.49, 31.49, 52.49),
    },
    ServerType {
        id: 26,
        name: "cpx51",
        description: "CPX 51",
        category: "regular_purpose",
        cores: 16,
        memory: 32.0,
        disk: 360,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen1!(59.99, 65.49, 110.49),
    },
    ServerType {
        id: 45,
        name: "cax11",
        description: "CAX11",
        category: "cost_optimized",
        cores: 2,
        memory: 4.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::Arm,
        deprecation: None,
        offers: europe!(3.79),
    },
    ServerType {
        id: 93,
        name: "cax21",
        description: "CAX21",
        category: "cost_optimized",
        cores: 4,
        memory: 8.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::Arm,
        deprecation: None,
        offers: europe!(6.49),
    },
    ServerType {
        id: 94,
        name: "cax31",
        description: "CAX31",
        category: "cost_optimized",
        cores: 8,
        memory: 16.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::Arm,
        deprecation: None,
        offers: europe!(12.49),
    },
    ServerType {
        id: 95,
        name: "cax41",
        description: "CAX41",
        category: "cost_optimized",
        cores: 16,
        memory: 32.0,
        disk: 320,
        cpu_type: "shared",
        architecture: Architecture::Arm,
        deprecation: None,
        offers: europe!(24.49),
    },
    ServerType {
        id: 96,
        name: "ccx13",
        description: "CCX13 Dedicated CPU",
        category: "general_purpose",
        cores: 2,
        memory: 8.0,
        disk: 80,
        cpu_type: "dedicated",
        architecture: Architecture::X86,
        deprecation: None,
        offers: everywhere!(12.49, 14.49, 23.49),
    },
    ServerType {
        id: 97,
        name: "ccx23",
        description: "CCX23 Dedicated CPU",
        category: "general_purpose",
        cores: 4,
        memory: 16.0,
        disk: 160,
        cpu_type: "dedicated",
        architecture: Architecture::X86,
        deprecation: None,
        offers: everywhere!(24.49, 28.49, 46.49),
    },
    ServerType {
        id: 98,
        name: "ccx33",
        description: "CCX33 Dedicated CPU",
        category: "general_purpose",
        cores: 8,
        memory: 32.0,
        disk: 240,
        cpu_type: "dedicated",
        architecture: Architecture::X86,
        deprecation: None,
        offers: everywhere!(48.49, 56.49, 92.49),
    },
    ServerType {
        id: 99,
        name: "ccx43",
        description: "CCX43 Dedicated CPU",
        category: "general_purpose",
        cores: 16,
        memory: 64.0,
        disk: 360,
        cpu_type: "dedicated",
        architecture: Architecture::X86,
        deprecation: None,
        offers: everywhere!(96.49, 112.49, 184.49),
    },
    ServerType {
        id: 100,
        name: "ccx53",
        description: "CCX53 Dedicated CPU",
        category: "general_purpose",
        cores: 32,
        memory: 128.0,
        disk: 600,
        cpu_type: "dedicated",
        architecture: Architecture::X86,
        deprecation: None,
        offers: everywhere!(192.49, 224.49, 368.49),
    },
    ServerType {
        id: 101,
        name: "ccx63",
        description: "CCX63 Dedicated CPU",
        category: "general_purpose",
        cores: 48,
        memory: 192.0,
        disk: 960,
        cpu_type: "dedicated",
        architecture: Architecture::X86,
        deprecation: None,
        offers: everywhere!(288.49, 336.49, 552.49),
    },
    ServerType {
        id: 104,
        name: "cx22",
        description: "CX22",
        category: "cost_optimized",
        cores: 2,
        memory: 4.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: Some(CX_GEN2),
        offers: europe!(3.79),
    },
    ServerType {
        id: 105,
        name: "cx32",
        description: "CX32",
        category: "cost_optimized",
        cores: 4,
        memory: 8.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: Some(CX_GEN2),
        offers: europe!(6.8),
    },
    ServerType {
        id: 106,
        name: "cx42",
        description: "CX42",
        category: "cost_optimized",
        cores: 8,
        memory: 16.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: Some(CX_GEN2),
        offers: europe!(16.4),
    },
    ServerType {
        id: 107,
        name: "cx52",
        description: "CX52",
        category: "cost_optimized",
        cores: 16,
        memory: 32.0,
        disk: 320,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: Some(CX_GEN2),
        offers: europe!(32.4),
    },
    ServerType {
        id: 108,
        name: "cpx12",
        description: "CPX12",
        category: "regular_purpose",
        cores: 1,
        memory: 2.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen2!(4.49, 7.99),
    },
    ServerType {
        id: 109,
        name: "cpx22",
        description: "CPX22",
        category: "regular_purpose",
        cores: 2,
        memory: 4.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen2!(5.99, 10.99),
    },
    ServerType {
        id: 110,
        name: "cpx32",
        description: "CPX32",
        category: "regular_purpose",
        cores: 4,
        memory: 8.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen2!(10.49, 19.99),
    },
    ServerType {
        id: 111,
        name: "cpx42",
        description: "CPX42",
        category: "regular_purpose",
        cores: 8,
        memory: 16.0,
        disk: 320,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen2!(19.49, 37.49),
    },
    ServerType {
        id: 112,
        name: "cpx52",
        description: "CPX52",
        category: "regular_purpose",
        cores: 12,
        memory: 24.0,
        disk: 480,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen2!(27.49, 52.99),
    },
    ServerType {
        id: 113,
        name: "cpx62",
        description: "CPX62",
        category: "regular_purpose",
        cores: 16,
        memory: 32.0,
        disk: 640,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: cpx_gen2!(38.49, 73.99),
    },
    ServerType {
        id: 114,
        name: "cx23",
        description: "CX23",
        category: "cost_optimized",
        cores: 2,
        memory: 4.0,
        disk: 40,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: europe!(2.99),
    },
    ServerType {
        id: 115,
        name: "cx33",
        description: "CX33",
        category: "cost_optimized",
        cores: 4,
        memory: 8.0,
        disk: 80,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: europe!(4.99),
    },
    ServerType {
        id: 116,
        name: "cx43",
        description: "CX43",
        category: "cost_optimized",
        cores: 8,
        memory: 16.0,
        disk: 160,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: europe!(8.99),
    },
    ServerType {
        id: 117,
        name: "cx53",
        description: "CX53",
        category: "cost_optimized",
        cores: 16,
        memory: 32.0,
        disk: 320,
        cpu_type: "shared",
        architecture: Architecture::X86,
        deprecation: None,
        offers: europe!(16.99),
    },
];

/// A server type by ID or name, retired ones included (a server keeps its
/// type; an order for a retired one is refused where it is placed).
pub fn server_type(id_or_name: &str) -> Option<&'static ServerType> {
    SERVER_TYPES
        .iter()
        .find(|t| t.name == id_or_name || t.id.to_string() == id_or_name)
}

/// The types `GET /server_types` lists, by ID: every one not retired.
pub fn listed_server_types() -> impl Iterator<Item = &'static ServerType> {
    SERVER_TYPES.iter().filter(|t| !t.is_retired())
}
