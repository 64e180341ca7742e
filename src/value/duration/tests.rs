use super::*;

fn from_toml<T>(value: &str) -> Result<T, String>
where
    T: Value,
{
    #[derive(Debug, serde::Deserialize)]
    struct File<T: Value> {
        #[serde(deserialize_with = "T::deserialize")]
        d: T,
    }
    toml::from_str::<File<T>>(&format!("d = {value}"))
        .map(|file| file.d)
        .map_err(|e| e.to_string())
}

#[test]
fn a_duration_that_may_be_off_reads_none_off_or_a_duration() {
    for text in ["none", "off", " None ", "OFF"] {
        assert_eq!(Option::<Duration>::from_text(text), Ok(None), "{text}");
    }
    assert_eq!(
        Option::<Duration>::from_text("2s"),
        Ok(Some(Duration::from_secs(2)))
    );
    assert_eq!(from_toml::<Option<Duration>>("\"off\""), Ok(None));
    assert_eq!(
        from_toml::<Option<Duration>>("\"1m30s\""),
        Ok(Some(Duration::from_secs(90)))
    );
}

#[test]
fn what_is_not_a_duration_is_refused_with_how_to_write_one() {
    let err = Option::<Duration>::from_text("5").unwrap_err();
    assert!(err.contains("\"none\"") && err.contains("unit"), "{err}");
    let err = from_toml::<Option<Duration>>("5").unwrap_err();
    assert!(err.contains("\"5s\"") && err.contains("\"none\""), "{err}");
    let err = from_toml::<Option<Duration>>("1.5").unwrap_err();
    assert!(err.contains("\"1.5s\""), "{err}");
    let err = from_toml::<Option<Duration>>("false").unwrap_err();
    assert!(
        err.contains("boolean") && err.contains("a duration with a unit"),
        "{err}"
    );
    let err = from_toml::<Duration>("\"none\"").unwrap_err();
    assert!(err.contains("invalid duration \"none\""), "{err}");
    let err = from_toml::<Duration>("[1]").unwrap_err();
    assert!(err.contains("a duration with a unit"), "{err}");
    let err = from_toml::<Duration>("30").unwrap_err();
    assert!(err.contains("\"30s\"") && !err.contains("none"), "{err}");
}
