//! The admin API on a loopback port: every endpoint, the token rules and
//! bad input through an HTTP client (`api`), the event stream (`events`),
//! shared circuits on every store (`shared`, on those of `stores`), and
//! the dashboard page in a headless Chromium (`browser`, over the
//! browser's debugging protocol in `cdp`; a rate circuit on it in
//! `rate_page`, openings in `opening_page`, graded admission in
//! `graded_page`).
#![cfg(feature = "admin")]

mod access;
mod api;
mod browser;
mod cdp;
#[path = "../common/mod.rs"]
mod common;
mod events;
mod graded_page;
mod opening_page;
mod rate_page;
mod settings;
#[cfg(feature = "store")]
mod shared;
#[cfg(feature = "store")]
mod stores;
mod views;

use std::net::SocketAddr;

use common::runtime;

/// Serves `router` on 127.0.0.1, a free port, on the current runtime.
async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}
