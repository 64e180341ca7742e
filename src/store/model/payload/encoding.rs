//! A payload in either encoding a store may spell it in ([`Encoding`]):
//! JSON, or PHP's `serialize()` of milon/fuse's array, as Laravel's cache
//! keeps it (see `php.rs` for the format).
//!
//! A payload tells its encoding by its first bytes: JSON's object starts
//! with `{` (after any whitespace), a serialized array with `a:`. A store
//! reads the one its [`Codec`] reads: a payload in the other is refused,
//! saying what it holds (unless the codec reads both, `auto`).
//!
//! Both encodings hold the same fields, and a serialized payload is read
//! as the JSON of its array would be: a PHP list (keys 0, 1, ... in
//! order) as a JSON array, another array as an object (integer keys in
//! decimal), PHP's `INF`, `-INF` and `NAN` as strings (no field of a
//! circuit holds one). The crate's own fields travel in the array under
//! `fuse`, a PHP string holding their JSON object (milon/fuse ignores the
//! key; its 64-bit numbers, such as a generation above `i64::MAX`, keep
//! every bit that way).
//!
//! What the crate writes for the times milon/fuse writes (`opened_at`,
//! the failures) are whole seconds since the Unix epoch as PHP integers
//! (`i:`), as milon/fuse writes them: its comparisons (`$ts >=
//! $windowStart`, `$now < $openedAt + $openSeconds`) and casts (`(int)`)
//! see the integers they see from PHP. The counts (`half_open_successes`,
//! `half_open_inflight`) are integers too, `opened_at` is `N;` while
//! closed, and the keys come in milon/fuse's order, `fuse` last.

use super::php::{self, Key, Value};
use super::{Payload, PayloadError};
use crate::store::{Codec, Encoding};

/// The encoding `bytes` are in, as their first bytes tell (`None`:
/// neither).
pub(super) fn detect(bytes: &[u8]) -> Option<Encoding> {
    if bytes.starts_with(b"a:") {
        return Some(Encoding::Php);
    }
    let first = bytes.iter().find(|byte| !byte.is_ascii_whitespace());
    (first == Some(&b'{')).then_some(Encoding::Json)
}

/// The fields of the payload `bytes` under `key`, in the encoding they
/// are in if `codec` reads it (bytes of neither are read as the codec
/// writes, to say what is wrong with them).
pub(super) fn decode(key: &str, bytes: &[u8], codec: Codec) -> Result<Payload, PayloadError> {
    let encoding = detect(bytes).unwrap_or(codec.writes());
    if !codec.reads(encoding) {
        return Err(mismatch(key, encoding, codec));
    }
    match encoding {
        Encoding::Json => serde_json::from_slice(bytes).map_err(|err| PayloadError::new(key, err)),
        Encoding::Php => {
            let value = php::parse(bytes).map_err(|err| PayloadError::new(key, err))?;
            let json = fields(key, value)?;
            serde_json::from_value(json).map_err(|err| PayloadError::new(key, err))
        }
    }
}

/// `payload` in `encoding`.
pub(super) fn encode(payload: &Payload, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Json => serde_json::to_vec(payload).unwrap_or_default(),
        Encoding::Php => {
            let mut bytes = Vec::new();
            php::write(&serialized(payload), &mut bytes);
            bytes
        }
    }
}

/// The error of a payload under `key` in `encoding`, which `codec` does
/// not read.
fn mismatch(key: &str, encoding: Encoding, codec: Codec) -> PayloadError {
    let (holds, reads) = match encoding {
        Encoding::Php => (
            "PHP's serialize() of an array (as Laravel's cache keeps milon/fuse's circuits)",
            "JSON",
        ),
        Encoding::Json => (
            "JSON (as milon/fuse's DatabaseStore writes it)",
            "PHP's serialize()",
        ),
    };
    PayloadError::new(
        key,
        format_args!(
            "it holds {holds}, and this store reads {reads} alone (it writes {}); \
             to read both, use the `auto` reading (Codec::reading_any)",
            codec.writes().as_str()
        ),
    )
}

/// The PHP array of `payload`: milon/fuse's five fields in its order,
/// then the crate's own as a string of JSON under `fuse`.
fn serialized(payload: &Payload) -> Value {
    // Seconds since the Unix epoch below 2^63: every time the crate holds
    // (nanoseconds in 64 bits) is.
    let int = |value: u64| Value::Int(i64::try_from(value).unwrap_or(i64::MAX));
    let failures = (0..)
        .zip(&payload.failures)
        .map(|(index, &at)| (Key::Int(index), int(at)))
        .collect();
    let mut elements = vec![
        (Key::name("state"), Value::Str(payload.state.clone())),
        (
            Key::name("opened_at"),
            payload.opened_at.map_or(Value::Null, int),
        ),
        (Key::name("failures"), Value::Array(failures)),
        (
            Key::name("half_open_successes"),
            Value::Int(payload.half_open_successes.into()),
        ),
        (
            Key::name("half_open_inflight"),
            Value::Int(payload.half_open_inflight.into()),
        ),
    ];
    if let Some(own) = &payload.fuse {
        let own = serde_json::to_string(own).unwrap_or_default();
        elements.push((Key::name("fuse"), Value::Str(own)));
    }
    Value::Array(elements)
}

/// The JSON of the serialized array `value` under `key`, its `fuse`
/// string read as the JSON it holds.
fn fields(key: &str, value: Value) -> Result<serde_json::Value, PayloadError> {
    // The payload's array is an object whatever its keys (a list is not
    // read as the fields in their order).
    let mut json = match value {
        Value::Array(elements) => serde_json::Value::Object(object(elements)),
        value => json_of(value),
    };
    match json.get_mut("fuse") {
        Some(serde_json::Value::String(text)) => {
            let own = serde_json::from_str(text)
                .map_err(|err| PayloadError::new(key, format_args!("fuse holds no JSON: {err}")))?;
            json["fuse"] = own;
        }
        None | Some(serde_json::Value::Null) => {}
        Some(_) => {
            return Err(PayloadError::new(
                key,
                "fuse is not a string (of the crate's JSON)",
            ));
        }
    }
    Ok(json)
}

/// `value` as JSON (see the module docs).
fn json_of(value: Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        Value::Null => Json::Null,
        Value::Bool(value) => Json::Bool(value),
        Value::Int(value) => Json::from(value),
        Value::Float(value) => serde_json::Number::from_f64(value).map_or_else(
            || {
                let text = match value {
                    f64::INFINITY => "INF",
                    f64::NEG_INFINITY => "-INF",
                    _ => "NAN",
                };
                Json::String(text.to_owned())
            },
            Json::Number,
        ),
        Value::Str(text) => Json::String(text),
        Value::Array(elements) => {
            let list = (0..)
                .zip(&elements)
                .all(|(index, (key, _))| *key == Key::Int(index));
            if list {
                return Json::Array(
                    elements
                        .into_iter()
                        .map(|(_, value)| json_of(value))
                        .collect(),
                );
            }
            Json::Object(object(elements))
        }
    }
}

/// The array of `elements` as a JSON object, integer keys in decimal (a
/// key given twice keeps its last value, as PHP's `unserialize()` does).
fn object(elements: Vec<(Key, Value)>) -> serde_json::Map<String, serde_json::Value> {
    elements
        .into_iter()
        .map(|(key, value)| {
            let key = match key {
                Key::Int(key) => key.to_string(),
                Key::Str(key) => key,
            };
            (key, json_of(value))
        })
        .collect()
}
