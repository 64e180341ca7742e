use super::*;

fn host(given: &str) -> Host {
    Host::parse(given).unwrap_or_else(|why| panic!("{given} {why}"))
}

#[test]
fn loopback_is_always_admitted_and_other_hosts_only_when_listed() {
    let default = Hosts::default();
    for loopback in [
        "localhost",
        "LocalHost:8080",
        "localhost.",
        "127.0.0.1",
        "127.0.0.1:3000",
        "127.1.2.3:1",
        "[::1]",
        "[::1]:8080",
    ] {
        assert!(default.admit(&host(loopback)), "{loopback}");
    }
    for other in [
        "evil.example",
        "localhost.evil.example",
        "127.0.0.1.nip.io:80",
        "10.0.0.5:8080",
        "[::2]:80",
    ] {
        assert!(!default.admit(&host(other)), "{other}");
    }
    let listed = Hosts::Listed(vec![
        Host::allowed("Fuse.Example.com").unwrap(),
        Host::allowed("10.0.0.5:8080").unwrap(),
    ]);
    assert!(listed.admit(&host("fuse.example.com:443")));
    assert!(listed.admit(&host("fuse.example.com")));
    assert!(listed.admit(&host("10.0.0.5:8080")));
    assert!(!listed.admit(&host("10.0.0.5:8081")));
    assert!(!listed.admit(&host("10.0.0.5")));
    assert!(listed.admit(&host("localhost:1")));
    assert!(Hosts::Any.admit(&host("evil.example")));
}

#[test]
fn a_request_is_checked_by_its_authority_else_its_host_header() {
    let request = |uri: &str, host: Option<&str>| {
        let mut request = Request::builder().uri(uri);
        if let Some(host) = host {
            request = request.header(header::HOST, host);
        }
        request.body(axum::body::Body::empty()).unwrap()
    };
    let default = Hosts::default();
    assert!(check(&default, &request("/circuits", Some("localhost:80"))).is_ok());
    // HTTP/2 and absolute-form requests name it in the URI.
    assert!(check(&default, &request("http://[::1]:80/circuits", None)).is_ok());
    let refused = check(
        &default,
        &request("http://evil.example/", Some("localhost")),
    );
    assert_eq!(refused.unwrap_err().code(), "host_not_allowed");
    let nameless = check(&default, &request("/circuits", None)).unwrap_err();
    assert!(
        nameless.message().starts_with("the request names no host"),
        "{nameless}"
    );
    let bad = check(&default, &request("/", Some("evil example"))).unwrap_err();
    assert!(bad.message().contains("\"evil example\""), "{bad}");
    assert!(check(&Hosts::Any, &request("/circuits", None)).is_ok());
}

#[test]
fn an_allowed_host_that_is_not_one_is_refused_with_what_is_wrong() {
    for (given, why) in [
        ("", "has no name"),
        (
            "fuse.example.com:http",
            "has a port that is not a number from 0 to 65535",
        ),
        (
            "fuse.example.com:70000",
            "has a port that is not a number from 0 to 65535",
        ),
        ("::1", "is an IPv6 address without brackets"),
        ("[::1", "has no ] after its ["),
        ("[fuse]:80", "is not an IPv6 address in brackets"),
        ("fuse example", "has a character no host name has"),
        (
            "https://fuse.example.com",
            "has a / (a URL or a path, not a host)",
        ),
        ("fuse@example.com", "has a character no host name has"),
    ] {
        let err = Host::allowed(given).unwrap_err();
        assert_eq!(
            err,
            BuildError::Host {
                host: given.to_owned(),
                why
            },
            "{given}"
        );
    }
}
