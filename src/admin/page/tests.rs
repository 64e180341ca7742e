use base64::Engine as _;
use sha2::Digest as _;

use super::*;

/// The text of the page's one `<tag>` element, exactly as the browser
/// hashes it.
fn inside(tag: &str) -> &'static str {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    assert_eq!(PAGE.matches(&open).count(), 1, "one {open}, no attributes");
    let start = PAGE.find(&open).unwrap() + open.len();
    let end = start + PAGE[start..].find(&close).unwrap();
    &PAGE[start..end]
}

fn sha256(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[test]
fn the_policy_names_the_script_and_the_style_of_the_page_as_it_is() {
    for (directive, tag) in [("script-src", "script"), ("style-src", "style")] {
        let wanted = format!("{directive} {};", sha256(inside(tag)));
        assert!(
            POLICY.contains(&wanted),
            "dashboard.html changed: POLICY must say {wanted}"
        );
    }
    assert!(!POLICY.contains("unsafe"), "{POLICY}");
    // Nothing else runs: no script or style attribute, no other
    // element.
    for other in [
        " style=",
        " onclick=",
        " onload=",
        "javascript:",
        "<script ",
    ] {
        assert!(!PAGE.contains(other), "the page has {other}");
    }
}
