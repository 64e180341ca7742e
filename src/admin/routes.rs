//! The routes of an admin API and what each request does.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::Deserialize;

use super::auth::{Access, Need};
use super::circuits::{Action, Circuits};
use super::events::{Asker, EventStreams};
use super::settings::{Requested, SettingsChange};
use super::{ApiError, CircuitList, CircuitView, page};

/// Circuits in a page of the list, unless the request says.
const DEFAULT_LIMIT: usize = 1000;
/// The most circuits in a page of the list.
const MAX_LIMIT: usize = 5000;

/// Every route over `served`, with JSON errors for the others.
pub(super) fn routes(served: Served) -> axum::Router {
    axum::Router::new()
        .route("/", get(page::page))
        .route("/circuits", get(list))
        .route("/circuits/{key}", get(one))
        .route("/circuits/{key}/{action}", post(act))
        .route("/circuits/{key}/settings", put(set_circuit))
        .route("/names/{name}/settings", put(set_name))
        .route("/events", get(stream))
        .fallback(no_route)
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .with_state(Arc::new(served))
}

/// What the handlers share.
#[derive(Debug)]
pub(super) struct Served {
    pub(super) circuits: Circuits,
    pub(super) access: Access,
    pub(super) events: EventStreams,
}

type Shared = State<Arc<Served>>;

/// The list's query string.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<usize>,
    after: Option<String>,
}

async fn list(
    State(served): Shared,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<CircuitList>, ApiError> {
    served.access.check(&headers, Need::Read)?;
    let Query(query) = query.map_err(|err| {
        ApiError::bad_request(format!(
            "{}: the query takes limit (1 to {MAX_LIMIT}) and after (a key)",
            err.body_text()
        ))
    })?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be 1 to {MAX_LIMIT}, not {limit}"
        )));
    }
    let page = served.circuits.page(query.after.as_deref(), limit);
    let circuits = served.circuits.views(&page).await;
    Ok(Json(CircuitList {
        circuits,
        total: page.total,
        next: page.next,
        writable: served.access.writable(),
    }))
}

async fn one(
    State(served): Shared,
    headers: HeaderMap,
    key: Result<Path<String>, PathRejection>,
) -> Result<Json<CircuitView>, ApiError> {
    served.access.check(&headers, Need::Read)?;
    let Path(key) = key.map_err(|err| ApiError::bad_request(err.body_text()))?;
    Ok(Json(served.circuits.view(&key).await?))
}

async fn act(
    State(served): Shared,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<CircuitView>, ApiError> {
    let Path((key, action)) = path.map_err(|err| ApiError::bad_request(err.body_text()))?;
    let action = Action::parse(&action)?;
    served.access.check(&headers, Need::Write)?;
    Ok(Json(served.circuits.act(&key, action).await?))
}

async fn set_circuit(
    State(served): Shared,
    headers: HeaderMap,
    key: Result<Path<String>, PathRejection>,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Json<SettingsChange>, ApiError> {
    let Path(key) = key.map_err(|err| ApiError::bad_request(err.body_text()))?;
    let requested = settings(&served, &headers, body)?;
    Ok(Json(served.circuits.set_circuit(&key, &requested)?))
}

async fn set_name(
    State(served): Shared,
    headers: HeaderMap,
    name: Result<Path<String>, PathRejection>,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Json<SettingsChange>, ApiError> {
    let Path(name) = name.map_err(|err| ApiError::bad_request(err.body_text()))?;
    let requested = settings(&served, &headers, body)?;
    Ok(Json(served.circuits.set_name(&name, &requested)?))
}

/// The settings a request may change (the token first: a caller without
/// it learns nothing of its body's mistakes).
fn settings(
    served: &Served,
    headers: &HeaderMap,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Requested, ApiError> {
    served.access.check(headers, Need::Write)?;
    let Json(body) = body.map_err(|err| ApiError::bad_request(err.body_text()))?;
    Requested::read(headers, &body)
}

async fn stream(State(served): Shared, headers: HeaderMap) -> Response {
    let asker = if served.access.authorised(&headers) {
        Asker::Operator
    } else {
        Asker::Anonymous
    };
    match served
        .access
        .check(&headers, Need::Read)
        .and_then(|()| served.events.stream(asker))
    {
        Ok(sse) => sse.into_response(),
        Err(err) => err.into_response(),
    }
}

async fn no_route(uri: Uri) -> ApiError {
    ApiError::no_route(uri.path())
}
