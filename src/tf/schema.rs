//! Schemas of the provider, its resources and data sources, written so a
//! resource's schema reads like its documentation.

use std::collections::BTreeMap;

use super::types::Type;

#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Bumped when stored state needs upgrading.
    pub version: i64,
    pub block: Block,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    /// Markdown.
    pub description: String,
    pub attributes: Vec<Attribute>,
    pub blocks: Vec<NestedBlock>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Required,
    Optional,
    /// Set by the provider only.
    Computed,
    /// Set by the user or, when left out, by the provider.
    OptionalComputed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    Single,
    List,
    Set,
    Map,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttributeType {
    Plain(Type),
    /// Nested attributes (e.g. `control_plane = { cidr = ..., nodes = ... }`).
    Nested(Nesting, Vec<Attribute>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub name: String,
    pub ty: AttributeType,
    pub mode: Mode,
    /// Markdown.
    pub description: String,
    pub sensitive: bool,
    pub deprecated: bool,
    /// Write-only (Terraform and OpenTofu ≥ 1.11): the value is in the
    /// configuration of a plan and apply only, never in plan or state.
    pub write_only: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NestedBlock {
    pub name: String,
    pub nesting: Nesting,
    pub block: Block,
    pub max_items: i64,
}

impl Schema {
    pub fn new(version: i64, description: impl Into<String>) -> Self {
        Self {
            version,
            block: Block {
                description: description.into(),
                ..Block::default()
            },
        }
    }

    pub fn attribute(mut self, attribute: Attribute) -> Self {
        self.block.attributes.push(attribute);
        self
    }

    pub fn block(mut self, block: NestedBlock) -> Self {
        self.block.blocks.push(block);
        self
    }

    /// The type of a whole object of this schema (config, plan or state).
    pub fn value_type(&self) -> Type {
        self.block.value_type()
    }

    pub fn find(&self, name: &str) -> Option<&Attribute> {
        self.block.attributes.iter().find(|a| a.name == name)
    }

    /// Where the write-only attributes are: each as its attribute names,
    /// outer first, through single nested attributes and blocks.
    ///
    /// # Panics
    /// On a write-only attribute inside a list, set or map: hct has no
    /// value path into those (a schema test runs this on every schema).
    pub fn write_only_paths(&self) -> Vec<Vec<String>> {
        fn walk(block: &Block, at: &[String], found: &mut Vec<Vec<String>>, single: bool) {
            let inner = |name: &str| [at, &[name.to_string()]].concat();
            for attribute in &block.attributes {
                let path = inner(&attribute.name);
                if attribute.write_only {
                    assert!(single, "write-only {} in a collection", path.join("."));
                    found.push(path);
                } else if let AttributeType::Nested(nesting, attributes) = &attribute.ty {
                    let nested = Block {
                        attributes: attributes.clone(),
                        ..Block::default()
                    };
                    walk(&nested, &path, found, single && *nesting == Nesting::Single);
                }
            }
            for nested in &block.blocks {
                let single = single && nested.nesting == Nesting::Single;
                walk(&nested.block, &inner(&nested.name), found, single);
            }
        }
        let mut found = Vec::new();
        walk(&self.block, &[], &mut found, true);
        found
    }
}

impl Block {
    pub fn value_type(&self) -> Type {
        let mut attributes: BTreeMap<String, Type> = self
            .attributes
            .iter()
            .map(|a| (a.name.clone(), a.value_type()))
            .collect();
        for nested in &self.blocks {
            attributes.insert(
                nested.name.clone(),
                nest(nested.nesting, nested.block.value_type()),
            );
        }
        Type::Object(attributes)
    }
}

fn nest(nesting: Nesting, object: Type) -> Type {
    match nesting {
        Nesting::Single => object,
        Nesting::List => Type::list(object),
        Nesting::Set => Type::set(object),
        Nesting::Map => Type::map(object),
    }
}

impl Attribute {
    fn new(name: &str, ty: AttributeType, mode: Mode) -> Self {
        Self {
            name: name.to_string(),
            ty,
            mode,
            description: String::new(),
            sensitive: false,
            deprecated: false,
            write_only: false,
        }
    }

    pub fn required(name: &str, ty: Type) -> Self {
        Self::new(name, AttributeType::Plain(ty), Mode::Required)
    }

    pub fn optional(name: &str, ty: Type) -> Self {
        Self::new(name, AttributeType::Plain(ty), Mode::Optional)
    }

    pub fn computed(name: &str, ty: Type) -> Self {
        Self::new(name, AttributeType::Plain(ty), Mode::Computed)
    }

    pub fn optional_computed(name: &str, ty: Type) -> Self {
        Self::new(name, AttributeType::Plain(ty), Mode::OptionalComputed)
    }

    /// An attribute holding nested attributes; `mode` applies to the whole.
    pub fn nested(name: &str, mode: Mode, nesting: Nesting, attributes: Vec<Attribute>) -> Self {
        Self::new(name, AttributeType::Nested(nesting, attributes), mode)
    }

    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }

    pub fn deprecated(mut self) -> Self {
        self.deprecated = true;
        self
    }

    pub fn write_only(mut self) -> Self {
        self.write_only = true;
        self
    }

    pub fn value_type(&self) -> Type {
        match &self.ty {
            AttributeType::Plain(ty) => ty.clone(),
            AttributeType::Nested(nesting, attributes) => nest(
                *nesting,
                Type::Object(
                    attributes
                        .iter()
                        .map(|a| (a.name.clone(), a.value_type()))
                        .collect(),
                ),
            ),
        }
    }

    pub fn is_computed(&self) -> bool {
        matches!(self.mode, Mode::Computed | Mode::OptionalComputed)
    }
}

impl NestedBlock {
    pub fn new(name: &str, nesting: Nesting, block: Block) -> Self {
        Self {
            name: name.to_string(),
            nesting,
            block,
            max_items: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_type_includes_nested_attributes_and_blocks() {
        let schema = Schema::new(0, "test")
            .attribute(Attribute::required("name", Type::String))
            .attribute(Attribute::nested(
                "pools",
                Mode::Optional,
                Nesting::Map,
                vec![Attribute::required("nodes", Type::Number)],
            ))
            .block(NestedBlock::new(
                "timeouts",
                Nesting::Single,
                Block {
                    attributes: vec![Attribute::optional("create", Type::String)],
                    ..Block::default()
                },
            ));
        assert_eq!(
            schema.value_type().to_json().to_string(),
            r#"["object",{"name":"string","pools":["map",["object",{"nodes":"number"}]],"timeouts":["object",{"create":"string"}]}]"#
        );
    }
}
