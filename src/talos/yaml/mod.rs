//! YAML in and out of `serde_json::Value` documents.
//!
//! Parsing uses `saphyr` (YAML 1.2, maintained, pure Rust, with a guard
//! against alias bombs); emitting is our own small writer (`emit`) so the
//! output looks like what Talos writes (4-space indents) and every string is
//! quoted whenever a YAML 1.1 or 1.2 reader could take it for something else.

mod emit;
mod parse;

pub(crate) use emit::to_string;
pub use parse::YamlError;
pub(crate) use parse::parse_documents;

#[cfg(test)]
mod tests;
