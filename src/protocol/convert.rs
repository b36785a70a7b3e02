//! Conversions between hct's Terraform model (`crate::tf`) and protobuf.

use super::pb::tfplugin6 as pb;
use crate::tf::diagnostics::PathStep;
use crate::tf::schema::{AttributeType, Mode};
use crate::tf::{
    AttrPath, Attribute, Block, Diagnostic, Diagnostics, Nesting, Schema, Severity, Type, Value,
    json, msgpack,
};

pub fn diagnostics(diagnostics: Diagnostics) -> Vec<pb::Diagnostic> {
    diagnostics.into_iter().map(diagnostic).collect()
}

pub fn diagnostic(diagnostic: Diagnostic) -> pb::Diagnostic {
    pb::Diagnostic {
        severity: match diagnostic.severity {
            Severity::Error => pb::diagnostic::Severity::Error,
            Severity::Warning => pb::diagnostic::Severity::Warning,
        } as i32,
        summary: diagnostic.summary,
        detail: diagnostic.detail,
        attribute: diagnostic
            .path
            .filter(|p| !p.is_root())
            .map(|p| attribute_path(&p)),
    }
}

pub fn attribute_path(path: &AttrPath) -> pb::AttributePath {
    use pb::attribute_path::step::Selector;
    pb::AttributePath {
        steps: path
            .0
            .iter()
            .map(|step| pb::attribute_path::Step {
                selector: Some(match step {
                    PathStep::Attribute(name) => Selector::AttributeName(name.clone()),
                    PathStep::Key(key) => Selector::ElementKeyString(key.clone()),
                    PathStep::Index(index) => Selector::ElementKeyInt(*index),
                }),
            })
            .collect(),
    }
}

/// Decodes a request's value of type `ty`; an absent value is null.
pub fn decode(value: Option<&pb::DynamicValue>, ty: &Type) -> Result<Value, Diagnostic> {
    let Some(value) = value else {
        return Ok(Value::Null);
    };
    if !value.msgpack.is_empty() {
        msgpack::decode(&value.msgpack, ty).map_err(|e| malformed(&e.to_string()))
    } else if !value.json.is_empty() {
        let parsed: serde_json::Value =
            serde_json::from_slice(&value.json).map_err(|e| malformed(&e.to_string()))?;
        json::from_json(&parsed, ty).map_err(|e| malformed(&e))
    } else {
        Ok(Value::Null)
    }
}

/// Encodes a response value, completing objects with null attributes.
pub fn encode(value: Value, ty: &Type) -> Result<pb::DynamicValue, Diagnostic> {
    let value = value.conform(ty);
    let bytes = msgpack::encode(&value, ty).map_err(|e| {
        Diagnostic::error(
            "hct produced a value that does not fit its schema",
            format!("This is a bug in hct; please report it. {e}"),
        )
    })?;
    Ok(pb::DynamicValue {
        msgpack: bytes,
        json: Vec::new(),
    })
}

fn malformed(why: &str) -> Diagnostic {
    Diagnostic::error(
        "Terraform sent a value hct cannot read",
        format!(
            "The value does not match hct's schema ({why}). Is this Terraform release supported (1.5 or newer)?"
        ),
    )
}

pub fn schema(schema: &Schema) -> pb::Schema {
    pb::Schema {
        version: schema.version,
        block: Some(block(&schema.block, schema.version)),
    }
}

fn block(block: &Block, version: i64) -> pb::schema::Block {
    pb::schema::Block {
        version,
        attributes: block.attributes.iter().map(attribute).collect(),
        block_types: block
            .blocks
            .iter()
            .map(|nested| pb::schema::NestedBlock {
                type_name: nested.name.clone(),
                block: Some(self::block(&nested.block, 0)),
                nesting: match nested.nesting {
                    Nesting::Single => pb::schema::nested_block::NestingMode::Single,
                    Nesting::List => pb::schema::nested_block::NestingMode::List,
                    Nesting::Set => pb::schema::nested_block::NestingMode::Set,
                    Nesting::Map => pb::schema::nested_block::NestingMode::Map,
                } as i32,
                min_items: 0,
                max_items: nested.max_items,
            })
            .collect(),
        description: block.description.clone(),
        description_kind: pb::StringKind::Markdown as i32,
        deprecated: false,
    }
}

fn attribute(attribute: &Attribute) -> pb::schema::Attribute {
    let (ty, nested_type) = match &attribute.ty {
        AttributeType::Plain(ty) => (ty.to_json().to_string().into_bytes(), None),
        AttributeType::Nested(nesting, attributes) => (
            Vec::new(),
            Some(pb::schema::Object {
                attributes: attributes.iter().map(self::attribute).collect(),
                nesting: match nesting {
                    Nesting::Single => pb::schema::object::NestingMode::Single,
                    Nesting::List => pb::schema::object::NestingMode::List,
                    Nesting::Set => pb::schema::object::NestingMode::Set,
                    Nesting::Map => pb::schema::object::NestingMode::Map,
                } as i32,
            }),
        ),
    };
    pb::schema::Attribute {
        name: attribute.name.clone(),
        r#type: ty,
        nested_type,
        description: attribute.description.clone(),
        required: attribute.mode == Mode::Required,
        optional: matches!(attribute.mode, Mode::Optional | Mode::OptionalComputed),
        computed: attribute.is_computed(),
        sensitive: attribute.sensitive,
        description_kind: pb::StringKind::Markdown as i32,
        deprecated: attribute.deprecated,
        write_only: attribute.write_only,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_keep_their_attribute_path() {
        let d = diagnostic(
            Diagnostic::error("bad", "fix it").at(AttrPath::attr("worker_pools")
                .key("general")
                .attr_of("cidr")),
        );
        assert_eq!(d.severity, pb::diagnostic::Severity::Error as i32);
        let steps: Vec<_> = d
            .attribute
            .unwrap()
            .steps
            .into_iter()
            .map(|s| s.selector.unwrap())
            .collect();
        use pb::attribute_path::step::Selector;
        assert_eq!(
            steps,
            vec![
                Selector::AttributeName("worker_pools".into()),
                Selector::ElementKeyString("general".into()),
                Selector::AttributeName("cidr".into()),
            ]
        );
    }

    #[test]
    fn nested_attributes_have_no_plain_type() {
        let s = Schema::new(2, "x").attribute(Attribute::nested(
            "control_plane",
            Mode::Required,
            Nesting::Single,
            vec![Attribute::required("nodes", Type::Number)],
        ));
        let pb = schema(&s);
        let attribute = &pb.block.as_ref().unwrap().attributes[0];
        assert!(attribute.r#type.is_empty());
        assert_eq!(
            attribute.nested_type.as_ref().unwrap().attributes[0].r#type,
            br#""number""#
        );
        assert_eq!(pb.version, 2);
    }

    #[test]
    fn decodes_json_values_too() {
        let value = pb::DynamicValue {
            msgpack: vec![],
            json: br#""hi""#.to_vec(),
        };
        assert_eq!(
            decode(Some(&value), &Type::String).unwrap(),
            Value::from("hi")
        );
        assert_eq!(decode(None, &Type::String).unwrap(), Value::Null);
    }
}
