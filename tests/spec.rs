//! One test per rule of SPEC.md §1-§5, on the public API only, driven by a
//! mock clock (time starts at 0 and moves only when a test moves it).

use std::cell::Cell;
use std::io::{self, ErrorKind};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use fuse_breaker::{
    Config, ConfigBuilder, ConfigError, Error, FailureKind, Fuse, MAX_DURATION,
    MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES, OpenError, Permit, Snapshot, State,
};
use quanta::{Clock, Mock};

mod common;
use common::{NS, just_before, secs, set_time};

const THREADS: usize = 8;

fn build(builder: ConfigBuilder) -> Config {
    builder.build().expect("a valid configuration")
}

/// Window 60 s, open 30 s, with this threshold and number of probes.
fn config(threshold: u32, probes: u32) -> Config {
    build(
        Config::builder()
            .failure_threshold(threshold)
            .half_open_probes(probes),
    )
}

fn circuit(config: Config) -> (Fuse, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    (
        Fuse::builder("spec").config(config).clock(clock).build(),
        mock,
    )
}

fn closed_permit(fuse: &Fuse) -> Permit<'_> {
    let permit = fuse.try_acquire().expect("a closed circuit admits");
    assert!(!permit.is_probe(), "expected a closed permit");
    permit
}

fn probe(fuse: &Fuse) -> Permit<'_> {
    let permit = fuse.try_acquire().expect("a probe slot is free");
    assert!(permit.is_probe(), "expected a probe");
    permit
}

fn rejection(fuse: &Fuse) -> OpenError {
    match fuse.try_acquire() {
        Ok(permit) => panic!("expected a rejection, got {permit:?}"),
        Err(err) => err,
    }
}

fn fail(fuse: &Fuse) {
    closed_permit(fuse).failure();
}

/// Records `failure_threshold` failures now; the circuit must open.
fn trip(fuse: &Fuse) {
    for _ in 0..fuse.config().failure_threshold() {
        fail(fuse);
    }
    assert_eq!(
        fuse.state(),
        State::Open,
        "the threshold must open the circuit"
    );
}

/// A snapshot as the rules expect it, compared field by field with the
/// one a circuit gives (`Snapshot` is non-exhaustive: only the crate makes
/// one).
#[derive(Debug)]
struct Expected {
    state: State,
    opened_at: Option<Duration>,
    failures: Vec<Duration>,
    half_open_successes: u32,
    half_open_inflight: u32,
}

impl PartialEq<Expected> for Snapshot {
    fn eq(&self, expected: &Expected) -> bool {
        self.state == expected.state
            && self.opened_at == expected.opened_at
            && self.failures == expected.failures
            && self.half_open_successes == expected.half_open_successes
            && self.half_open_inflight == expected.half_open_inflight
    }
}

fn closed(failures: Vec<Duration>) -> Expected {
    Expected {
        state: State::Closed,
        opened_at: None,
        failures,
        half_open_successes: 0,
        half_open_inflight: 0,
    }
}

fn open(opened_at: Duration) -> Expected {
    Expected {
        state: State::Open,
        opened_at: Some(opened_at),
        failures: Vec::new(),
        half_open_successes: 0,
        half_open_inflight: 0,
    }
}

fn half_open(opened_at: Duration, successes: u32, inflight: u32) -> Expected {
    Expected {
        state: State::HalfOpen,
        opened_at: Some(opened_at),
        failures: Vec::new(),
        half_open_successes: successes,
        half_open_inflight: inflight,
    }
}

fn io_err(kind: ErrorKind) -> io::Error {
    io::Error::new(kind, format!("{kind:?} from the dependency"))
}

// ---------------------------------------------------------------- §1 keys

#[test]
fn key_is_prefix_app_name_operation() {
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .build();
    assert_eq!(fuse.key(), "fuse:punt:billing:charge");
    assert_eq!(fuse.name(), "billing");
    assert_eq!(
        Fuse::new("billing-sdk", Config::default()).key(),
        "fuse:billing-sdk"
    );
    assert_eq!(
        Fuse::builder("billing").app("punt").build().key(),
        "fuse:punt:billing"
    );
    assert_eq!(
        Fuse::builder("billing").operation("charge").build().key(),
        "fuse:billing:charge"
    );
}

#[test]
fn key_leaves_out_empty_pieces() {
    let fuse = Fuse::builder("billing").app("").operation("").build();
    assert_eq!(fuse.key(), "fuse:billing");
    let fuse = Fuse::builder("billing").app("").operation("refund").build();
    assert_eq!(fuse.key(), "fuse:billing:refund");
    let fuse = Fuse::builder("billing").app("shop").operation("").build();
    assert_eq!(fuse.key(), "fuse:shop:billing");
    let fuse = Fuse::builder("").app("shop").operation("refund").build();
    assert_eq!(fuse.key(), "fuse:shop:refund");
}

#[test]
fn key_uses_the_configured_prefix() {
    let config = build(Config::builder().key_prefix("cb"));
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .config(config.clone())
        .build();
    assert_eq!(fuse.key(), "cb:punt:billing:charge");
    assert_eq!(Fuse::new("billing", config).key(), "cb:billing");
}

#[test]
fn key_pieces_are_used_verbatim() {
    let fuse = Fuse::builder("Billing/API v2")
        .app("My App")
        .operation("charge.Card")
        .build();
    assert_eq!(fuse.key(), "fuse:My App:Billing/API v2:charge.Card");
    assert_eq!(fuse.name(), "Billing/API v2");
}

#[test]
fn open_error_names_the_circuit_and_its_key() {
    let fuse = Fuse::builder("billing")
        .app("punt")
        .operation("charge")
        .build();
    fuse.force_open();
    let err = rejection(&fuse);
    assert_eq!(err.name(), "billing");
    assert_eq!(err.key(), "fuse:punt:billing:charge");
    assert!(
        err.to_string().contains("fuse:punt:billing:charge"),
        "{err}"
    );
}

// ---------------------------------------------------------- §2 configuration

/// Builds and expects a refusal naming `setting`; returns the error.
fn refused(builder: ConfigBuilder, setting: &str) -> ConfigError {
    let err = builder
        .build()
        .expect_err("an invalid setting must be refused");
    assert_eq!(err.setting(), setting, "{err}");
    let text = err.to_string();
    assert!(text.contains(setting), "{text:?} does not name {setting}");
    assert!(
        text.contains(err.value()),
        "{text:?} does not name the value"
    );
    err
}

fn refused_with(builder: ConfigBuilder, setting: &str, value: &str) {
    let err = refused(builder, setting);
    assert_eq!(err.value(), value, "{err}");
}

#[test]
fn config_defaults() {
    let config = Config::default();
    assert_eq!(config.failure_threshold(), 8);
    assert_eq!(config.failure_window(), secs(60));
    assert_eq!(config.open_duration(), secs(30));
    assert_eq!(config.half_open_probes(), 2);
    assert_eq!(config.counted_http_statuses(), &[502, 503, 504]);
    assert!(config.count_timeouts());
    assert!(config.count_connection_errors());
    assert!(!config.count_http_500());
    assert_eq!(config.key_prefix(), "fuse");
    assert_eq!(build(Config::builder()), config);
}

#[test]
fn config_documented_maxima_are_in_the_spec_ranges() {
    assert!((1024..=65_536).contains(&MAX_FAILURE_THRESHOLD));
    assert!((1024..=65_536).contains(&MAX_HALF_OPEN_PROBES));
    assert!(MAX_DURATION >= secs(24 * 60 * 60));
}

#[test]
fn config_failure_threshold_zero_is_refused() {
    refused_with(
        Config::builder().failure_threshold(0),
        "failure_threshold",
        "0",
    );
}

#[test]
fn config_failure_threshold_above_maximum_is_refused() {
    let over = MAX_FAILURE_THRESHOLD + 1;
    refused_with(
        Config::builder().failure_threshold(over),
        "failure_threshold",
        &over.to_string(),
    );
    refused_with(
        Config::builder().failure_threshold(u32::MAX),
        "failure_threshold",
        &u32::MAX.to_string(),
    );
    let max = build(Config::builder().failure_threshold(MAX_FAILURE_THRESHOLD));
    assert_eq!(max.failure_threshold(), MAX_FAILURE_THRESHOLD);
    assert_eq!(
        build(Config::builder().failure_threshold(1)).failure_threshold(),
        1
    );
}

#[test]
fn config_half_open_probes_zero_is_refused() {
    refused_with(
        Config::builder().half_open_probes(0),
        "half_open_probes",
        "0",
    );
}

#[test]
fn config_half_open_probes_above_maximum_is_refused() {
    let over = MAX_HALF_OPEN_PROBES + 1;
    refused_with(
        Config::builder().half_open_probes(over),
        "half_open_probes",
        &over.to_string(),
    );
    refused_with(
        Config::builder().half_open_probes(u32::MAX),
        "half_open_probes",
        &u32::MAX.to_string(),
    );
    let max = build(Config::builder().half_open_probes(MAX_HALF_OPEN_PROBES));
    assert_eq!(max.half_open_probes(), MAX_HALF_OPEN_PROBES);
    assert_eq!(
        build(Config::builder().half_open_probes(1)).half_open_probes(),
        1
    );
}

#[test]
fn config_failure_window_zero_is_refused() {
    let err = refused(
        Config::builder().failure_window(Duration::ZERO),
        "failure_window",
    );
    assert_eq!(err.value(), format!("{:?}", Duration::ZERO));
}

#[test]
fn config_failure_window_above_maximum_is_refused() {
    for bad in [MAX_DURATION + NS, Duration::MAX] {
        let err = refused(Config::builder().failure_window(bad), "failure_window");
        assert_eq!(err.value(), format!("{bad:?}"));
    }
    assert_eq!(
        build(Config::builder().failure_window(MAX_DURATION)).failure_window(),
        MAX_DURATION
    );
    assert_eq!(
        build(Config::builder().failure_window(NS)).failure_window(),
        NS
    );
}

#[test]
fn config_open_duration_zero_is_refused() {
    let err = refused(
        Config::builder().open_duration(Duration::ZERO),
        "open_duration",
    );
    assert_eq!(err.value(), format!("{:?}", Duration::ZERO));
}

#[test]
fn config_open_duration_above_maximum_is_refused() {
    for bad in [MAX_DURATION + NS, Duration::MAX] {
        let err = refused(Config::builder().open_duration(bad), "open_duration");
        assert_eq!(err.value(), format!("{bad:?}"));
    }
    assert_eq!(
        build(Config::builder().open_duration(MAX_DURATION)).open_duration(),
        MAX_DURATION
    );
    assert_eq!(
        build(Config::builder().open_duration(NS)).open_duration(),
        NS
    );
}

#[test]
fn config_http_status_below_100_is_refused() {
    refused_with(
        Config::builder().counted_http_statuses([99]),
        "counted_http_statuses",
        "99",
    );
    refused_with(
        Config::builder().counted_http_statuses([0]),
        "counted_http_statuses",
        "0",
    );
}

#[test]
fn config_http_status_above_599_is_refused() {
    refused_with(
        Config::builder().counted_http_statuses([600]),
        "counted_http_statuses",
        "600",
    );
    refused_with(
        Config::builder().counted_http_statuses([502, 600, 503]),
        "counted_http_statuses",
        "600",
    );
    let edges = build(Config::builder().counted_http_statuses([100, 599]));
    assert_eq!(edges.counted_http_statuses(), &[100, 599]);
}

#[test]
fn config_key_prefix_empty_is_refused() {
    let err = refused(Config::builder().key_prefix(""), "key_prefix");
    assert!(
        matches!(err.value(), "" | "\"\""),
        "the value of an empty prefix reads {:?}",
        err.value()
    );
}

#[test]
fn config_key_prefix_with_colon_is_refused() {
    for bad in ["a:b", ":", "fuse:"] {
        let err = refused(Config::builder().key_prefix(bad), "key_prefix");
        assert!(
            err.value().contains(bad),
            "{:?} does not name {bad:?}",
            err.value()
        );
    }
}

#[test]
fn counted_http_statuses_returns_the_list_as_set() {
    let config = build(
        Config::builder()
            .counted_http_statuses([429, 503])
            .count_http_500(true),
    );
    assert_eq!(config.counted_http_statuses(), &[429, 503]);
    assert!(config.counts_http_status(429));
    assert!(config.counts_http_status(503));
    assert!(!config.counts_http_status(502), "502 was not listed");
    let empty = build(Config::builder().counted_http_statuses([]));
    assert!(empty.counted_http_statuses().is_empty());
    assert!(!empty.counts_http_status(503));
}

#[test]
fn counts_http_status_applies_count_http_500() {
    let default = Config::default();
    assert!(!default.counts_http_status(500));
    assert!(default.counts_http_status(502));
    assert!(!default.counts(FailureKind::HttpStatus(500)));

    let with_500 = build(Config::builder().count_http_500(true));
    assert!(with_500.counts_http_status(500));
    assert!(with_500.counts(FailureKind::HttpStatus(500)));
    assert!(with_500.counts_http_status(504));
    assert!(!with_500.counts_http_status(501));
    assert_eq!(
        with_500.counted_http_statuses(),
        &[502, 503, 504],
        "count_http_500 does not rewrite the list"
    );

    let only_500 = build(
        Config::builder()
            .counted_http_statuses([])
            .count_http_500(true),
    );
    assert!(only_500.counts_http_status(500));
    assert!(!only_500.counts_http_status(502));
}

// ------------------------------------------------------------ §3 admission

#[test]
fn admission_closed_grants_a_closed_permit() {
    let (fuse, mock) = circuit(config(3, 2));
    let permit = closed_permit(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![]), "admission records nothing");
    permit.failure();
    set_time(&mock, secs(1));
    let permit = closed_permit(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![Duration::ZERO]));
    permit.ignore();
}

#[test]
fn admission_open_before_cooldown_rejects_with_retry_after() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(5));
    trip(&fuse);
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
    set_time(&mock, secs(15) + NS);
    assert_eq!(rejection(&fuse).retry_after(), just_before(secs(20)));
    set_time(&mock, just_before(secs(35)));
    let err = rejection(&fuse);
    assert_eq!(err.retry_after(), NS);
    assert_eq!(err.key(), "fuse:spec");
    assert_eq!(
        fuse.snapshot(),
        open(secs(5)),
        "a rejection changes nothing"
    );
}

#[test]
fn admission_open_at_cooldown_moves_to_half_open_with_one_in_flight() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(5));
    trip(&fuse);
    set_time(&mock, secs(35));
    let permit = probe(&fuse);
    assert_eq!(fuse.state(), State::HalfOpen);
    assert_eq!(fuse.snapshot(), half_open(secs(5), 0, 1));
    permit.ignore();
}

#[test]
fn admission_open_long_after_cooldown_moves_to_half_open() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(3600));
    let permit = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    permit.ignore();
}

#[test]
fn admission_exactly_one_caller_wins_the_move_to_half_open() {
    // Sequentially: the second caller finds HalfOpen and takes the next slot
    // of the same half-open epoch (the move does not happen twice).
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let first = probe(&fuse);
    let second = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    first.success();
    second.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 2, 0));

    // Concurrently, with one probe slot: exactly one winner; every other
    // caller sees HalfOpen full (retry_after 0), not Open.
    let (fuse, mock) = circuit(config(1, 1));
    trip(&fuse);
    for round in 0..200 {
        set_time(&mock, Duration::from_nanos(mock.value()) + secs(30));
        let start = Barrier::new(THREADS);
        let done = Barrier::new(THREADS);
        let outcomes: Vec<Result<bool, Duration>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let got = fuse.try_acquire();
                        // Hold every permit until all callers have tried.
                        done.wait();
                        match got {
                            Ok(permit) => {
                                let is_probe = permit.is_probe();
                                permit.ignore();
                                Ok(is_probe)
                            }
                            Err(err) => Err(err.retry_after()),
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes.contains(&Ok(true)),
            "round {round}: the winner probes"
        );
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Ok(true) | Err(Duration::ZERO))),
            "round {round}: losers must see HalfOpen: {outcomes:?}"
        );
        assert_eq!(fuse.snapshot().half_open_inflight, 0);
        // Reopen for the next round with a failed probe.
        probe(&fuse).failure();
        assert_eq!(fuse.state(), State::Open);
    }
}

#[test]
fn admission_half_open_with_a_free_slot_grants_a_probe() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    assert_eq!(fuse.snapshot().half_open_inflight, 1);
    let p2 = probe(&fuse);
    assert_eq!(fuse.snapshot().half_open_inflight, 2);
    let p3 = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 3));
    drop((p1, p2, p3));
}

#[test]
fn admission_half_open_full_rejects_with_zero_retry_after() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    let err = rejection(&fuse);
    assert_eq!(err.retry_after(), Duration::ZERO);
    assert_eq!(err.key(), "fuse:spec");
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    // Still full (and still zero) however long the probes take.
    set_time(&mock, secs(3600));
    assert_eq!(rejection(&fuse).retry_after(), Duration::ZERO);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    p1.ignore();
    p2.ignore();
}

// ------------------------------------------------------------- §3 verdicts

#[test]
fn verdict_closed_success_clears_the_failure_list() {
    let (fuse, mock) = circuit(config(4, 2));
    for t in 1..=3 {
        set_time(&mock, secs(t));
        fail(&fuse);
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(1), secs(2), secs(3)]));
    set_time(&mock, secs(4));
    closed_permit(&fuse).success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    // The cleared failures no longer count towards the threshold.
    for _ in 0..3 {
        fail(&fuse);
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(4); 3]));
}

#[test]
fn verdict_closed_failure_records_now() {
    let (fuse, mock) = circuit(config(8, 2));
    fail(&fuse);
    assert_eq!(
        fuse.snapshot(),
        closed(vec![Duration::ZERO]),
        "0 is a valid time"
    );
    set_time(&mock, secs(7) + NS);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![Duration::ZERO, secs(7) + NS]));
}

#[test]
fn verdict_closed_failure_uses_the_verdict_time_not_the_admission_time() {
    let (fuse, mock) = circuit(config(8, 2));
    let permit = closed_permit(&fuse);
    set_time(&mock, secs(9));
    permit.failure();
    assert_eq!(fuse.snapshot(), closed(vec![secs(9)]));
}

#[test]
fn verdict_failure_window_edge_is_inclusive() {
    let (fuse, mock) = circuit(config(8, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    set_time(&mock, secs(61));
    assert_eq!(
        fuse.snapshot().failures,
        vec![secs(1)],
        "counted at t + window"
    );
    set_time(&mock, secs(61) + NS);
    assert_eq!(fuse.snapshot().failures, vec![], "not at t + window + 1ns");

    // The same edge decides whether the circuit opens.
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    set_time(&mock, secs(61));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(61)));

    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    set_time(&mock, secs(61) + NS);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![secs(61) + NS]));
}

#[test]
fn verdict_failure_window_counts_a_failure_at_time_zero() {
    let (fuse, mock) = circuit(config(2, 2));
    fail(&fuse);
    set_time(&mock, secs(60));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), open(secs(60)));
}

#[test]
fn verdict_threshold_reached_opens_with_opened_at_now() {
    let (fuse, mock) = circuit(config(3, 2));
    for t in 1..=2 {
        set_time(&mock, secs(t));
        fail(&fuse);
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(1), secs(2)]));
    set_time(&mock, secs(3));
    fail(&fuse);
    assert_eq!(
        fuse.snapshot(),
        open(secs(3)),
        "failures cleared on opening"
    );
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
}

#[test]
fn verdict_closed_ignore_changes_nothing() {
    let (fuse, mock) = circuit(config(2, 2));
    closed_permit(&fuse).ignore();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    set_time(&mock, secs(1));
    fail(&fuse);
    for t in 2..10 {
        set_time(&mock, secs(t));
        closed_permit(&fuse).ignore();
    }
    assert_eq!(
        fuse.snapshot(),
        closed(vec![secs(1)]),
        "neither cleared nor counted"
    );
}

#[test]
fn verdict_probe_success_counts_then_closes_with_empty_failures() {
    let (fuse, mock) = circuit(config(3, 2));
    trip(&fuse); // three failures at 0, opened at 0
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    set_time(&mock, secs(31));
    p1.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 1));
    p2.success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    // The failure list starts empty: the failures that opened the circuit
    // (still inside the window) do not come back.
    set_time(&mock, secs(32));
    fail(&fuse);
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![secs(32), secs(32)]));
}

#[test]
fn verdict_probe_successes_count_across_sequential_probes() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    probe(&fuse).success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 0));
    probe(&fuse).success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    closed_permit(&fuse).success();
}

#[test]
fn verdict_probe_failure_reopens_with_opened_at_now() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    let p3 = probe(&fuse);
    set_time(&mock, secs(31));
    p1.success();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 2));
    set_time(&mock, secs(32));
    p2.failure();
    assert_eq!(
        fuse.snapshot(),
        open(secs(32)),
        "counters zeroed, opened now"
    );
    assert_eq!(rejection(&fuse).retry_after(), secs(30));
    // The last probe of the old half-open epoch is stale now.
    p3.success();
    assert_eq!(fuse.snapshot(), open(secs(32)));
    set_time(&mock, just_before(secs(62)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(62));
    probe(&fuse).ignore();
}

#[test]
fn verdict_probe_ignore_releases_the_slot() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    assert_eq!(rejection(&fuse).retry_after(), Duration::ZERO);
    p1.ignore();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    let p3 = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    p2.ignore();
    p3.ignore();
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 0));
}

// ------------------------------------------------------- §3 stale verdicts

#[test]
fn stale_closed_success_does_not_close_an_opened_circuit() {
    let (fuse, mock) = circuit(config(1, 2));
    let slow_a = closed_permit(&fuse);
    let slow_b = closed_permit(&fuse);
    let slow_c = closed_permit(&fuse);
    set_time(&mock, secs(1));
    trip(&fuse);
    set_time(&mock, secs(2));
    slow_a.success();
    assert_eq!(fuse.snapshot(), open(secs(1)));
    // Nor does a closed permit count as a probe once half-open.
    set_time(&mock, secs(31));
    let p = probe(&fuse);
    slow_b.success();
    assert_eq!(fuse.snapshot(), half_open(secs(1), 0, 1));
    slow_c.failure();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(1), 0, 1),
        "no reopening either"
    );
    p.ignore();
}

#[test]
fn stale_closed_failure_after_force_closed_is_not_counted() {
    let (fuse, mock) = circuit(config(1, 2));
    let slow = closed_permit(&fuse);
    set_time(&mock, secs(1));
    fuse.force_closed();
    set_time(&mock, secs(2));
    slow.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));

    // A permit from before an opening and a forced close is stale too.
    let (fuse, mock) = circuit(config(1, 2));
    let slow = closed_permit(&fuse);
    trip(&fuse);
    set_time(&mock, secs(1));
    fuse.force_closed();
    slow.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn stale_probe_verdicts_after_force_open_change_nothing() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    let p3 = probe(&fuse);
    set_time(&mock, secs(40));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(40)));
    set_time(&mock, secs(45));
    p1.success();
    p2.failure();
    p3.ignore();
    assert_eq!(
        fuse.snapshot(),
        open(secs(40)),
        "the stale failure must not reopen"
    );
    assert_eq!(rejection(&fuse).retry_after(), secs(25));
}

#[test]
fn stale_probe_verdicts_after_reset_change_nothing() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    fuse.reset();
    set_time(&mock, secs(31));
    p1.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    p2.success();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn stale_probe_from_an_earlier_half_open_epoch_changes_nothing() {
    let (fuse, mock) = circuit(config(1, 4));
    trip(&fuse);
    set_time(&mock, secs(30));
    let old_a = probe(&fuse);
    let old_b = probe(&fuse);
    let old_c = probe(&fuse);
    set_time(&mock, secs(31));
    probe(&fuse).failure(); // reopens at 31 s
    set_time(&mock, secs(61));
    let current = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(secs(31), 0, 1));
    old_a.ignore();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(31), 0, 1),
        "stale ignore frees nothing"
    );
    old_b.success();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(31), 0, 1),
        "stale success counts nothing"
    );
    old_c.failure();
    assert_eq!(
        fuse.snapshot(),
        half_open(secs(31), 0, 1),
        "stale failure reopens nothing"
    );
    current.ignore();
}

// ---------------------------------------------------------- §3 manual control

#[test]
fn force_open_opens_now_and_probes_after_open_duration() {
    let (fuse, mock) = circuit(config(8, 2));
    set_time(&mock, secs(5));
    fail(&fuse);
    set_time(&mock, secs(10));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(10)), "failures cleared");
    set_time(&mock, just_before(secs(40)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(40));
    let p = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(secs(10), 0, 1));
    p.success();
}

#[test]
fn force_open_while_open_restarts_the_cooldown() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(20));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(20)));
    set_time(&mock, secs(30));
    assert_eq!(rejection(&fuse).retry_after(), secs(20));
}

#[test]
fn force_open_from_half_open_clears_the_counters() {
    let (fuse, mock) = circuit(config(1, 3));
    trip(&fuse);
    set_time(&mock, secs(30));
    probe(&fuse).success();
    let held = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 1, 1));
    set_time(&mock, secs(33));
    fuse.force_open();
    assert_eq!(fuse.snapshot(), open(secs(33)));
    drop(held);
    assert_eq!(fuse.snapshot(), open(secs(33)));
}

#[test]
fn force_closed_closes_and_clears_failures() {
    let (fuse, mock) = circuit(config(3, 2));
    fail(&fuse);
    fail(&fuse);
    fuse.force_closed();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    // The cleared failures no longer count: two more do not open it.
    fail(&fuse);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);

    fail(&fuse);
    assert_eq!(fuse.state(), State::Open);
    fuse.force_closed();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    closed_permit(&fuse).success();

    trip(&fuse);
    set_time(&mock, secs(30));
    let p = probe(&fuse);
    fuse.force_closed();
    assert_eq!(fuse.snapshot(), closed(vec![]));
    p.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn reset_gives_a_fresh_closed_circuit() {
    let fresh = circuit(config(2, 2)).0.snapshot();
    assert_eq!(fresh, closed(vec![]));

    let (fuse, mock) = circuit(config(2, 2));
    fail(&fuse);
    fuse.reset();
    assert_eq!(fuse.snapshot(), fresh);

    trip(&fuse);
    fuse.reset();
    assert_eq!(fuse.snapshot(), fresh);
    closed_permit(&fuse).success();

    trip(&fuse);
    set_time(&mock, secs(30));
    let p = probe(&fuse);
    fuse.reset();
    assert_eq!(fuse.snapshot(), fresh);
    assert_eq!(fuse.state(), State::Closed);
    drop(p);
    assert_eq!(fuse.snapshot(), fresh);
    // It behaves as fresh: the threshold is needed again.
    fail(&fuse);
    assert_eq!(fuse.state(), State::Closed);
    fail(&fuse);
    assert_eq!(fuse.state(), State::Open);
}

#[test]
fn reset_makes_earlier_permits_stale() {
    // A permit of the very first epoch: reset must not bring that epoch back.
    let (fuse, _mock) = circuit(config(1, 2));
    let first = closed_permit(&fuse);
    fuse.reset();
    first.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));

    let (fuse, _mock) = circuit(config(1, 2));
    let first = closed_permit(&fuse);
    fuse.force_open();
    fuse.reset();
    fuse.reset();
    first.failure();
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

// --------------------------------------------------------- §3 reads only read

#[test]
fn state_and_snapshot_only_read_an_open_circuit_past_its_cooldown() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(31));
    for _ in 0..3 {
        assert_eq!(fuse.state(), State::Open);
        assert_eq!(fuse.snapshot(), open(Duration::ZERO));
    }
    set_time(&mock, secs(3600));
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot(), open(Duration::ZERO));
    // The call makes the move, and nothing was used up by the reads.
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    drop((p1, p2));
}

#[test]
fn state_and_snapshot_only_read_a_closed_circuit() {
    let (fuse, mock) = circuit(config(2, 2));
    fail(&fuse);
    set_time(&mock, secs(61));
    assert_eq!(fuse.snapshot(), closed(vec![]), "aged out of the view");
    assert_eq!(fuse.state(), State::Closed);
    // Reading does not record, clear or open anything.
    set_time(&mock, secs(62));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![secs(62)]));
}

// ----------------------------------------------------------------- §5 snapshot

#[test]
fn snapshot_while_closed_lists_failures_inside_the_window_oldest_first() {
    let (fuse, mock) = circuit(config(8, 2));
    for t in [0, 10, 20, 30] {
        set_time(&mock, secs(t));
        fail(&fuse);
    }
    assert_eq!(
        fuse.snapshot(),
        closed(vec![Duration::ZERO, secs(10), secs(20), secs(30)])
    );
    set_time(&mock, secs(70));
    assert_eq!(fuse.snapshot(), closed(vec![secs(10), secs(20), secs(30)]));
    set_time(&mock, secs(75));
    assert_eq!(fuse.snapshot(), closed(vec![secs(20), secs(30)]));
    set_time(&mock, secs(90));
    assert_eq!(fuse.snapshot(), closed(vec![secs(30)]));
    set_time(&mock, secs(90) + NS);
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

#[test]
fn snapshot_failures_stay_oldest_first_over_many_failures() {
    // Threshold 5, window 10 s, one failure every 3 s: at most four are
    // ever inside the window, so the circuit never opens while far more
    // failures than the threshold are recorded in total.
    let config = build(
        Config::builder()
            .failure_threshold(5)
            .failure_window(secs(10)),
    );
    let (fuse, mock) = circuit(config);
    let mut recorded = Vec::new();
    for i in 0..40 {
        let t = secs(3 * i);
        set_time(&mock, t);
        fail(&fuse);
        recorded.push(t);
        let expected: Vec<Duration> = recorded
            .iter()
            .copied()
            .filter(|&at| at + secs(10) >= t)
            .collect();
        assert_eq!(
            fuse.snapshot(),
            closed(expected),
            "after the failure at {t:?}"
        );
    }
}

#[test]
fn snapshot_while_open_has_opened_at_and_no_failures() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(4));
    fail(&fuse);
    set_time(&mock, secs(5));
    fail(&fuse);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::Open);
    assert_eq!(snap.opened_at, Some(secs(5)));
    assert!(snap.failures.is_empty());
    assert_eq!((snap.half_open_successes, snap.half_open_inflight), (0, 0));
}

#[test]
fn snapshot_while_half_open_has_opened_at_and_counters() {
    let (fuse, mock) = circuit(config(1, 3));
    set_time(&mock, secs(5));
    trip(&fuse);
    set_time(&mock, secs(40));
    probe(&fuse).success();
    let held = probe(&fuse);
    let snap = fuse.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.opened_at, Some(secs(5)));
    assert!(snap.failures.is_empty());
    assert_eq!(snap.half_open_successes, 1);
    assert_eq!(snap.half_open_inflight, 1);
    held.ignore();
}

#[test]
fn snapshot_after_closing_has_no_opened_at() {
    let (fuse, mock) = circuit(config(1, 1));
    trip(&fuse);
    set_time(&mock, secs(30));
    probe(&fuse).success();
    assert_eq!(fuse.snapshot().opened_at, None);
    assert_eq!(fuse.snapshot(), closed(vec![]));
}

// ------------------------------------------------------- §4 classification

#[test]
fn classify_timeout_is_a_counted_failure() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(3));
    let out: Result<(), _> = fuse.run(|| Err(io_err(ErrorKind::TimedOut)));
    match out {
        Err(Error::Inner(err)) => assert_eq!(err.kind(), ErrorKind::TimedOut),
        other => panic!("expected the inner error, got {other:?}"),
    }
    assert_eq!(fuse.snapshot(), closed(vec![secs(3)]));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert_eq!(fuse.snapshot(), open(secs(3)));
}

#[test]
fn classify_connection_refused_is_a_counted_failure() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(3));
    let out: Result<(), _> = fuse.run(|| Err(io_err(ErrorKind::ConnectionRefused)));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::ConnectionRefused));
    assert_eq!(fuse.snapshot(), closed(vec![secs(3)]));
}

#[test]
fn classify_other_error_is_ignored_and_returned_unchanged() {
    let (fuse, mock) = circuit(config(1, 2));
    set_time(&mock, secs(2));
    let out: Result<(), _> = fuse.run(|| Err(io::Error::new(ErrorKind::NotFound, "no such card")));
    match out {
        Err(Error::Inner(err)) => {
            assert_eq!(err.kind(), ErrorKind::NotFound);
            assert_eq!(err.to_string(), "no such card");
        }
        other => panic!("expected the inner error unchanged, got {other:?}"),
    }
    assert_eq!(fuse.snapshot(), closed(vec![]), "not counted");

    // And an ignored error does not clear earlier failures either.
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    fail(&fuse);
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::NotFound)));
    assert_eq!(fuse.snapshot(), closed(vec![secs(1)]));
}

#[test]
fn classify_count_timeouts_false_ignores_timeouts() {
    let config = build(Config::builder().failure_threshold(1).count_timeouts(false));
    let (fuse, _mock) = circuit(config);
    let out = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::TimedOut));
    assert_eq!(fuse.snapshot(), closed(vec![]));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::ConnectionRefused)));
    assert_eq!(fuse.state(), State::Open, "connection errors still count");
}

#[test]
fn classify_count_connection_errors_false_ignores_connection_errors() {
    let config = build(
        Config::builder()
            .failure_threshold(1)
            .count_connection_errors(false),
    );
    let (fuse, _mock) = circuit(config);
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::ConnectionRefused)));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::ConnectionReset)));
    assert_eq!(fuse.snapshot(), closed(vec![]));
    let _ = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert_eq!(fuse.state(), State::Open, "timeouts still count");
}

#[test]
fn classify_http_statuses_follow_the_configuration() {
    let run_status = |fuse: &Fuse, status: u16| {
        let out = fuse.run(|| Err::<(), _>(FailureKind::HttpStatus(status)));
        assert_eq!(out, Err(Error::Inner(FailureKind::HttpStatus(status))));
    };
    let (fuse, _mock) = circuit(config(8, 2));
    for status in [100, 400, 404, 418, 429, 500, 501, 599] {
        run_status(&fuse, status);
    }
    assert_eq!(
        fuse.snapshot(),
        closed(vec![]),
        "none of these count by default"
    );
    for status in [502, 503, 504] {
        run_status(&fuse, status);
    }
    assert_eq!(fuse.snapshot().failures.len(), 3);

    let (fuse, _mock) = circuit(build(Config::builder().count_http_500(true)));
    run_status(&fuse, 500);
    assert_eq!(fuse.snapshot().failures.len(), 1);

    let (fuse, _mock) = circuit(build(Config::builder().counted_http_statuses([429])));
    run_status(&fuse, 503);
    assert_eq!(fuse.snapshot().failures.len(), 0);
    run_status(&fuse, 429);
    assert_eq!(fuse.snapshot().failures.len(), 1);

    let (fuse, _mock) = circuit(config(8, 2));
    let _ = fuse.run(|| Err::<(), _>(FailureKind::Other));
    assert_eq!(fuse.snapshot().failures.len(), 0);
}

#[test]
fn run_ok_is_a_success() {
    let (fuse, mock) = circuit(config(8, 2));
    fail(&fuse);
    set_time(&mock, secs(1));
    let calls = Cell::new(0);
    let out = fuse.run(|| {
        calls.set(calls.get() + 1);
        Ok::<_, io::Error>("charged")
    });
    assert_eq!(out.ok(), Some("charged"));
    assert_eq!(calls.get(), 1);
    assert_eq!(
        fuse.snapshot(),
        closed(vec![]),
        "the success cleared the list"
    );
}

#[test]
fn run_on_an_open_circuit_does_not_call() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(12));
    let calls = Cell::new(0);
    let out = fuse.run(|| {
        calls.set(calls.get() + 1);
        Ok::<_, io::Error>(())
    });
    match out {
        Err(Error::Open(err)) => {
            assert_eq!(err.retry_after(), secs(18));
            assert_eq!(err.key(), "fuse:spec");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(calls.get(), 0);
}

#[test]
fn run_with_is_failure_overrides_the_classification() {
    let (fuse, _mock) = circuit(config(8, 2));
    let out = fuse.run_with(
        || Err::<(), _>(io_err(ErrorKind::NotFound)),
        |_| true,
        |()| true,
    );
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::NotFound));
    assert_eq!(
        fuse.snapshot().failures.len(),
        1,
        "NotFound counted on request"
    );
    let out = fuse.run_with(
        || Err::<(), _>(io_err(ErrorKind::TimedOut)),
        |_| false,
        |()| true,
    );
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::TimedOut));
    assert_eq!(
        fuse.snapshot().failures.len(),
        1,
        "timeout ignored on request"
    );
    // The predicate sees the error itself.
    let _ = fuse.run_with(
        || Err::<(), _>("HTTP 503"),
        |e: &&str| e.ends_with("503"),
        |()| true,
    );
    let _ = fuse.run_with(
        || Err::<(), _>("HTTP 404"),
        |e: &&str| e.ends_with("503"),
        |()| true,
    );
    assert_eq!(fuse.snapshot().failures.len(), 2);
}

#[test]
fn run_with_is_success_false_returns_the_value_and_counts_a_failure() {
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(4));
    let out = fuse.run_with(
        || Ok::<Vec<u32>, io::Error>(vec![]),
        |_| true,
        |hits| !hits.is_empty(),
    );
    assert_eq!(out.ok(), Some(vec![]));
    assert_eq!(fuse.snapshot(), closed(vec![secs(4)]));
    let out = fuse.run_with(
        || Ok::<Vec<u32>, io::Error>(vec![7]),
        |_| true,
        |hits| !hits.is_empty(),
    );
    assert_eq!(out.ok(), Some(vec![7]));
    assert_eq!(
        fuse.snapshot(),
        closed(vec![]),
        "a true is_success is a success"
    );
    for _ in 0..2 {
        let _ = fuse.run_with(|| Ok::<u8, io::Error>(0), |_| true, |v| *v != 0);
    }
    assert_eq!(fuse.snapshot(), open(secs(4)));
}

#[test]
fn ignored_error_during_a_probe_releases_the_slot() {
    let (fuse, mock) = circuit(config(1, 1));
    trip(&fuse);
    set_time(&mock, secs(30));
    let out = fuse.run(|| Err::<(), _>(io_err(ErrorKind::NotFound)));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::NotFound));
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 0));
    let p = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 1));
    p.success();
    assert_eq!(fuse.state(), State::Closed);
}

#[test]
fn counted_error_during_a_probe_reopens() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(30));
    let out = fuse.run(|| Err::<(), _>(io_err(ErrorKind::TimedOut)));
    assert!(matches!(out, Err(Error::Inner(_))));
    assert_eq!(fuse.snapshot(), open(secs(30)));
}

#[test]
fn run_async_classifies_like_run() {
    use futures::executor::block_on;
    let (fuse, mock) = circuit(config(2, 2));
    set_time(&mock, secs(1));
    let out = block_on(fuse.run_async(async { Err::<(), _>(io_err(ErrorKind::TimedOut)) }));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::TimedOut));
    let out = block_on(fuse.run_async(async { Err::<(), _>(io_err(ErrorKind::NotFound)) }));
    assert!(matches!(&out, Err(Error::Inner(e)) if e.kind() == ErrorKind::NotFound));
    assert_eq!(fuse.snapshot(), closed(vec![secs(1)]));
    let out = block_on(fuse.run_async(async { Ok::<_, io::Error>(5) }));
    assert_eq!(out.ok(), Some(5));
    assert_eq!(fuse.snapshot(), closed(vec![]));
    let out = block_on(fuse.run_async_with(async { Ok::<_, io::Error>(0) }, |_| true, |v| *v > 0));
    assert_eq!(out.ok(), Some(0));
    assert_eq!(fuse.snapshot(), closed(vec![secs(1)]));
    let out = block_on(fuse.run_async_with(
        async { Err::<(), _>(io_err(ErrorKind::NotFound)) },
        |_| true,
        |()| true,
    ));
    assert!(out.is_err());
    assert_eq!(fuse.snapshot(), open(secs(1)));
}

// ------------------------------------------------------------ coarse clock

#[test]
fn coarse_clock_on_a_mock_clock_follows_the_mock() {
    let (clock, mock) = Clock::mock();
    let fuse = Fuse::builder("coarse")
        .config(config(1, 1))
        .clock(clock)
        .coarse_clock(true)
        .build();
    set_time(&mock, secs(5));
    fuse.try_acquire().expect("closed").failure();
    assert_eq!(fuse.snapshot(), open(secs(5)));
    set_time(&mock, just_before(secs(35)));
    assert_eq!(rejection(&fuse).retry_after(), NS);
    set_time(&mock, secs(35));
    probe(&fuse).success();
    assert_eq!(fuse.state(), State::Closed);
}
