use super::*;

#[derive(Debug, serde::Deserialize)]
struct File {
    #[serde(deserialize_with = "Policy::deserialize")]
    policy: Policy,
}

#[test]
fn a_policy_is_read_by_name_and_anything_else_refused() {
    assert_eq!(Policy::from_text("rate"), Ok(Policy::Rate));
    assert_eq!(Policy::from_text(" COUNT "), Ok(Policy::Count));
    assert_eq!(
        Policy::from_text("ratio"),
        Err("not a policy: expected count or rate".to_owned())
    );
    let read = |text: &str| toml::from_str::<File>(text).map(|file| file.policy);
    assert_eq!(read("policy = \"rate\"").ok(), Some(Policy::Rate));
    let err = read("policy = \"ratio\"").unwrap_err().to_string();
    assert!(
        err.contains("unknown policy \"ratio\": expected count or rate"),
        "{err}"
    );
    let err = read("policy = 2").unwrap_err().to_string();
    assert!(err.contains("a policy: \"count\" or \"rate\""), "{err}");
}
