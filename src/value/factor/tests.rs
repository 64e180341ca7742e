use super::*;

#[derive(Debug, serde::Deserialize)]
struct File {
    #[serde(deserialize_with = "Factor::deserialize")]
    factor: Factor,
}

#[test]
fn a_factor_is_read_as_a_number_or_text_and_anything_else_refused() {
    let read = |text: &str| toml::from_str::<File>(text).map(|file| file.factor);
    assert_eq!(
        read("factor = 2").ok(),
        Some(Factor::from_millionths(2_000_000))
    );
    assert_eq!(
        read("factor = 0.25").ok(),
        Some(Factor::from_millionths(250_000))
    );
    assert_eq!(
        read("factor = \"1.5\"").ok(),
        Some(Factor::from_millionths(1_500_000))
    );
    for (bad, says) in [
        ("factor = -1", "-1 is not a number from 0"),
        ("factor = -0.5", "-0.5 is not a number from 0"),
        ("factor = nan", "NaN is not a number from 0"),
        ("factor = \"x\"", "is not a decimal number"),
        ("factor = true", "a number such as 2 or 0.25"),
    ] {
        let err = read(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
    assert_eq!(
        Factor::from_text(" 3 "),
        Ok(Factor::from_millionths(3_000_000))
    );
    assert!(Factor::from_text("three").is_err());
}
