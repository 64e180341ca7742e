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
     script-src 'sha256-fOk0Lu9Wqa9ZzeA4iTnp6YEbxnsfyC+3H+HIBLQzbzg='; \
     style-src 'sha256-qzwq5l96601ynGnX636uPXIjqj186SFU2s+rXn3Nca4='; \
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
mod tests;
