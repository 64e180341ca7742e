use super::*;

#[test]
fn userinfo_is_left_out_for_every_scheme() {
    for (given, printed) in [
        (
            "postgres://admin:hunter2@db:5432/shop",
            "postgres://db:5432/shop",
        ),
        ("postgresql://admin:hunter2@db/shop", "postgresql://db/shop"),
        ("redis://:hunter2@cache:6379/2", "redis://cache:6379/2"),
        ("redis://user:hunter2@cache", "redis://cache"),
        ("rediss://user:hunter2@cache:6380", "rediss://cache:6380"),
        ("http://admin:hunter2@host/fuse", "http://host/fuse"),
        ("https://admin:hunter2@host/fuse", "https://host/fuse"),
        // Unescaped separators in the password are hidden with it.
        ("redis://:hun@ter/2@cache:6379", "redis://cache:6379"),
        ("redis://:hun?ter#2@cache:6379/1", "redis://cache:6379/1"),
        (
            "redis+cluster://app:hun/ter2@127.0.0.1:7000",
            "redis+cluster://127.0.0.1:7000",
        ),
        (
            "redis+sentinel://app:/hunter2@s1:26379/shop",
            "redis+sentinel://s1:26379/shop",
        ),
        ("http://u:p@[::1]:8080/fuse", "http://[::1]:8080/fuse"),
        // Without `//`, but for SQLite's paths.
        ("redis:app:hunter2@cache", "redis:cache"),
        ("sqlite:/data/a@b.db", "sqlite:/data/a@b.db"),
        ("1app:hunter2@cache", "cache"),
    ] {
        assert_eq!(url(given), printed, "{given}");
    }
}

#[test]
fn secret_query_parameters_are_hidden_for_every_scheme() {
    for (given, printed) in [
        (
            "postgres://127.0.0.1:1/shop?user=admin&password=hunter2",
            "postgres://127.0.0.1:1/shop?user=admin&password=***",
        ),
        (
            "postgresql://db/shop?sslpassword=hunter2&sslmode=require",
            "postgresql://db/shop?sslpassword=***&sslmode=require",
        ),
        (
            "redis+unix:///x.sock?pass=hunter2",
            "redis+unix:///x.sock?pass=***",
        ),
        (
            "unix:///x.sock?db=1&user=u&password=hunter2",
            "unix:///x.sock?db=1&user=u&password=***",
        ),
        (
            "redis://cache/?Password=hunter2",
            "redis://cache/?Password=***",
        ),
        (
            "rediss://u:p@cache?token=hunter2;db=3",
            "rediss://cache?token=***;db=3",
        ),
        (
            "http://host/fuse?access_key=hunter2&x=1",
            "http://host/fuse?access_key=***&x=1",
        ),
        (
            "sqlite:/tmp/a.db?mode=rwc&key=hunter2",
            "sqlite:/tmp/a.db?mode=rwc&key=***",
        ),
        // A secret value runs to the next `&`, `;` or `#`, whatever
        // it holds before.
        (
            "postgres://db/shop?password=hun?ter/2=x&sslmode=require",
            "postgres://db/shop?password=***&sslmode=require",
        ),
        ("redis://cache/0?password=hun@ter2#x", "redis://***#x"),
    ] {
        assert_eq!(url(given), printed, "{given}");
    }
}

#[test]
fn urls_without_secrets_are_borrowed_unchanged() {
    for given in [
        "redis://127.0.0.1:6379",
        "postgres://db/shop?sslmode=require",
        "sqlite::memory:",
        "sqlite:/tmp/fuse.db?mode=rwc",
        "not a url at all",
        "",
        "http://host/path?password=",
        "cache@eu-west",
    ] {
        assert!(matches!(url(given), Cow::Borrowed(_)), "{given}");
    }
}

#[test]
fn urls_in_messages_are_redacted() {
    assert_eq!(
        text("invalid URL \"postgres://a:hunter2@db/x?password=hunter2\": bad port"),
        "invalid URL \"postgres://db/x?password=***\": bad port"
    );
    assert_eq!(
        text("Redis URL did not parse- redis+unix:///s?pass=hunter2"),
        "Redis URL did not parse- redis+unix:///s?pass=***"
    );
    // A password may hold what usually ends a URL in a message.
    assert_eq!(
        text("for url (http://u:a)b'c,d[e]@host/fuse): refused"),
        "for url (http://host/fuse): refused"
    );
    assert_eq!(
        text("at 'redis://127.0.0.1/0?db=1&pass=hun(ter)2' and https://h/?token=x;y"),
        // (the quote may be the password's: it is hidden with it)
        "at 'redis://127.0.0.1/0?db=1&pass=*** and https://h/?token=***;y"
    );
    let plain = "store redis://127.0.0.1:6379 unreachable: timed out";
    assert!(matches!(text(plain), Cow::Borrowed(_)));
    assert!(matches!(text("what? who knows"), Cow::Borrowed(_)));
}

#[test]
fn pieces_of_a_secret_are_hidden_in_what_a_library_said() {
    let url = "postgres://app:hun/ter2%2Fx@db/shop?sslpassword=s%20cretvalue";
    for (said, printed) in [
        (
            "database \"ter2/x\" does not exist",
            "database \"***\" does not exist",
        ),
        ("no host hun/ter2", "no host ***"),
        ("bad key s cretvalue", "bad key ***"),
        ("user app, 5 tries", "user app, 5 tries"),
    ] {
        assert_eq!(text_about(url, said), printed, "{said}");
    }
    assert!(matches!(
        text_about("redis://cache", "refused"),
        Cow::Borrowed(_)
    ));
}
