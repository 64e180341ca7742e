//! The dashboard page: one HTML file, its style and script inside, served
//! with a Content-Security-Policy that lets run only that script and that
//! style (named by their SHA-256, which a test checks against the file).

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

/// The page.
const PAGE: &str = include_str!("dashboard.html");

/// What the page may load and run: its own script and style (by hash),
/// requests to its own origin, inline images; nothing else.
const POLICY: &str = "default-src 'none'; \
     script-src 'sha256-SkPMJhwdM2bobhZB6/x1VPQ8xizF0lvFdrd/PrTScmU='; \
     style-src 'sha256-iUyI+YslhAO9B+SPA3g76uOFcRHv0ldMltBgpnUqiZQ='; \
     connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// `GET /`: the page, never cached (a new version of the crate serves a
/// new page).
pub(super) async fn page() -> Response {
    let mut response = Html(PAGE).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    response
}

#[cfg(test)]
mod tests {
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
}
