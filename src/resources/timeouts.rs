//! The `timeouts` block of the cluster and pool resources: Go durations per
//! operation, with hct's defaults.

use std::time::Duration;

use crate::duration;
use crate::tf::{
    AttrPath, Attribute, Block, Diagnostic, Diagnostics, NestedBlock, Nesting, Type, Value,
};

/// An operation with a time limit of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    const ALL: [Operation; 3] = [Operation::Create, Operation::Update, Operation::Delete];

    fn name(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Delete => "delete",
        }
    }

    /// hct's limit when `timeouts` does not set one.
    pub fn default_limit(self) -> Duration {
        match self {
            Operation::Create | Operation::Update => Duration::from_secs(30 * 60),
            Operation::Delete => Duration::from_secs(15 * 60),
        }
    }
}

fn describe(limit: Duration) -> String {
    format!("{}m", limit.as_secs() / 60)
}

/// The `timeouts` block.
pub fn block() -> NestedBlock {
    let attribute = |op: Operation| {
        let name = op.name();
        Attribute::optional(name, Type::String).description(format!(
            "How long {name} may take, e.g. `45m` (default `{}`). hct stops at the \
             deadline with an error naming the node it waited for.",
            describe(op.default_limit())
        ))
    };
    NestedBlock::new(
        "timeouts",
        Nesting::Single,
        Block {
            description: "Time limits of the operations.".into(),
            attributes: Operation::ALL.into_iter().map(attribute).collect(),
            blocks: vec![],
        },
    )
}

/// The limit for `operation` in `value` (a config, or the prior state on
/// delete).
pub fn limit(value: &Value, operation: Operation) -> Result<Duration, Diagnostic> {
    let name = operation.name();
    match value.get("timeouts").get(name).as_str() {
        None => Ok(operation.default_limit()),
        Some(text) => duration::parse(text).map_err(|why| {
            Diagnostic::error(
                "Invalid timeout",
                format!("{text:?}: {why}. Write e.g. \"30m\" or \"1h30m\"."),
            )
            .at(AttrPath::attr("timeouts").attr_of(name))
        }),
    }
}

pub fn validate(config: &Value) -> Diagnostics {
    Operation::ALL
        .into_iter()
        .filter_map(|op| limit(config, op).err())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_with_defaults() {
        let config = Value::object([("timeouts", Value::object([("create", Value::from("45m"))]))]);
        assert_eq!(
            limit(&config, Operation::Create).unwrap(),
            Duration::from_secs(2700)
        );
        assert_eq!(
            limit(&config, Operation::Delete).unwrap(),
            Duration::from_secs(15 * 60)
        );
        let bad = Value::object([("timeouts", Value::object([("create", Value::from("soon"))]))]);
        assert!(limit(&bad, Operation::Create).is_err());
        assert_eq!(validate(&bad).iter().count(), 1);
    }
}
