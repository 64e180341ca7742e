use super::*;
use axum::http::HeaderValue;

fn with(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
    headers
}

#[test]
fn a_token_no_bearer_header_can_carry_is_refused_by_place_and_kind() {
    for good in ["s3cret", "a-b.c_d~e+f/g", "YWJj==", "x=", "0"] {
        assert_eq!(token68(good), Ok(()), "{good}");
    }
    for (bad, at, what) in [
        ("s3cret\n", 7, "a line break"),
        (" s3cret", 1, "a space"),
        ("s3cret ", 7, "a space"),
        ("s\u{e9}cret", 2, "a non-ASCII character"),
        ("s3\tcret", 3, "a tab"),
        ("s3\u{7f}", 3, "a control character"),
        ("ab=cd", 3, "an = before the end"),
        ("==", 1, "an = with nothing before it"),
        ("s3@cret", 3, "a punctuation mark other than -._~+/"),
    ] {
        assert_eq!(token68(bad), Err(BuildError::Token { at, what }), "{bad:?}");
        let said = token68(bad).unwrap_err().to_string();
        assert!(!said.contains("cret"), "{said}");
    }
    assert!(Access::new(Some("s3cret\r\n"), false).is_err());
    assert!(Access::new(Some(""), false).is_ok());
}

fn access(token: Option<&str>, private_reads: bool) -> Access {
    Access::new(token, private_reads).unwrap()
}

#[test]
fn the_rules() {
    let open = access(None, false);
    assert!(open.check(&HeaderMap::new(), Need::Read).is_ok());
    assert_eq!(
        open.check(&with("Bearer x"), Need::Write)
            .unwrap_err()
            .code(),
        "read_only"
    );
    let guarded = access(Some("s3cret"), false);
    assert!(guarded.check(&HeaderMap::new(), Need::Read).is_ok());
    assert!(guarded.check(&with("Bearer s3cret"), Need::Write).is_ok());
    assert!(guarded.check(&with("bearer s3cret"), Need::Write).is_ok());
    for wrong in [
        "Bearer s3cre",
        "Bearer s3crets",
        "Basic s3cret",
        "s3cret",
        "Bearer ",
    ] {
        let err = guarded.check(&with(wrong), Need::Write).unwrap_err();
        assert_eq!(err.status(), 401, "{wrong}");
    }
    assert_eq!(
        guarded
            .check(&HeaderMap::new(), Need::Write)
            .unwrap_err()
            .status(),
        401
    );
    let private = access(Some("s3cret"), true);
    assert_eq!(
        private
            .check(&HeaderMap::new(), Need::Read)
            .unwrap_err()
            .status(),
        401
    );
    assert!(private.check(&with("Bearer s3cret"), Need::Read).is_ok());
    assert!(guarded.authorised(&with("Bearer s3cret")));
    for other in ["Bearer s3cre", "s3cret", "Bearer "] {
        assert!(!guarded.authorised(&with(other)), "{other}");
    }
    assert!(!guarded.authorised(&HeaderMap::new()));
    assert!(!open.authorised(&with("Bearer ")));
    let empty = access(Some(""), false);
    assert!(!empty.writable());
    assert_eq!(
        empty
            .check(&with("Bearer "), Need::Write)
            .unwrap_err()
            .code(),
        "read_only"
    );
    let nobody = access(None, true);
    assert_eq!(
        nobody
            .check(&with("Bearer x"), Need::Read)
            .unwrap_err()
            .status(),
        401
    );
}
