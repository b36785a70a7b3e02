//! Registry documentation (`docs/`, in the Terraform registry layout),
//! generated from the schemas' descriptions and the examples under
//! `examples/`, so the docs cannot drift from the code.
//!
//! `terraform-provider-hct docs` writes them; `docs --check` fails when the
//! files on disk differ (a test runs that check).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::provider::Provider;
use crate::tf::schema::{AttributeType, Block, Mode, Nesting};
use crate::tf::{Attribute, Schema};

/// Renders every page: path relative to the docs directory → content.
pub fn render(provider: &Provider, examples: &Path) -> std::io::Result<BTreeMap<PathBuf, String>> {
    let mut pages = BTreeMap::new();
    pages.insert(
        PathBuf::from("index.md"),
        page(
            "hct Provider",
            "hct",
            &provider.schema(),
            &read_example(&examples.join("provider/provider.tf"))?,
            "Schema",
        ),
    );
    for data_source in provider.data_sources() {
        let name = data_source.type_name();
        let short = name.trim_start_matches("hct_");
        let example = read_example(&examples.join(format!("data-sources/{name}/data-source.tf")))?;
        pages.insert(
            PathBuf::from(format!("data-sources/{short}.md")),
            page(
                &format!("{name} Data Source - hct"),
                name,
                &data_source.schema(),
                &example,
                "Schema",
            ),
        );
    }
    for resource in provider.resources() {
        let name = resource.type_name();
        let short = name.trim_start_matches("hct_");
        let example = read_example(&examples.join(format!("resources/{name}/resource.tf")))?;
        pages.insert(
            PathBuf::from(format!("resources/{short}.md")),
            page(
                &format!("{name} Resource - hct"),
                name,
                &resource.schema(),
                &example,
                "Schema",
            ),
        );
    }
    for resource in provider.ephemeral_resources() {
        let name = resource.type_name();
        let short = name.trim_start_matches("hct_");
        let example = read_example(
            &examples.join(format!("ephemeral-resources/{name}/ephemeral-resource.tf")),
        )?;
        pages.insert(
            PathBuf::from(format!("ephemeral-resources/{short}.md")),
            page(
                &format!("{name} Ephemeral Resource - hct"),
                name,
                &resource.schema(),
                &example,
                "Schema",
            ),
        );
    }
    for action in provider.actions() {
        let name = action.type_name();
        let short = name.trim_start_matches("hct_");
        let example = read_example(&examples.join(format!("actions/{name}/action.tf")))?;
        pages.insert(
            PathBuf::from(format!("actions/{short}.md")),
            page(
                &format!("{name} Action - hct"),
                name,
                &action.schema(),
                &example,
                "Schema",
            ),
        );
    }
    Ok(pages)
}

fn read_example(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn page(
    title: &str,
    heading: &str,
    schema: &Schema,
    example: &str,
    schema_heading: &str,
) -> String {
    let description = &schema.block.description;
    let mut out = String::new();
    let summary = description
        .split(". ")
        .next()
        .unwrap_or(description)
        .trim_end_matches('.');
    let _ = writeln!(
        out,
        "---\npage_title: \"{title}\"\ndescription: |-\n  {summary}.\n---\n"
    );
    let _ = writeln!(out, "# {heading}\n\n{description}\n");
    let _ = writeln!(
        out,
        "## Example Usage\n\n```terraform\n{}\n```\n",
        example.trim_end()
    );
    let _ = writeln!(out, "## {schema_heading}\n");
    let mut nested = Vec::new();
    render_block(&mut out, &schema.block, "", &mut nested);
    while !nested.is_empty() {
        for (anchor, title, block) in std::mem::take(&mut nested) {
            let _ = writeln!(
                out,
                "<a id=\"{anchor}\"></a>\n### Nested Schema for `{title}`\n"
            );
            render_block(&mut out, &block, &title, &mut nested);
        }
    }
    out.trim_end().to_string() + "\n"
}

/// Lists a block's attributes by role; nested objects are queued for their
/// own section.
fn render_block(
    out: &mut String,
    block: &Block,
    prefix: &str,
    nested: &mut Vec<(String, String, Block)>,
) {
    let roles = [
        ("Required", &[Mode::Required][..]),
        ("Optional", &[Mode::Optional, Mode::OptionalComputed][..]),
        ("Read-Only", &[Mode::Computed][..]),
    ];
    for (role, modes) in roles {
        let attributes: Vec<&Attribute> = block
            .attributes
            .iter()
            .filter(|a| modes.contains(&a.mode))
            .collect();
        let blocks: Vec<_> = if role == "Optional" {
            block.blocks.iter().collect()
        } else {
            vec![]
        };
        if attributes.is_empty() && blocks.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {role}\n");
        for attribute in attributes {
            let path = if prefix.is_empty() {
                attribute.name.clone()
            } else {
                format!("{prefix}.{}", attribute.name)
            };
            let anchor = format!("nestedatt--{}", path.replace('.', "--"));
            let (kind, see) = match &attribute.ty {
                AttributeType::Plain(ty) => (type_name(&ty.to_json()), String::new()),
                AttributeType::Nested(nesting, attributes) => {
                    nested.push((
                        anchor.clone(),
                        path.clone(),
                        Block {
                            attributes: attributes.clone(),
                            ..Block::default()
                        },
                    ));
                    (
                        format!("{} of objects", nesting_name(*nesting))
                            .replace("Single of objects", "Object"),
                        format!(" (see [below for nested schema](#{anchor}))"),
                    )
                }
            };
            let flags = match (attribute.sensitive, attribute.write_only) {
                (true, true) => ", Sensitive, Write-only",
                (true, false) => ", Sensitive",
                (false, true) => ", Write-only",
                (false, false) => "",
            };
            let deprecated = if attribute.deprecated {
                ", Deprecated"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "- `{}` ({kind}{flags}{deprecated}) {}{see}",
                attribute.name, attribute.description
            );
        }
        for block in blocks {
            let path = if prefix.is_empty() {
                block.name.clone()
            } else {
                format!("{prefix}.{}", block.name)
            };
            let anchor = format!("nestedblock--{}", path.replace('.', "--"));
            nested.push((anchor.clone(), path, block.block.clone()));
            let _ = writeln!(
                out,
                "- `{}` (Block {}) {} (see [below for nested schema](#{anchor}))",
                block.name,
                nesting_name(block.nesting),
                block.block.description
            );
        }
        out.push('\n');
    }
}

fn nesting_name(nesting: Nesting) -> &'static str {
    match nesting {
        Nesting::Single => "Single",
        Nesting::List => "List",
        Nesting::Set => "Set",
        Nesting::Map => "Map",
    }
}

fn type_name(json: &serde_json::Value) -> String {
    match json {
        serde_json::Value::String(s) => capitalize(s),
        serde_json::Value::Array(parts) => {
            match (parts.first().and_then(|p| p.as_str()), parts.get(1)) {
                (Some(kind @ ("list" | "set" | "map")), Some(element)) => {
                    format!("{} of {}", capitalize(kind), type_name(element))
                }
                (Some(kind), _) => capitalize(kind),
                _ => "Unknown".into(),
            }
        }
        _ => "Unknown".into(),
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

/// Writes the pages under `docs_dir`, or with `check` compares them and
/// returns the stale paths.
pub fn write_or_check(
    provider: &Provider,
    repo_root: &Path,
    check: bool,
) -> std::io::Result<Vec<PathBuf>> {
    let docs_dir = repo_root.join("docs");
    let pages = render(provider, &repo_root.join("examples"))?;
    let mut stale = Vec::new();
    for (relative, content) in pages {
        let path = docs_dir.join(&relative);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(content.as_str()) {
            continue;
        }
        if check {
            stale.push(relative);
        } else {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, content)?;
            stale.push(relative);
        }
    }
    Ok(stale)
}
