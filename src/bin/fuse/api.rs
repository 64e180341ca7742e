//! The `fuse` command against a service's admin API (`--url`): the list
//! read page by page, one circuit, and open, close and reset with the
//! admin token.

use fuse_breaker::admin::{CircuitList, CircuitView};

/// A service's admin API.
pub(crate) struct Api {
    base: reqwest::Url,
    token: Option<String>,
    client: reqwest::Client,
}

impl Api {
    /// The API at `url` (where the application nested the router).
    pub(crate) fn new(url: &str, token: Option<&str>) -> Result<Self, String> {
        let base = reqwest::Url::parse(url)
            .ok()
            .filter(|base| base.scheme() == "http" || base.scheme() == "https")
            .ok_or_else(|| format!("--url takes http://host:port[/prefix], not {url:?}"))?;
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .build()
            .map_err(|err| format!("cannot make an HTTP client: {err}"))?;
        Ok(Api {
            base,
            token: token.map(str::to_owned),
            client,
        })
    }

    /// Every circuit whose key starts with `prefix`, by key.
    pub(crate) async fn circuits(&self, prefix: &str) -> Result<Vec<CircuitView>, String> {
        let mut circuits = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut url = self.base.clone();
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.pop_if_empty().push("circuits");
            }
            url.query_pairs_mut().append_pair("limit", "5000");
            if let Some(after) = after.take() {
                url.query_pairs_mut().append_pair("after", &after);
            }
            let request = self.client.get(url);
            let list: CircuitList = self.send(request).await?;
            circuits.extend(
                list.circuits
                    .into_iter()
                    .filter(|circuit| circuit.key.starts_with(prefix)),
            );
            match list.next {
                Some(next) => after = Some(next),
                None => return Ok(circuits),
            }
        }
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

    /// `<base>/circuits/<key>[/<action>]`, the key escaped as one segment.
    fn url_of(&self, key: &str, action: Option<&str>) -> reqwest::Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments
                .pop_if_empty()
                .push("circuits")
                .push(key)
                .extend(action);
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
            .map_err(|err| format!("admin API {} unreachable: {err}", self.base))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|err| format!("admin API {}: the answer broke off: {err}", self.base))?;
        if !status.is_success() {
            let error: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            return Err(match (error["code"].as_str(), error["error"].as_str()) {
                (Some(code), Some(message)) => {
                    format!("admin API {}: {code}: {message}", self.base)
                }
                _ => format!("admin API {}: {status}: {body}", self.base),
            });
        }
        serde_json::from_str(&body)
            .map_err(|err| format!("admin API {}: not a Fuse answer ({err}): {body}", self.base))
    }
}
