use super::*;

#[test]
fn one_server_is_left_to_the_redis_crate() {
    for url in [
        "redis://127.0.0.1:6379/2",
        "rediss://h:1",
        "unix:///run/r.sock",
    ] {
        assert_eq!(target(url), Ok(Target::Node(url.to_owned())));
    }
}

#[test]
fn a_cluster_lists_its_nodes() {
    assert_eq!(
        target("redis+cluster://10.0.0.1:7000,10.0.0.2:7001"),
        Ok(Target::Cluster(vec![
            "redis://10.0.0.1:7000".into(),
            "redis://10.0.0.2:7001".into()
        ]))
    );
    assert_eq!(
        target("rediss+cluster://app:s%40cret@cache.internal:6379"),
        Ok(Target::Cluster(vec![
            "rediss://app:s%40cret@cache.internal:6379".into()
        ]))
    );
    for (url, says) in [
        ("redis+cluster://h:1/2", "no database"),
        ("redis+cluster://h:1?password=x", "no query"),
        ("redis+cluster://h", "\"h\" is not host:port"),
        ("redis+cluster://h:1,,h:2", "\"\" is not host:port"),
        ("redis+cluster://h:0", "not host:port"),
        ("redis+cluster://:1", "not host:port"),
        ("redis+cluster://h:99999", "not host:port"),
    ] {
        let err = target(url).unwrap_err();
        assert!(err.contains(says), "{url}: {err}");
    }
}

#[test]
fn sentinel_names_the_primary() {
    assert_eq!(
        target("redis+sentinel://app:p%2Fw@s1:26379,s2:26379/shop/3"),
        Ok(Target::Sentinel {
            sentinels: vec!["redis://s1:26379".into(), "redis://s2:26379".into()],
            name: "shop".into(),
            db: 3,
            user: Some("app".into()),
            password: Some("p/w".into()),
            tls: false,
        })
    );
    assert_eq!(
        target("rediss+sentinel://:pw@s1:26379/shop"),
        Ok(Target::Sentinel {
            sentinels: vec!["redis://s1:26379".into()],
            name: "shop".into(),
            db: 0,
            user: None,
            password: Some("pw".into()),
            tls: true,
        })
    );
    for (url, says) in [
        ("redis+sentinel://s1:26379", "needs the name"),
        ("redis+sentinel://s1:26379/", "needs the name"),
        ("redis+sentinel://s1:26379/shop/x", "\"x\" is not a number"),
        ("redis+sentinel://s1/shop", "not host:port"),
    ] {
        let err = target(url).unwrap_err();
        assert!(err.contains(says), "{url}: {err}");
    }
    let err = target("redis+sentinel://u:hunter2@s1/shop").unwrap_err();
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_password_may_hold_separators_unescaped() {
    assert_eq!(
        target("redis+cluster://app:hun/ter2@127.0.0.1:7000"),
        Ok(Target::Cluster(vec![
            "redis://app:hun%2Fter2@127.0.0.1:7000".into()
        ]))
    );
    assert_eq!(
        target("redis+cluster://:a@b?c#d/e%2F@[::1]:7000"),
        Ok(Target::Cluster(vec![
            "redis://:a%40b%3Fc%23d%2Fe%2F@[::1]:7000".into()
        ]))
    );
    let Ok(Target::Sentinel {
        user,
        password,
        name,
        ..
    }) = target("redis+sentinel://app:/hunter2@s1:26379/shop")
    else {
        panic!("not a Sentinel URL");
    };
    assert_eq!(
        (user.as_deref(), password.as_deref(), name.as_str()),
        (Some("app"), Some("/hunter2"), "shop")
    );
}

#[test]
fn no_error_quotes_the_user_or_password() {
    for url in [
        "redis+cluster://app:hun/ter2@127.0.0.1",
        "redis+cluster://app:hun/ter2@127.0.0.1:7000/1",
        "rediss+cluster://app:hun?ter2@127.0.0.1:7000?x",
        "redis+sentinel://app:/hunter2@s1:26379",
        "redis+sentinel://app:/hunter2@s1/shop",
        "redis+sentinel://app:/hunter2@s1:26379/shop/x",
        "redis+sentinel://app:hun#ter2@s1:1#x/shop",
    ] {
        let err = target(url).unwrap_err();
        for piece in ["app", "hun", "ter2"] {
            assert!(!err.contains(piece), "{url}: {err}");
        }
    }
}

#[test]
fn escapes_are_decoded_where_they_are_escapes() {
    assert_eq!(decode("a%2Fb%zz%4"), "a/b%zz%4");
    assert_eq!(decode("%ff"), "%ff");
}
