//! [`ApiError`]: every refusal of the admin API, as a status and a JSON
//! body that names what was wrong.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// An admin API error: its status, a stable code and a message for people.
///
/// The body is `{"error": "<message>", "code": "<code>"}`.
///
/// ```
/// use axum::response::IntoResponse;
/// let response = fuse_breaker::admin::ApiError::not_found("fuse:nothing").into_response();
/// assert_eq!(response.status(), 404);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} {code}: {message}", .status.as_u16())]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    /// 404: no circuit has the key `key`.
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::not_found("fuse:billing");
    /// assert_eq!(err.code(), "not_found");
    /// assert!(err.message().contains("fuse:billing"));
    /// ```
    pub fn not_found(key: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no circuit has the key {key:?}"),
        )
    }

    /// 400: the request itself is wrong (`message` says how).
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::bad_request("limit must be 1 to 5000");
    /// assert_eq!((err.status().as_u16(), err.code()), (400, "bad_request"));
    /// ```
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message.into())
    }

    /// 401: the request needs the admin token and did not bring it.
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::unauthorized("no Authorization header");
    /// assert_eq!(err.status(), 401);
    /// ```
    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message.into())
    }

    /// 403: writes are off, the application set no admin token.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::admin::ApiError::read_only().code(), "read_only");
    /// ```
    pub fn read_only() -> Self {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "read_only",
            "writes are off: the application set no admin token".to_owned(),
        )
    }

    /// 405: the path exists but not with this method.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::admin::ApiError::method_not_allowed().status(), 405);
    /// ```
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this path does not take this method: reads are GET, open, close and reset are POST"
                .to_owned(),
        )
    }

    /// 404: no such path in the admin API.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::admin::ApiError::no_route("/nope").code(), "no_route");
    /// ```
    pub fn no_route(path: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no_route",
            format!(
                "no such path {path:?}: GET /, /circuits, /circuits/{{key}}, /events; \
                 POST /circuits/{{key}}/open, /close, /reset"
            ),
        )
    }

    /// 403: the request names a host the API does not answer to (as a
    /// page on another site whose name points at this address would), or
    /// none; `host` is the host it named, `why` what is wrong with it.
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::host_not_allowed("evil.example", "is not one this admin API answers to");
    /// assert_eq!((err.status().as_u16(), err.code()), (403, "host_not_allowed"));
    /// assert!(err.message().contains("\"evil.example\""));
    /// ```
    pub fn host_not_allowed(host: &str, why: &str) -> Self {
        // A long Host is named by its start.
        let host: String = host.chars().take(200).collect();
        let what = if host.is_empty() {
            why.to_owned()
        } else {
            format!("the host {host:?} {why}")
        };
        ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            format!(
                "{what}: this admin API answers to loopback (localhost, 127.0.0.1, [::1]) \
                 and to the hosts the application allows"
            ),
        )
    }

    /// 503: as many event streams are open as the API allows.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::admin::ApiError::too_many_streams(64).status(), 503);
    /// ```
    pub fn too_many_streams(limit: usize) -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_streams",
            format!("{limit} event streams are open already, the most this API serves"),
        )
    }

    /// 503: a shared circuit's store did not answer, or holds what is not
    /// a circuit (`message` names the store and the key).
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::store("store redis://127.0.0.1:1 unreachable");
    /// assert_eq!((err.status().as_u16(), err.code()), (503, "store_error"));
    /// ```
    pub fn store(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_error",
            message.into(),
        )
    }

    /// 422: settings refused: a setting no circuit has, a value that is
    /// not one, or a rule broken (`message` names the setting).
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::invalid_setting("invalid half_open_probes = 0");
    /// assert_eq!((err.status().as_u16(), err.code()), (422, "invalid_setting"));
    /// ```
    pub fn invalid_setting(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_setting",
            message.into(),
        )
    }

    /// 409: valid settings that a running circuit cannot take in place
    /// (`message` names the setting and the circuit).
    ///
    /// ```
    /// let err = fuse_breaker::admin::ApiError::not_in_place("invalid key_prefix = other");
    /// assert_eq!((err.status().as_u16(), err.code()), (409, "not_in_place"));
    /// ```
    pub fn not_in_place(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, "not_in_place", message.into())
    }

    fn new(status: StatusCode, code: &'static str, message: String) -> Self {
        ApiError {
            status,
            code,
            message,
        }
    }

    /// The HTTP status.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::admin::ApiError::read_only().status(), 403);
    /// ```
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable code in the body (`not_found`, `bad_request`, ...).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::admin::ApiError::read_only().code(), "read_only");
    /// ```
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The message for people.
    ///
    /// ```
    /// assert!(fuse_breaker::admin::ApiError::read_only().message().contains("token"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message, "code": self.code });
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"fuse\""),
            );
        }
        response
    }
}
