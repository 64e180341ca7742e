//! The Redis store's replies, read strictly.

use super::*;

#[test]
fn replies_are_read_strictly() {
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    let value = |payload: Option<&[u8]>| Reading::Value {
        seconds: 1_700_000_000,
        micros: 12,
        payload: payload.map(<[u8]>::to_vec),
    };
    assert_eq!(
        reading(&[bulk("1700000000"), bulk("12"), Value::Nil]),
        Some(value(None))
    );
    assert_eq!(
        reading(&[bulk("1700000000"), bulk("12")]),
        Some(value(None))
    );
    assert_eq!(
        reading(&[bulk("1700000000"), bulk("12"), bulk("{}")]),
        Some(value(Some(b"{}")))
    );
    assert_eq!(
        reading(&[
            bulk("1700000000"),
            bulk("12"),
            Value::Nil,
            Value::Int(209_715_200)
        ]),
        Some(Reading::TooLarge(209_715_200))
    );
    assert_eq!(reading(&[bulk("17x"), bulk("12"), Value::Nil]), None);
    assert_eq!(reading(&[bulk("-1"), bulk("12"), Value::Nil]), None);
    assert_eq!(reading(&[bulk("1"), bulk("2"), Value::Int(3)]), None);
    assert_eq!(
        reading(&[bulk("1"), bulk("2"), Value::Nil, Value::Int(-3)]),
        None
    );
    assert_eq!(reading(&[]), None);
}

#[tokio::test]
async fn a_time_that_is_none_is_an_error_naming_the_store() {
    let store = RedisStore::open("redis://127.0.0.1:1").unwrap();
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    let time = |seconds: &str, micros: &str| {
        store.loaded(
            "fuse:billing",
            "load",
            &[bulk(seconds), bulk(micros), Value::Nil],
        )
    };
    assert_eq!(
        time("1700000000", "999999").unwrap().now,
        Duration::from_secs(1_700_000_000) + Duration::from_micros(999_999)
    );
    for (seconds, micros) in [
        ("18446744073709551615", "0"),
        ("18446744073709551615", "999999"),
        ("18446744074", "0"),
        ("1700000000", "1000000"),
    ] {
        let err = time(seconds, micros).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("redis://127.0.0.1:1"), "{text}");
        assert!(
            text.contains(&format!("TIME answered {seconds} s {micros} us")),
            "{text}"
        );
    }
    let err = store
        .loaded(
            "fuse:billing",
            "load",
            &[bulk("1"), bulk("2"), Value::Nil, Value::Int(2_000_000)],
        )
        .unwrap_err();
    assert_eq!(err.payload_error().unwrap().key(), "fuse:billing");
    assert!(err.to_string().contains("2000000 bytes"), "{err}");
}
