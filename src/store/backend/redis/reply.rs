//! The Redis store's scripts' replies, read strictly.

use redis::Value;

/// A number Redis sent as a string (`TIME`'s parts) or an integer.
pub(super) fn number(value: &Value) -> Option<u64> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

/// What a script answered about the key: the server's `TIME` and the
/// value, or its length alone when it is above the bound.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reading {
    Value {
        seconds: u64,
        micros: u64,
        payload: Option<Vec<u8>>,
    },
    TooLarge(u64),
}

/// The reply's shape (`None`: not one of the scripts' replies).
pub(super) fn reading(values: &[Value]) -> Option<Reading> {
    let (seconds, micros, payload) = match values {
        [_, _, Value::Nil, length] => return number(length).map(Reading::TooLarge),
        [seconds, micros] | [seconds, micros, Value::Nil] => (seconds, micros, None),
        [seconds, micros, Value::BulkString(bytes)] => (seconds, micros, Some(bytes.clone())),
        _ => return None,
    };
    Some(Reading::Value {
        seconds: number(seconds)?,
        micros: number(micros)?,
        payload,
    })
}
