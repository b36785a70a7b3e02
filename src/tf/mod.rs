//! Terraform's data model, independent of the wire: values and their types,
//! schemas, diagnostics, and the msgpack/JSON encodings of values.

pub mod diagnostics;
pub mod json;
pub mod msgpack;
pub mod schema;
pub mod types;
pub mod value;

pub use diagnostics::{AttrPath, Diagnostic, Diagnostics, Severity};
pub use schema::{Attribute, Block, Mode, NestedBlock, Nesting, Schema};
pub use types::Type;
pub use value::Value;
