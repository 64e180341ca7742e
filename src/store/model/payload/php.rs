//! PHP's `serialize()` format, the subset that holds plain data: arrays
//! (`a:N:{...}`, integer or string keys), strings of a byte length
//! (`s:N:"...";`, UTF-8 for this crate's use), integers (`i:`, 64 bits),
//! floats (`d:`, PHP's `INF`, `-INF` and `NAN` included), booleans
//! (`b:0;`, `b:1;`) and null (`N;`): what Laravel's cache holds for
//! milon/fuse's array.
//!
//! The parser is strict and bounded. Objects (`O:`, `C:`), references
//! (`r:`, `R:`), enums (`E:`), escaped strings (`S:`) and anything else
//! are refused, named; so are trailing bytes and a nesting deeper than
//! [`MAX_DEPTH`]. It runs in one pass over its input (which the payload's
//! reader already bounds by [`PayloadError::MAX_BYTES`]): a declared
//! length or count is checked against the bytes left before anything is
//! sized by it, so that hostile input costs at most its own size in
//! memory, and never panics.
//!
//! No crate on crates.io parses this subset with these bounds: the
//! serde-based ones allocate what a string's declared length says and
//! have no depth limit.
//!
//! [`PayloadError::MAX_BYTES`]: super::PayloadError::MAX_BYTES

use read::Reader;

mod read;

/// How deep arrays may nest (milon/fuse's array holds one level: the
/// failures).
pub(crate) const MAX_DEPTH: usize = 32;

/// A value of the subset.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// The elements in their order (PHP's arrays are ordered maps).
    Array(Vec<(Key, Value)>),
}

/// An array key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Int(i64),
    Str(String),
}

impl Key {
    /// The key `name`.
    pub(crate) fn name(name: &str) -> Self {
        Key::Str(name.to_owned())
    }
}

/// What is wrong with serialized bytes, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("PHP's serialize() format: {what} at byte {at}")]
pub(crate) struct Malformed {
    at: usize,
    what: String,
}

/// The value `bytes` hold, all of them.
pub(crate) fn parse(bytes: &[u8]) -> Result<Value, Malformed> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.value(0)?;
    if reader.at < bytes.len() {
        return Err(reader.error(format_args!(
            "{} bytes after the value",
            bytes.len() - reader.at
        )));
    }
    Ok(value)
}

/// Appends `value`, serialized as PHP's `serialize()` does.
pub(crate) fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"N;"),
        Value::Bool(value) => out.extend_from_slice(if *value { b"b:1;" } else { b"b:0;" }),
        Value::Int(value) => out.extend_from_slice(format!("i:{value};").as_bytes()),
        Value::Float(value) => {
            let text = match *value {
                value if value.is_nan() => "NAN".to_owned(),
                f64::INFINITY => "INF".to_owned(),
                f64::NEG_INFINITY => "-INF".to_owned(),
                // The shortest text that reads back as the same float
                // (`1.0`, `1e300`), which PHP reads.
                value => format!("{value:?}"),
            };
            out.extend_from_slice(format!("d:{text};").as_bytes());
        }
        Value::Str(text) => write_str(text, out),
        Value::Array(elements) => {
            out.extend_from_slice(format!("a:{}:{{", elements.len()).as_bytes());
            for (key, value) in elements {
                match key {
                    Key::Int(key) => out.extend_from_slice(format!("i:{key};").as_bytes()),
                    Key::Str(key) => write_str(key, out),
                }
                write(value, out);
            }
            out.push(b'}');
        }
    }
}

fn write_str(text: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(format!("s:{}:\"", text.len()).as_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\";");
}
