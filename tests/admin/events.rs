//! The event stream (`GET /events`) read as it comes, through an HTTP
//! client on a loopback port.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::admin::{Admin, TransitionView};
use fuse_breaker::{Config, Registry};

use super::{runtime, serve};

/// An open event stream and what was read of it.
struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    async fn open(url: &str) -> Stream {
        Stream::open_with(url, None).await
    }

    /// A stream opened with the bearer `token`, if any.
    async fn open_with(url: &str, token: Option<&str>) -> Stream {
        let response = request(url, token).send().await.expect("the stream opens");
        assert_eq!(response.status(), 200);
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Stream {
            response,
            buffer: String::new(),
        }
    }

    /// The next event: its name and data (comments skipped), within 5 s.
    async fn next(&mut self) -> (String, String) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut name, mut data) = (String::new(), Vec::new());
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        value.trim().clone_into(&mut name);
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push(value.trim_start().to_owned());
                    }
                }
                if !name.is_empty() || !data.is_empty() {
                    return (name, data.join("\n"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.response.chunk())
                .await
                .expect("an event within 5 s")
                .expect("the stream reads")
                .expect("the stream stays open");
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    async fn transition(&mut self) -> TransitionView {
        let (name, data) = self.next().await;
        assert_eq!(name, "transition", "{data}");
        serde_json::from_str(&data).unwrap_or_else(|err| panic!("{err}: {data}"))
    }
}

/// `GET url` with the bearer `token`, if any.
fn request(url: &str, token: Option<&str>) -> reqwest::RequestBuilder {
    let request = reqwest::Client::new().get(url);
    match token {
        Some(token) => request.header("authorization", format!("Bearer {token}")),
        None => request,
    }
}

#[test]
fn every_transition_is_an_event_as_it_happens_to_every_stream() {
    runtime().block_on(async {
        let config = Config::builder().failure_threshold(2).build().unwrap();
        let registry = Arc::new(Registry::new(config));
        let billing = registry.get("billing");
        let base = format!(
            "http://{}",
            serve(Admin::new().registry(registry.clone()).router().unwrap()).await
        );
        let mut first = Stream::open(&format!("{base}/events")).await;
        let mut second = Stream::open(&format!("{base}/events")).await;

        billing.try_acquire().unwrap().failure();
        billing.try_acquire().unwrap().failure();
        // A circuit made after the streams opened.
        registry.get("search").force_open();
        for stream in [&mut first, &mut second] {
            let opened = stream.transition().await;
            assert_eq!(
                (
                    opened.key.as_str(),
                    opened.from.as_str(),
                    opened.to.as_str(),
                    opened.reason.as_str()
                ),
                ("fuse:billing", "closed", "open", "threshold_reached")
            );
            humantime::parse_rfc3339(&opened.at).unwrap();
            // The first opening in a row, for the open duration.
            assert_eq!((opened.openings, opened.open_for_ms), (1, Some(30_000)));
            let forced = stream.transition().await;
            assert_eq!(
                (forced.key.as_str(), forced.reason.as_str()),
                ("fuse:search", "forced")
            );
        }
        billing.force_closed();
        let closed = first.transition().await;
        assert_eq!(
            (closed.to.as_str(), closed.reason.as_str()),
            ("closed", "forced")
        );
        assert_eq!((closed.openings, closed.open_for_ms), (0, None));
    });
}

#[test]
fn a_stream_that_falls_behind_is_told_what_it_missed() {
    runtime().block_on(async {
        let registry = Arc::new(Registry::new(Config::default()));
        let billing = registry.get("billing");
        let base = format!(
            "http://{}",
            serve(Admin::new().registry(registry).router().unwrap()).await
        );
        let mut stream = Stream::open(&format!("{base}/events")).await;
        // Far more transitions than the stream's backlog and the socket's
        // buffers hold, before the client reads any.
        for _ in 0..100_000 {
            billing.force_open();
        }
        let mut lagged = None;
        let mut read = 0;
        while lagged.is_none() {
            let (name, data) = stream.next().await;
            read += 1;
            if name == "lagged" {
                let missed: serde_json::Value = serde_json::from_str(&data).unwrap();
                lagged = missed["missed"].as_u64();
            }
            assert!(read <= 100_000, "no lagged event");
        }
        assert!(lagged.unwrap() > 0);
    });
}

#[test]
fn streams_past_the_limit_are_refused_and_their_slots_come_back() {
    runtime().block_on(async {
        let registry = Arc::new(Registry::new(Config::default()));
        let base = format!(
            "http://{}",
            serve(
                Admin::new()
                    .registry(registry)
                    .max_streams(2)
                    .router()
                    .unwrap()
            )
            .await
        );
        let url = format!("{base}/events");
        let one = Stream::open(&url).await;
        let _two = Stream::open(&url).await;
        let refused = reqwest::get(&url).await.unwrap();
        assert_eq!(refused.status(), 503);
        let body: serde_json::Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
        assert_eq!(body["code"], "too_many_streams");
        drop(one);
        // The server sees the closed connection at its next write or poll.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let again = reqwest::get(&url).await.unwrap();
            if again.status() == 200 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the slot never came back"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

#[test]
fn clients_without_the_token_cannot_take_the_slots_of_those_with_it() {
    runtime().block_on(async {
        let registry = Arc::new(Registry::new(Config::default()));
        let admin = Admin::new()
            .registry(registry)
            .token("s3cret")
            .max_streams(2);
        let base = format!("http://{}", serve(admin.router().unwrap()).await);
        let url = format!("{base}/events");
        // Anonymous clients, and one with a wrong token, take every slot
        // they may have.
        let _one = Stream::open(&url).await;
        let _two = Stream::open_with(&url, Some("guess")).await;
        for token in [None, Some("guess")] {
            let refused = request(&url, token).send().await.unwrap();
            assert_eq!(refused.status(), 503, "{token:?}");
        }
        // The operator's streams still open, up to as many again.
        let mut operator = Vec::new();
        for _ in 0..2 {
            operator.push(Stream::open_with(&url, Some("s3cret")).await);
        }
        let refused = request(&url, Some("s3cret")).send().await.unwrap();
        assert_eq!(refused.status(), 503);
        let body: serde_json::Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
        assert_eq!(body["code"], "too_many_streams");
    });
}
