//! `serde_json::Value` documents to YAML text, laid out like Talos' own
//! output: block style, 4-space indents, `---` between documents.
//!
//! Safety over beauty: a string is written plain only when no YAML 1.1 or
//! 1.2 reader could resolve it to anything but that string; everything else
//! is double-quoted with escapes, or written as a literal block (`|`) when it
//! spans lines.

use serde_json::{Map, Value};

const INDENT: usize = 4;

/// The documents as one multi-document YAML text.
pub(crate) fn to_string(documents: &[Value]) -> String {
    let mut out = String::new();
    for (index, document) in documents.iter().enumerate() {
        if index > 0 {
            out.push_str("---\n");
        }
        match document {
            Value::Object(map) if !map.is_empty() => write_mapping(&mut out, map, 0, false),
            Value::Array(items) if !items.is_empty() => write_sequence(&mut out, items, 0),
            other => {
                write_inline(&mut out, other);
                out.push('\n');
            }
        }
    }
    out
}

/// Writes `key: value` lines at `indent`; with `continues_line` the first key
/// goes right after a `- ` already written.
fn write_mapping(out: &mut String, map: &Map<String, Value>, indent: usize, continues_line: bool) {
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 || !continues_line {
            push_indent(out, indent);
        }
        write_string_inline(out, key);
        out.push(':');
        write_nested(out, value, indent + INDENT);
    }
}

fn write_sequence(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        push_indent(out, indent);
        out.push('-');
        match item {
            Value::Object(map) if !map.is_empty() => {
                out.push(' ');
                write_mapping(out, map, indent + 2, true);
            }
            _ => write_nested(out, item, indent + 2),
        }
    }
}

/// The value after `key:` or `-`: nested blocks on the next lines at
/// `indent`, anything else on the same line.
fn write_nested(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_mapping(out, map, indent, false);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_sequence(out, items, indent);
        }
        Value::String(text) if fits_literal_block(text) => {
            out.push(' ');
            write_literal_block(out, text, indent);
        }
        _ => {
            out.push(' ');
            write_inline(out, value);
            out.push('\n');
        }
    }
}

/// Scalars and empty collections, on one line.
fn write_inline(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => write_string_inline(out, text),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

fn write_string_inline(out: &mut String, text: &str) {
    if is_plain_safe(text) {
        out.push_str(text);
    } else {
        write_double_quoted(out, text);
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// Whether `text` reads back as exactly this string when written plain.
///
/// Deliberately narrow: letters, digits and `-_./:=+@~,` only (so no spaces,
/// no `: `, no ` #`), starting with a letter, digit or `/`, not ending in
/// `:`, and not a word or number that some YAML version resolves to another
/// type (`yes`, `on`, `1.5`, `0x1f`, `1:20`, `2024-01-01`, …).
fn is_plain_safe(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    (first.is_ascii_alphanumeric() || first == '/')
        && !text.ends_with(':')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+@~,".contains(c))
        && !is_reserved_word(text)
        && !looks_numeric(text)
}

/// Null and boolean spellings of YAML 1.1 and 1.2.
fn is_reserved_word(text: &str) -> bool {
    const WORDS: &[&str] = &["null", "true", "false", "yes", "no", "on", "off", "y", "n"];
    WORDS.iter().any(|word| word.eq_ignore_ascii_case(text))
}

/// Could be a number, a base-60 number or a date in some YAML version: it
/// starts with a digit and uses only number-ish characters. Dotted quads
/// (`10.0.0.1`) are not numbers in any version and stay plain.
fn looks_numeric(text: &str) -> bool {
    let starts_numeric = text.starts_with(|c: char| c.is_ascii_digit());
    let numberish = text
        .chars()
        .all(|c| c.is_ascii_hexdigit() || "xXoO_.:+-".contains(c));
    let dotted_quad =
        text.matches('.').count() >= 2 && text.chars().all(|c| c.is_ascii_digit() || c == '.');
    starts_numeric && numberish && !dotted_quad
}

/// A double-quoted scalar; escapes everything YAML does not allow raw.
fn write_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Characters YAML wants escaped (controls, NEL, line/paragraph separators,
/// byte-order mark), or that a YAML 1.1 reader would take as line breaks.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// Multi-line text that a literal block keeps byte for byte: no escapes
/// needed, and a first line that does not start with a space (the reader
/// takes the block's indentation from it).
fn fits_literal_block(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\n'])
        && !text
            .chars()
            .any(|c| c != '\n' && (needs_escape(c) || c == '\t'))
}

/// `|` (one final newline), `|-` (none) or `|+` (several), then the lines.
fn write_literal_block(out: &mut String, text: &str, indent: usize) {
    let (header, body) = match text.strip_suffix('\n') {
        Some(rest) if rest.ends_with('\n') => ("|+", rest),
        Some(rest) => ("|", rest),
        None => ("|-", text),
    };
    out.push_str(header);
    out.push('\n');
    for line in body.split('\n') {
        if !line.is_empty() {
            push_indent(out, indent);
            out.push_str(line);
        }
        out.push('\n');
    }
}
