use super::*;

#[test]
fn a_scheme_is_what_comes_before_the_first_colon_if_it_can_be_one() {
    assert_eq!(scheme("redis://127.0.0.1:6379"), Some("redis"));
    assert_eq!(scheme("redis+unix:///run/redis.sock"), Some("redis+unix"));
    assert_eq!(scheme("sqlite::memory:"), Some("sqlite"));
    assert_eq!(scheme("127.0.0.1:6379"), None);
    assert_eq!(scheme("no scheme"), None);
    assert_eq!(scheme(":6379"), None);
}

#[test]
fn an_unknown_scheme_is_named_and_no_password_is() {
    for (url, named) in [
        (
            "mysql://admin:hunter2@db.internal/shop",
            "mysql://db.internal/shop",
        ),
        ("admin:hunter2@db.internal", "admin:…"),
        ("hunter2", "(a URL with no scheme)"),
    ] {
        let err = open(url).map(drop).unwrap_err();
        assert!(err.is_invalid_url(), "{url}: {err}");
        assert_eq!(err.store(), named, "{url}: {err}");
        assert!(!err.to_string().contains("hunter2"), "{url}: {err}");
    }
    let err = open("mysql://db/shop").map(drop).unwrap_err();
    assert!(
        err.to_string()
            .contains("its scheme \"mysql\" is none of a store's (redis, ")
    );
}
