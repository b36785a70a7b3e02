//! The public ISO images a server can boot from (`GET /isos`, `attach_iso`),
//! with the IDs Hetzner's own tests use for its Windows Server 2022 ISOs.
//! Their names here are hct-sim's own; an attached ISO is only shown on the
//! server (the emulated machine still boots its disk).

use serde_json::{Value, json};

use super::Architecture;

#[derive(Debug)]
pub struct Iso {
    pub id: i64,
    pub name: &'static str,
    pub description: &'static str,
    /// `None`: boots on any architecture (the API's wildcard).
    pub architecture: Option<Architecture>,
}

pub const ISOS: &[Iso] = &[
    Iso {
        id: 8637,
        name: "Windows-Server-2022-English.iso",
        description: "Windows Server 2022 English",
        architecture: Some(Architecture::X86),
    },
    Iso {
        id: 8638,
        name: "Windows-Server-2022-German.iso",
        description: "Windows Server 2022 German",
        architecture: Some(Architecture::X86),
    },
];

impl Iso {
    pub fn to_api(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "type": "public",
            "architecture": self.architecture.map(Architecture::as_str),
            "deprecation": null,
        })
    }
}

/// An ISO by ID or name, as `attach_iso` takes either.
pub fn iso(id_or_name: &str) -> Option<&'static Iso> {
    ISOS.iter()
        .find(|i| i.name == id_or_name || i.id.to_string() == id_or_name)
}
