//! The registry docs in `docs/` are generated from the schemas and examples;
//! this fails when someone changed one without regenerating them.

use std::path::Path;

#[test]
fn docs_match_the_schemas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let stale = hct::docs::write_or_check(&hct::resources::provider(), root, true).unwrap();
    assert!(
        stale.is_empty(),
        "docs/ is stale for {stale:?}: run `cargo run -- docs` and commit the result"
    );
}

#[test]
fn every_attribute_is_documented() {
    let provider = hct::resources::provider();
    let mut schemas = vec![("provider".to_string(), provider.schema())];
    schemas.extend(
        provider
            .data_sources()
            .map(|d| (d.type_name().to_string(), d.schema())),
    );
    schemas.extend(
        provider
            .ephemeral_resources()
            .map(|r| (r.type_name().to_string(), r.schema())),
    );
    for (name, schema) in schemas {
        assert!(
            !schema.block.description.is_empty(),
            "{name} has no description"
        );
        for attribute in &schema.block.attributes {
            assert!(
                !attribute.description.is_empty(),
                "{name}.{} has no description",
                attribute.name
            );
        }
    }
}
