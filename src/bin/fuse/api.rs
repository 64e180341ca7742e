//! The `fuse` command against a service's admin API (`--url`): the list
//! read page by page, one circuit, and open, close, reset and settings
//! changes with the admin token.
//!
//! The API may be anyone's: its list is read for at most [`MAX_PAGES`]
//! pages, each `next` must come after the one before (the list is by key),
//! and an answer may hold at most [`MAX_ANSWER`] bytes.

use fuse_breaker::admin::{CircuitList, CircuitView, SettingsChange};
use fuse_breaker::redact;

use crate::set;
use crate::text::printable;

/// The circuits one page of the list asks for (the API's most).
const PAGE: usize = 5000;

/// The most pages of the list read: 50 million circuits, more than any
/// service holds; an API whose list goes on is given up.
pub(crate) const MAX_PAGES: usize = 10_000;

/// The most bytes of one answer (a full page is about 2 MB).
pub(crate) const MAX_ANSWER: usize = 32 << 20;

/// A service's admin API.
pub(crate) struct Api {
    base: reqwest::Url,
    /// The base as errors show it: without user, password or secrets.
    shown: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Api {
    /// The API at `url` (where the application nested the router).
    pub(crate) fn new(url: &str, token: Option<&str>) -> Result<Self, String> {
        let base = reqwest::Url::parse(url)
            .ok()
            .filter(|base| base.scheme() == "http" || base.scheme() == "https")
            .ok_or_else(|| {
                format!(
                    "--url takes http://host:port[/prefix], not {:?}",
                    redact::url(url)
                )
            })?;
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .build()
            .map_err(|err| format!("cannot make an HTTP client: {err}"))?;
        Ok(Api {
            shown: redact::url(base.as_str()).into_owned(),
            base,
            token: token.map(str::to_owned),
            client,
        })
    }

    /// Every circuit whose key starts with `prefix`, by key, handed to
    /// `each` page by page.
    pub(crate) async fn circuits(
        &self,
        prefix: &str,
        mut each: impl FnMut(&CircuitView) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = self.base.clone();
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.pop_if_empty().push("circuits");
            }
            url.query_pairs_mut()
                .append_pair("limit", &PAGE.to_string());
            if let Some(after) = &after {
                url.query_pairs_mut().append_pair("after", after);
            }
            let list: CircuitList = self.send(self.client.get(url)).await?;
            for circuit in &list.circuits {
                if circuit.key.starts_with(prefix) {
                    each(circuit)?;
                }
            }
            // By key: once past the prefix, no circuit under it follows.
            let past = list
                .circuits
                .last()
                .is_some_and(|last| last.key.as_str() > prefix && !last.key.starts_with(prefix));
            let Some(next) = list.next else {
                return Ok(());
            };
            if let Some(after) = after.as_deref().filter(|after| next.as_str() <= *after) {
                return Err(format!(
                    "admin API {}: its list's next page {:?} does not come after the page \
                     before ({:?}): stopped",
                    self.shown,
                    printable(&next),
                    printable(after)
                ));
            }
            if past {
                return Ok(());
            }
            after = Some(next);
        }
        Err(format!(
            "admin API {}: its list goes on past {MAX_PAGES} pages of {PAGE} circuits: stopped",
            self.shown
        ))
    }

    /// The circuit `key`.
    pub(crate) async fn circuit(&self, key: &str) -> Result<CircuitView, String> {
        let request = self.client.get(self.url_of(key, None));
        self.send(request).await
    }

    /// `open`, `close` or `reset` of the circuit `key`.
    pub(crate) async fn act(&self, key: &str, action: &str) -> Result<CircuitView, String> {
        let request = self.client.post(self.url_of(key, Some(action)));
        self.send(request).await
    }

    /// Changes the settings of `target` to `body` (an object of each
    /// setting's text by name), saying the change comes from `by`
    /// (`X-Fuse-Changed-By`).
    pub(crate) async fn settings(
        &self,
        target: set::Target<'_>,
        body: &serde_json::Value,
        by: &str,
    ) -> Result<SettingsChange, String> {
        let request = self
            .client
            .put(self.url_at(target.segments()))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-fuse-changed-by", by)
            .body(body.to_string());
        self.send(request).await
    }

    /// `<base>/circuits/<key>[/<action>]`, the key escaped as one segment.
    fn url_of(&self, key: &str, action: Option<&str>) -> reqwest::Url {
        match action {
            Some(action) => self.url_at(["circuits", key, action]),
            None => self.url_at(["circuits", key]),
        }
    }

    /// `<base>/<segment>/...`, each segment escaped as one.
    fn url_at<'a>(&self, path: impl IntoIterator<Item = &'a str>) -> reqwest::Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(path);
        }
        url
    }

    /// Sends `request` with the token and reads the JSON answer, or the
    /// API's error.
    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        mut request: reqwest::RequestBuilder,
    ) -> Result<T, String> {
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            // The error's URL, which `shown` names without its secrets,
            // is left out.
            .map_err(|err| {
                format!(
                    "admin API {} unreachable: {}",
                    self.shown,
                    err.without_url()
                )
            })?;
        let status = response.status();
        let body = self.answer(response).await?;
        if !status.is_success() {
            let error: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            return Err(match (error["code"].as_str(), error["error"].as_str()) {
                (Some(code), Some(message)) => {
                    format!("admin API {}: {code}: {message}", self.shown)
                }
                _ => format!("admin API {}: {status}: {}", self.shown, start(&body)),
            });
        }
        serde_json::from_str(&body).map_err(|err| {
            format!(
                "admin API {}: not a Fuse answer ({err}): {}",
                self.shown,
                start(&body)
            )
        })
    }

    /// The body of `response`, up to [`MAX_ANSWER`] bytes.
    async fn answer(&self, mut response: reqwest::Response) -> Result<String, String> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|err| {
            let err = err.without_url();
            format!("admin API {}: the answer broke off: {err}", self.shown)
        })? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(format!(
                    "admin API {}: an answer of more than {MAX_ANSWER} bytes: stopped",
                    self.shown
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

/// The start of an answer, for an error.
fn start(body: &str) -> &str {
    let end = body
        .char_indices()
        .nth(200)
        .map_or(body.len(), |(at, _)| at);
    &body[..end]
}
