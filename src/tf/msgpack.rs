//! The msgpack form of `DynamicValue`, driven by the schema's type.
//!
//! Terraform's encoding: null is msgpack nil; a value not yet known is the
//! extension type 0 (type 12 when Terraform attaches refinements, which hct
//! treats as plainly unknown); objects and maps are maps keyed by name; lists,
//! sets and tuples are arrays; numbers are ints, floats, or decimal strings
//! when too large; a value of dynamic type is a pair [type JSON, value].

use std::collections::BTreeMap;

use super::types::Type;
use super::value::{Number, Value};

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("msgpack value at byte {offset}: {message}")]
pub struct CodecError {
    pub offset: usize,
    pub message: String,
}

const EXT_UNKNOWN: i8 = 0;
const EXT_REFINED_UNKNOWN: i8 = 12;

/// Decodes a msgpack `DynamicValue` of type `ty`.
pub fn decode(bytes: &[u8], ty: &Type) -> Result<Value, CodecError> {
    let mut reader = Reader { bytes, pos: 0 };
    let value = reader.value(ty)?;
    if reader.pos != bytes.len() {
        return Err(reader.error("trailing bytes after the value"));
    }
    Ok(value)
}

/// Encodes `value` as type `ty`. Objects are written with every attribute of
/// their type, as Terraform requires.
pub fn encode(value: &Value, ty: &Type) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value, ty)?;
    Ok(out)
}

/// A msgpack item's head: what kind of item and, for containers and
/// strings, its length.
enum Head {
    Nil,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(usize),
    Bin(usize),
    Array(usize),
    Map(usize),
    Ext(i8, usize),
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, message: impl Into<String>) -> CodecError {
        CodecError {
            offset: self.pos,
            message: message.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| self.error("unexpected end of input"))?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn uint(&mut self, width: usize) -> Result<u64, CodecError> {
        Ok(self
            .take(width)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn int(&mut self, width: usize) -> Result<i64, CodecError> {
        let raw = self.uint(width)?;
        let shift = 64 - 8 * width as u32;
        Ok(((raw << shift) as i64) >> shift)
    }

    fn len(&mut self, width: usize) -> Result<usize, CodecError> {
        usize::try_from(self.uint(width)?).map_err(|_| self.error("length too large"))
    }

    fn head(&mut self) -> Result<Head, CodecError> {
        let marker = self.take(1)?[0];
        Ok(match marker {
            0x00..=0x7f => Head::Int(i64::from(marker)),
            0x80..=0x8f => Head::Map(usize::from(marker & 0x0f)),
            0x90..=0x9f => Head::Array(usize::from(marker & 0x0f)),
            0xa0..=0xbf => Head::Str(usize::from(marker & 0x1f)),
            0xc0 => Head::Nil,
            0xc2 => Head::Bool(false),
            0xc3 => Head::Bool(true),
            0xc4 => Head::Bin(self.len(1)?),
            0xc5 => Head::Bin(self.len(2)?),
            0xc6 => Head::Bin(self.len(4)?),
            0xc7..=0xc9 => {
                let len = self.len(1 << (marker - 0xc7))?;
                Head::Ext(self.take(1)?[0] as i8, len)
            }
            0xca => Head::Float(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Head::Float(f64::from_bits(self.uint(8)?)),
            0xcc..=0xcf => Head::Uint(self.uint(1 << (marker - 0xcc))?),
            0xd0..=0xd3 => Head::Int(self.int(1 << (marker - 0xd0))?),
            0xd4..=0xd8 => {
                let kind = self.take(1)?[0] as i8;
                Head::Ext(kind, 1 << (marker - 0xd4))
            }
            0xd9 => Head::Str(self.len(1)?),
            0xda => Head::Str(self.len(2)?),
            0xdb => Head::Str(self.len(4)?),
            0xdc => Head::Array(self.len(2)?),
            0xdd => Head::Array(self.len(4)?),
            0xde => Head::Map(self.len(2)?),
            0xdf => Head::Map(self.len(4)?),
            0xe0..=0xff => Head::Int(i64::from(marker as i8)),
            0xc1 => return Err(self.error("reserved msgpack marker 0xc1")),
        })
    }

    fn text(&mut self, len: usize) -> Result<String, CodecError> {
        let start = self.pos;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| CodecError {
            offset: start,
            message: "string is not UTF-8".into(),
        })
    }

    fn value(&mut self, ty: &Type) -> Result<Value, CodecError> {
        let head = self.head()?;
        match head {
            Head::Nil => return Ok(Value::Null),
            Head::Ext(kind, len) if kind == EXT_UNKNOWN || kind == EXT_REFINED_UNKNOWN => {
                self.take(len)?;
                return Ok(Value::Unknown);
            }
            _ => {}
        }
        match ty {
            Type::Dynamic => self.dynamic(head),
            Type::Bool => match head {
                Head::Bool(b) => Ok(Value::Bool(b)),
                _ => Err(self.error("expected a bool")),
            },
            Type::Number => self.number(head),
            Type::String => match head {
                Head::Str(len) => Ok(Value::String(self.text(len)?)),
                _ => Err(self.error("expected a string")),
            },
            Type::List(element) | Type::Set(element) => match head {
                Head::Array(len) => {
                    let mut items = Vec::with_capacity(len.min(1024));
                    for _ in 0..len {
                        items.push(self.value(element)?);
                    }
                    Ok(Value::List(items))
                }
                _ => Err(self.error("expected an array")),
            },
            Type::Tuple(elements) => match head {
                Head::Array(len) if len == elements.len() => Ok(Value::List(
                    elements
                        .iter()
                        .map(|element| self.value(element))
                        .collect::<Result<_, _>>()?,
                )),
                _ => Err(self.error(format!("expected a tuple of {}", elements.len()))),
            },
            Type::Map(element) => match head {
                Head::Map(len) => self.entries(len, |_| Some(element)),
                _ => Err(self.error("expected a map")),
            },
            Type::Object(attributes) => match head {
                Head::Map(len) => self.entries(len, |name| attributes.get(name)),
                _ => Err(self.error("expected an object")),
            },
        }
    }

    fn entries<'t>(
        &mut self,
        len: usize,
        type_of: impl Fn(&str) -> Option<&'t Type>,
    ) -> Result<Value, CodecError> {
        let mut items = BTreeMap::new();
        for _ in 0..len {
            let key = match self.head()? {
                Head::Str(key_len) => self.text(key_len)?,
                _ => return Err(self.error("map keys must be strings")),
            };
            let ty =
                type_of(&key).ok_or_else(|| self.error(format!("unexpected attribute {key:?}")))?;
            let value = self.value(ty)?;
            items.insert(key, value);
        }
        Ok(Value::Map(items))
    }

    fn number(&mut self, head: Head) -> Result<Value, CodecError> {
        let number = match head {
            Head::Int(i) => Number::Int(i),
            Head::Uint(u) => i64::try_from(u).map_or(Number::Float(u as f64), Number::Int),
            Head::Float(f) => Number::Float(f),
            Head::Str(len) => {
                let text = self.text(len)?;
                match text.parse::<i64>() {
                    Ok(i) => Number::Int(i),
                    Err(_) => Number::Float(
                        text.parse::<f64>()
                            .map_err(|_| self.error(format!("not a number: {text:?}")))?,
                    ),
                }
            }
            _ => return Err(self.error("expected a number")),
        };
        Ok(Value::Number(number))
    }

    fn dynamic(&mut self, head: Head) -> Result<Value, CodecError> {
        let Head::Array(2) = head else {
            return Err(self.error("a dynamic value must be a [type, value] pair"));
        };
        let type_json = match self.head()? {
            Head::Str(len) | Head::Bin(len) => self.take(len)?,
            _ => return Err(self.error("a dynamic value's type must be JSON bytes")),
        };
        let ty = serde_json::from_slice(type_json)
            .map_err(|e| e.to_string())
            .and_then(|json| Type::from_json(&json))
            .map_err(|e| self.error(format!("bad dynamic type: {e}")))?;
        self.value(&ty)
    }
}

fn write_value(out: &mut Vec<u8>, value: &Value, ty: &Type) -> Result<(), CodecError> {
    let mismatch = |what: &str| CodecError {
        offset: out.len(),
        message: format!("cannot encode {what} as {}", ty.to_json()),
    };
    match (value, ty) {
        (Value::Null, _) => out.push(0xc0),
        (Value::Unknown, _) => out.extend_from_slice(&[0xd4, EXT_UNKNOWN as u8, 0]),
        (Value::Bool(b), Type::Bool) => out.push(if *b { 0xc3 } else { 0xc2 }),
        (Value::Number(n), Type::Number) => match n.as_i64() {
            Some(i) => write_int(out, i),
            None => {
                out.push(0xcb);
                out.extend_from_slice(&n.as_f64().to_bits().to_be_bytes());
            }
        },
        (Value::String(s), Type::String) => write_str(out, s),
        (Value::List(items), Type::List(element) | Type::Set(element)) => {
            write_len(out, items.len(), [0x90, 0xdc, 0xdd]);
            for item in items {
                write_value(out, item, element)?;
            }
        }
        (Value::List(items), Type::Tuple(elements)) if items.len() == elements.len() => {
            write_len(out, items.len(), [0x90, 0xdc, 0xdd]);
            for (item, element) in items.iter().zip(elements) {
                write_value(out, item, element)?;
            }
        }
        (Value::Map(items), Type::Map(element)) => {
            write_len(out, items.len(), [0x80, 0xde, 0xdf]);
            for (key, item) in items {
                write_str(out, key);
                write_value(out, item, element)?;
            }
        }
        (Value::Map(items), Type::Object(attributes)) => {
            if let Some(stranger) = items.keys().find(|k| !attributes.contains_key(*k)) {
                return Err(mismatch(&format!("an object with attribute {stranger:?}")));
            }
            write_len(out, attributes.len(), [0x80, 0xde, 0xdf]);
            for (name, attribute_type) in attributes {
                write_str(out, name);
                write_value(out, items.get(name).unwrap_or(&Value::Null), attribute_type)?;
            }
        }
        (Value::Bool(_), _) => return Err(mismatch("a bool")),
        (Value::Number(_), _) => return Err(mismatch("a number")),
        (Value::String(_), _) => return Err(mismatch("a string")),
        (Value::List(_), _) => return Err(mismatch("a list")),
        (Value::Map(_), _) => return Err(mismatch("a map")),
    }
    Ok(())
}

fn write_int(out: &mut Vec<u8>, i: i64) {
    match i {
        0..=0x7f => out.push(i as u8),
        -32..=-1 => out.push(i as i8 as u8),
        _ if i32::try_from(i).is_ok() => {
            out.push(0xd2);
            out.extend_from_slice(&(i as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&i.to_be_bytes());
        }
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s.as_bytes());
}

/// Writes a container length: the fix form for < 16 items, else 16 or 32 bits.
fn write_len(out: &mut Vec<u8>, len: usize, [fix, wide16, wide32]: [u8; 3]) {
    if len < 16 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object_type() -> Type {
        Type::Object(BTreeMap::from([
            ("name".to_string(), Type::String),
            ("nodes".to_string(), Type::Number),
            ("enabled".to_string(), Type::Bool),
            ("tags".to_string(), Type::set(Type::String)),
            (
                "pools".to_string(),
                Type::map(Type::Object(BTreeMap::from([
                    ("cidr".to_string(), Type::String),
                    ("nodes".to_string(), Type::Number),
                ]))),
            ),
            ("later".to_string(), Type::String),
            ("nothing".to_string(), Type::list(Type::Number)),
        ]))
    }

    fn sample() -> Value {
        Value::object([
            ("name", Value::from("x".repeat(300))),
            ("nodes", Value::from(-70_000)),
            ("enabled", Value::from(true)),
            ("tags", Value::strings(["a", "b"])),
            (
                "pools",
                Value::object([(
                    "general",
                    Value::object([
                        ("cidr", Value::from("10.0.128.64/27")),
                        ("nodes", Value::from(3)),
                    ]),
                )]),
            ),
            ("later", Value::Unknown),
            ("nothing", Value::Null),
        ])
    }

    #[test]
    fn round_trips_nested_values_with_unknowns_and_nulls() {
        let bytes = encode(&sample(), &object_type()).unwrap();
        assert_eq!(decode(&bytes, &object_type()).unwrap(), sample());
    }

    #[test]
    fn writes_unknown_as_extension_zero_and_null_as_nil() {
        assert_eq!(
            encode(&Value::Unknown, &Type::String).unwrap(),
            [0xd4, 0, 0]
        );
        assert_eq!(encode(&Value::Null, &Type::String).unwrap(), [0xc0]);
    }

    #[test]
    fn reads_refined_unknowns_big_numbers_and_dynamic_values() {
        // Extension 12 carrying a refinement map {1: false} ("not null").
        let refined = [0xc7, 0x03, 0x0c, 0x81, 0x01, 0xc2];
        assert_eq!(decode(&refined, &Type::String).unwrap(), Value::Unknown);
        // Numbers beyond 64-bit precision arrive as decimal strings.
        let big = [&[0xa4][..], b"1.25"].concat();
        assert_eq!(
            decode(&big, &Type::Number).unwrap(),
            Value::Number(Number::Float(1.25))
        );
        // A dynamic value: ["\"string\"", "hi"].
        let dynamic = [&[0x92, 0xa8][..], b"\"string\"", &[0xa2], b"hi"].concat();
        assert_eq!(decode(&dynamic, &Type::Dynamic).unwrap(), Value::from("hi"));
    }

    #[test]
    fn reads_every_integer_width() {
        let cases: [(&[u8], i64); 6] = [
            (&[0x05], 5),
            (&[0xff], -1),
            (&[0xcc, 0xc8], 200),
            (&[0xcd, 0x01, 0x00], 256),
            (&[0xd1, 0xff, 0x00], -256),
            (&[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0], i64::MIN),
        ];
        for (bytes, expected) in cases {
            assert_eq!(
                decode(bytes, &Type::Number).unwrap(),
                Value::from(expected),
                "{bytes:x?}"
            );
        }
    }

    #[test]
    fn rejects_truncated_and_mistyped_input() {
        assert!(decode(&[0xa5, b'a'], &Type::String).is_err());
        assert!(decode(&[0xc3], &Type::String).is_err());
        assert!(decode(&[0x81, 0xa1, b'z', 0xc0], &object_type()).is_err());
        assert!(encode(&Value::from(1), &Type::String).is_err());
    }

    #[test]
    fn encodes_objects_with_all_attributes_in_place() {
        let ty = Type::Object(BTreeMap::from([
            ("a".to_string(), Type::String),
            ("b".to_string(), Type::Bool),
        ]));
        let bytes = encode(&Value::object([("a", Value::from("v"))]), &ty).unwrap();
        assert_eq!(bytes, [0x82, 0xa1, b'a', 0xa1, b'v', 0xa1, b'b', 0xc0]);
    }
}
