//! The tower layer and the reqwest middleware over real sockets, talking to
//! a local server that answers, fails, answers late or resets its
//! connections.
//!
//! Every scenario is written once, in `scenarios` (the servers' hints in
//! `hints`, upstreams that hang up or answer garbage in `broken`, graded
//! admission in `graded`), over a [`Client`] that each integration implements; `tower`
//! and `reqwest` run them all and add the tests only their integration has. Circuits run on a mock clock and
//! tokio's time is paused (a client timeout or a slow answer takes no real
//! time), except in one scenario that waits out a real 150 ms cooldown.

#![cfg(any(feature = "tower", feature = "reqwest"))]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::{Grading, Registry, classify::FailureKind};

mod broken;
#[path = "../common/mod.rs"]
mod common;
mod graded;
mod hints;
mod scenarios;

/// How long a client waits for an answer.
const TIMEOUT: Duration = Duration::from_millis(150);
/// The open duration of [`common::integration_config`].
const OPEN: Duration = Duration::from_secs(30);

/// What a request through the integration came to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// The server answered with this status.
    Status(u16),
    /// The circuit refused the request.
    Open {
        /// The circuit's key.
        key: String,
        /// How long until it lets a probe through.
        retry_after: Duration,
    },
    /// A closed circuit shed the request (SPEC §11).
    Shed {
        /// The circuit's key.
        key: String,
        /// Why: a ramp-up or throttling.
        why: Grading,
        /// How long the rejection says to wait.
        retry_after: Duration,
    },
    /// The request failed on the way (timeout, connection).
    Failed(FailureKind),
}

impl Outcome {
    /// A circuit's rejection: an open circuit's, or a shedding.
    fn of(open: &fuse_breaker::OpenError) -> Self {
        let key = open.key().to_owned();
        let retry_after = open.retry_after();
        match open.throttled() {
            Some(why) => Outcome::Shed {
                key,
                why,
                retry_after,
            },
            None => Outcome::Open { key, retry_after },
        }
    }
}

/// An HTTP client behind one integration.
trait Client: Sized {
    /// A client whose requests go through the circuit `name` of `registry`.
    fn new(registry: Arc<Registry>, name: &str) -> Self;

    /// `GET url`.
    fn get(&self, url: String) -> impl Future<Output = Outcome>;
}

/// One `#[tokio::test]` per scenario for the client type `$client`.
macro_rules! each_scenario {
    ($client:ty) => {
        each_scenario!(@paused $client;
            the_circuit_opens_at_the_threshold_and_sends_nothing_while_open,
            probes_go_through_after_the_cooldown,
            timeouts_count,
            timeouts_do_not_count_when_the_config_says_so,
            refused_connections_count,
            reset_connections_count,
            client_errors_and_uncounted_statuses_do_not_count,
            a_cancelled_probe_releases_its_slot,
        );
        each_scenario!(@graded $client;
            a_ramp_sheds_calls_before_they_leave_and_asks_no_wait,
        );
        each_scenario!(@hints $client;
            retry_after_seconds_keep_the_circuit_open_that_long,
            a_hint_beyond_max_open_duration_is_capped,
            a_malformed_hint_is_ignored_and_counted,
            a_hint_on_a_failure_that_does_not_open_changes_nothing,
            an_http_date_is_read_against_the_wall_clock,
        );

        each_scenario!(@broken $client;
            an_upstream_that_hangs_up_is_a_connection_failure: HangUp,
            an_upstream_that_answers_bytes_that_are_not_http_is_a_connection_failure: NotHttp,
            a_status_line_of_9999_is_a_connection_failure: BadStatus,
            a_control_byte_in_a_header_is_a_connection_failure: ControlByteInHeader,
        );

        /// The one scenario on real time, end to end.
        #[tokio::test]
        async fn a_real_cooldown_of_150_ms() {
            crate::scenarios::a_real_cooldown_of_150_ms::<$client>().await;
        }
    };
    (@paused $client:ty; $($scenario:ident,)*) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $scenario() {
                crate::scenarios::$scenario::<$client>().await;
            }
        )*
    };
    (@broken $client:ty; $($scenario:ident: $misbehaviour:ident,)*) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $scenario() {
                crate::broken::is_a_connection_failure::<$client>(
                    crate::broken::Misbehaviour::$misbehaviour,
                )
                .await;
            }
        )*
    };
    (@graded $client:ty; $($scenario:ident,)*) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $scenario() {
                crate::graded::$scenario::<$client>().await;
            }
        )*
    };
    (@hints $client:ty; $($scenario:ident,)*) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $scenario() {
                crate::hints::$scenario::<$client>().await;
            }
        )*
    };
}

#[cfg(feature = "reqwest")]
mod reqwest;
#[cfg(feature = "tower")]
mod tower;
