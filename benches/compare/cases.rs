//! Constructors, checks and the cases: one criterion group each.

use super::{
    AtomicLoad, AtomicU64, Bare, Barrier, Bencher, BenchmarkGroup, Bm, BmMockClock, Breaker, CbRs,
    Config, Criterion, Duration, Fail, FetchAdd, Fuse, FuseBuilder, Instant, InstantNow, LONG,
    Mutex, MutexCounter, Op, Ordering, QuantaNow, QuantaRecent, Tower, WallTime, black_box, fail,
    fuse_id, poll_now, succeed, thread, timed,
};

/// Fuse reading its time coarsely (`FuseBuilder::coarse_clock`): one
/// atomic load of a time refreshed by an upkeep thread.
pub(crate) fn fuse_coarse(name: &str) -> FuseBuilder {
    Fuse::builder(name).coarse_clock(true)
}

pub(crate) fn fuse_config() -> fuse_breaker::config::ConfigBuilder {
    Config::builder().open_duration(LONG)
}

pub(crate) fn failsafe_consecutive(
    failures: u32,
    cooldown: Duration,
) -> failsafe::StateMachine<
    failsafe::failure_policy::ConsecutiveFailures<failsafe::backoff::Constant>,
    (),
> {
    let policy = failsafe::failure_policy::consecutive_failures(
        failures,
        failsafe::backoff::constant(cooldown),
    );
    failsafe::Config::new().failure_policy(policy).build()
}

/// failsafe's default policy, `Config::new().build()`: success rate over a
/// 30 s window, or else 5 consecutive failures; jittered backoff 10..300 s.
pub(crate) fn failsafe_default() -> impl Breaker + Clone + Send {
    failsafe::Config::new().build()
}

/// The default policy's shape with thresholds it never reaches: a required
/// success rate of 0 and `u32::MAX` consecutive failures.
pub(crate) fn failsafe_default_never_trips() -> impl Breaker + Clone + Send {
    use failsafe::FailurePolicy;
    use failsafe::failure_policy::{consecutive_failures, success_rate_over_time_window};
    let backoff = || failsafe::backoff::equal_jittered(Duration::from_secs(10), LONG);
    let policy = success_rate_over_time_window(0.0, u32::MAX, Duration::from_secs(30), backoff())
        .or_else(consecutive_failures(u32::MAX, backoff()));
    failsafe::Config::new().failure_policy(policy).build()
}

pub(crate) fn cbrs() -> circuitbreaker_rs::BreakerBuilder<circuitbreaker_rs::DefaultPolicy, Fail> {
    CbRs::builder()
}

pub(crate) fn tower_builder() -> tower_resilience_circuitbreaker::CircuitBreakerConfigBuilder<
    tower_resilience_circuitbreaker::DefaultClassifier,
> {
    tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
}

/// Calls [`fail`] until the breaker rejects a call (it is open).
pub(crate) fn trip(breaker: &mut impl Breaker, name: &str) {
    for _ in 0..100_000 {
        if breaker.call(fail).is_none() {
            return;
        }
    }
    panic!("{name} did not open after 100000 failures");
}

pub(crate) fn assert_rejects(breaker: &mut impl Breaker, name: &str) {
    assert!(breaker.call(succeed).is_none(), "{name} is not open");
}

pub(crate) fn assert_closed(breaker: &impl Breaker, name: &str) {
    assert_ne!(breaker.closed(), Some(false), "{name} is not closed");
}

/// A `prepare` that checks the breaker is still closed.
pub(crate) fn still_closed<B: Breaker>(name: &'static str) -> impl FnMut(&mut B) {
    move |breaker| assert_closed(breaker, name)
}

/// A `prepare` that trips the breaker with failures (a no-op when it is
/// open already) and checks that it rejects.
pub(crate) fn tripped<B: Breaker>(name: &'static str) -> impl FnMut(&mut B) {
    move |breaker| {
        trip(breaker, name);
        assert_rejects(breaker, name);
    }
}

// ------------------------------------------------------------------- cases

/// Times `op` on `breaker` with [`timed`]; `prepare` runs before each batch,
/// untimed.
pub(crate) fn bench_calls<B: Breaker>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut breaker: B,
    op: impl Op,
    mut prepare: impl FnMut(&mut B),
) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            prepare(&mut breaker);
            timed(&mut breaker, op, iters)
        });
    });
}

pub(crate) fn baselines(c: &mut Criterion) {
    // quanta's upkeep thread, which `recent` reads, while the group runs.
    let _upkeep = quanta::Upkeep::new(Duration::from_millis(1))
        .start()
        .expect("quanta's upkeep thread");
    let word = AtomicU64::new(0);
    let counter = Mutex::new(0);
    let mut group = c.benchmark_group("baseline");
    bench_calls(&mut group, "closure", Bare, succeed, |_| {});
    bench_calls(
        &mut group,
        "atomic_load",
        AtomicLoad(&word),
        succeed,
        |_| {},
    );
    bench_calls(&mut group, "fetch_add", FetchAdd(&word), succeed, |_| {});
    bench_calls(
        &mut group,
        "mutex_counter",
        MutexCounter(&counter),
        succeed,
        |_| {},
    );
    let clock = quanta::Clock::new();
    bench_calls(
        &mut group,
        "quanta_now",
        QuantaNow(clock.clone()),
        succeed,
        |_| {},
    );
    bench_calls(
        &mut group,
        "quanta_recent",
        QuantaRecent(clock),
        succeed,
        |_| {},
    );
    bench_calls(&mut group, "instant_now", InstantNow, succeed, |_| {});
    group.finish();
}

pub(crate) fn closed_success(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_success");
    let fuse = Fuse::new("closed-success", Config::default());
    bench_calls(&mut group, fuse_id(), &fuse, succeed, still_closed("fuse"));
    let coarse = fuse_coarse("closed-success-coarse").build();
    bench_calls(
        &mut group,
        "fuse_coarse",
        &coarse,
        succeed,
        still_closed("fuse_coarse"),
    );
    let consecutive = failsafe_consecutive(5, Duration::from_secs(30));
    bench_calls(
        &mut group,
        "failsafe_consecutive",
        consecutive,
        succeed,
        still_closed("failsafe"),
    );
    bench_calls(
        &mut group,
        "failsafe_default",
        failsafe_default(),
        succeed,
        still_closed("failsafe"),
    );
    let recloser = recloser::Recloser::custom().build();
    bench_calls(&mut group, "recloser", &recloser, succeed, |_| {});
    bench_calls(
        &mut group,
        "circuitbreaker_rs",
        cbrs().build(),
        succeed,
        still_closed("cbrs"),
    );
    let tower = Tower::new(tower_builder());
    bench_calls(
        &mut group,
        "tower_resilience (noop-waker)",
        tower,
        succeed,
        still_closed("tower"),
    );
    let bm = Bm::builder("closed-success").build();
    bench_calls(
        &mut group,
        "breaker_machines",
        bm,
        succeed,
        still_closed("bm"),
    );
    group.finish();
}

pub(crate) fn open_rejected(c: &mut Criterion) {
    let mut group = c.benchmark_group("open_rejected");
    let force = |b: &mut &Fuse| {
        b.force_open();
        assert_rejects(b, "fuse");
    };

    let fuse = Fuse::new("open-rejected", fuse_config().build().expect("config"));
    bench_calls(&mut group, fuse_id(), &fuse, succeed, force);
    let coarse = fuse_coarse("open-rejected-coarse")
        .config(fuse_config().build().expect("config"))
        .build();
    bench_calls(&mut group, "fuse_coarse", &coarse, succeed, force);
    let consecutive = failsafe_consecutive(1, LONG);
    bench_calls(
        &mut group,
        "failsafe_consecutive",
        consecutive,
        succeed,
        tripped("failsafe"),
    );
    // The default backoff is jittered between 5 and 10 s for a first
    // opening: longer than one benchmark, and re-tripped before each batch.
    let default = failsafe_default();
    bench_calls(
        &mut group,
        "failsafe_default",
        default,
        succeed,
        tripped("failsafe"),
    );
    let recloser = recloser::Recloser::custom().open_wait(LONG).build();
    bench_calls(
        &mut group,
        "recloser",
        &recloser,
        succeed,
        tripped("recloser"),
    );
    let cb = cbrs().cooldown(LONG).build();
    bench_calls(
        &mut group,
        "circuitbreaker_rs",
        cb,
        succeed,
        |b: &mut CbRs| {
            b.force_open();
            assert_rejects(b, "circuitbreaker_rs");
        },
    );
    let tower = Tower::new(tower_builder().wait_duration_in_open(LONG));
    let id = "tower_resilience (noop-waker)";
    bench_calls(&mut group, id, tower, succeed, |b: &mut Tower| {
        poll_now(b.0.force_open());
        assert_rejects(b, "tower_resilience");
    });
    let bm = Bm::builder("open-rejected")
        .half_open_timeout_secs(LONG.as_secs_f64())
        .build();
    bench_calls(&mut group, "breaker_machines", bm, succeed, tripped("bm"));
    group.finish();
}

pub(crate) fn closed_failure(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_failure");
    // Threshold 4096, window 1 ns: see the crate doc above.
    let config = Config::builder()
        .failure_threshold(fuse_breaker::config::MAX_FAILURE_THRESHOLD)
        .failure_window(Duration::from_nanos(1))
        .build()
        .expect("config");
    let fuse = Fuse::new("closed-failure", config);
    bench_calls(&mut group, fuse_id(), &fuse, fail, still_closed("fuse"));
    let consecutive = failsafe_consecutive(u32::MAX, Duration::from_secs(30));
    bench_calls(
        &mut group,
        "failsafe_consecutive",
        consecutive,
        fail,
        still_closed("failsafe"),
    );
    let default = failsafe_default_never_trips();
    bench_calls(
        &mut group,
        "failsafe_default",
        default,
        fail,
        still_closed("failsafe"),
    );
    // recloser's thresholds are failure rates; above 100 % it never trips.
    let recloser = recloser::Recloser::custom().error_rate_closed(2.0).build();
    bench_calls(&mut group, "recloser", &recloser, fail, |_| {});
    let cb = cbrs()
        .failure_threshold(2.0)
        .min_throughput(u64::MAX)
        .consecutive_failures(u64::MAX)
        .build();
    bench_calls(
        &mut group,
        "circuitbreaker_rs",
        cb,
        fail,
        still_closed("cbrs"),
    );
    let tower = Tower::new(
        tower_builder()
            .sliding_window_size(usize::MAX)
            .minimum_number_of_calls(usize::MAX),
    );
    bench_calls(
        &mut group,
        "tower_resilience (noop-waker)",
        tower,
        fail,
        still_closed("tower"),
    );
    let bm = Bm::builder("closed-failure")
        .failure_threshold(usize::MAX)
        .build();
    bench_calls(&mut group, "breaker_machines", bm, fail, still_closed("bm"));
    crate::coarse::closed_failure(&mut group);
    group.finish();
}

/// What one half-open cycle is for a breaker: the probes that close it
/// (retried while rejected, which only a real clock can cause) and the
/// counted failures that open it again.
#[derive(Clone, Copy)]
pub(crate) struct Cycle {
    probes: u32,
    failures: u32,
}

/// Times `iters` cycles: `advance` (the cooldown passes), the probes, the
/// failures.
#[inline(never)]
pub(crate) fn timed_cycles<B: Breaker>(
    breaker: &mut B,
    cycle: Cycle,
    advance: &mut impl FnMut(),
    iters: u64,
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        advance();
        for _ in 0..cycle.probes {
            while black_box(breaker.call(succeed)).is_none() {
                std::hint::spin_loop();
            }
        }
        for _ in 0..cycle.failures {
            black_box(breaker.call(fail));
        }
    }
    start.elapsed()
}

/// One untimed cycle with its checks: every probe admitted and successful,
/// every failure admitted (the circuit closed), and, where the breaker can
/// tell, open at the end. Run before each batch; the very first one starts
/// from the new, closed breaker (its probes are then plain successes) and
/// leaves it open, as every later cycle does.
pub(crate) fn checked_cycle<B: Breaker>(
    breaker: &mut B,
    cycle: Cycle,
    advance: &mut impl FnMut(),
    name: &str,
) {
    advance();
    for _ in 0..cycle.probes {
        let mut tries = 0;
        while breaker.call(succeed).is_none() {
            tries += 1;
            assert!(tries < 1_000_000, "{name}: no probe admitted");
        }
    }
    for _ in 0..cycle.failures {
        assert_eq!(breaker.call(fail), Some(Err(Fail)), "{name}: not closed");
    }
    assert_ne!(breaker.closed(), Some(true), "{name}: not open again");
}

pub(crate) fn bench_cycles<B: Breaker>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut breaker: B,
    cycle: Cycle,
    mut advance: impl FnMut(),
) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            checked_cycle(&mut breaker, cycle, &mut advance, id);
            timed_cycles(&mut breaker, cycle, &mut advance, iters)
        });
    });
}

pub(crate) fn half_open_cycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("half_open_cycle");
    let one = Cycle {
        probes: 1,
        failures: 1,
    };
    let cooldown = Duration::from_secs(1);
    let tiny = Duration::from_nanos(1);

    let (clock, mock) = quanta::Clock::mock();
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(cooldown)
        .build()
        .expect("config");
    let fuse = Fuse::builder("half-open")
        .config(config)
        .clock(clock)
        .build();
    bench_cycles(&mut group, "fuse", &fuse, one, || mock.increment(cooldown));

    // failsafe's mock clock is thread-local and lives inside `freeze`; a
    // fresh breaker per batch, as its open-until instant is from the mock.
    let after = cooldown + tiny;
    group.bench_function("failsafe_consecutive", |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            failsafe::clock::freeze(|clock| {
                let mut breaker = failsafe_consecutive(1, cooldown);
                let mut advance = || clock.advance(after);
                checked_cycle(&mut breaker, one, &mut advance, "failsafe");
                timed_cycles(&mut breaker, one, &mut advance, iters)
            })
        });
    });
    // The default policy opens after 5 consecutive failures, with a
    // jittered backoff of at most 300 s: one probe, five failures.
    let five = Cycle {
        probes: 1,
        failures: 5,
    };
    group.bench_function("failsafe_default", |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            failsafe::clock::freeze(|clock| {
                let mut breaker = failsafe_default();
                let mut advance = || clock.advance(Duration::from_secs(301));
                checked_cycle(&mut breaker, five, &mut advance, "failsafe_default");
                timed_cycles(&mut breaker, five, &mut advance, iters)
            })
        });
    });

    // recloser fills its ring before judging: with rings of one call, two
    // successes close it and two failures open it. Real clock, 1 ns wait,
    // so the second failure is already the next half-open probe: the steady
    // cycle is half-open -> closed -> open -> half-open, four calls.
    let recloser = recloser::Recloser::custom()
        .closed_len(1)
        .half_open_len(1)
        .open_wait(tiny)
        .build();
    let two = Cycle {
        probes: 2,
        failures: 2,
    };
    bench_cycles(&mut group, "recloser", &recloser, two, || {});

    let cb = cbrs()
        .cooldown(tiny)
        .consecutive_failures(1)
        .consecutive_successes(1)
        .build();
    bench_cycles(&mut group, "circuitbreaker_rs", cb, one, || {});

    let tower = Tower::new(
        tower_builder()
            .consecutive_failures(1)
            .permitted_calls_in_half_open(1)
            .wait_duration_in_open(tiny),
    );
    bench_cycles(
        &mut group,
        "tower_resilience (noop-waker)",
        tower,
        one,
        || {},
    );

    let now = std::sync::Arc::new(AtomicU64::new(0.0_f64.to_bits()));
    let storage = breaker_machines::MemoryStorage::with_clock(Box::new(BmMockClock(now.clone())));
    let bm = Bm::builder("half-open")
        .failure_threshold(1)
        .success_threshold(1)
        .half_open_timeout_secs(cooldown.as_secs_f64())
        .storage(std::sync::Arc::new(storage))
        .build();
    bench_cycles(&mut group, "breaker_machines", bm, one, move || {
        let t = f64::from_bits(now.load(Ordering::Relaxed)) + cooldown.as_secs_f64();
        now.store(t.to_bits(), Ordering::Relaxed);
    });
    crate::coarse::half_open_cycle(&mut group);
    group.finish();
}

/// Times `threads` threads sharing one breaker, one handle each: after a
/// barrier each times its own `iters` calls of [`succeed`]; the result is
/// the slowest thread's time, so ns per call per thread.
pub(crate) fn bench_shared<B: Breaker + Send>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    mut handles: Vec<B>,
) {
    group.bench_function(id, |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            let barrier = Barrier::new(handles.len());
            thread::scope(|s| {
                let barrier = &barrier;
                let threads: Vec<_> = handles
                    .iter_mut()
                    .map(|handle| {
                        s.spawn(move || {
                            barrier.wait();
                            timed(handle, succeed, iters)
                        })
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("bench thread"))
                    .max()
                    .unwrap_or_default()
            })
        });
    });
}

/// 1, 2, 4, ... below the machine's parallelism, and the parallelism.
pub(crate) fn thread_counts() -> Vec<usize> {
    let max = thread::available_parallelism().map_or(1, usize::from);
    let mut counts: Vec<usize> = std::iter::successors(Some(1), |n| Some(n * 2))
        .take_while(|&n| n < max)
        .collect();
    counts.push(max);
    if max == 1 {
        counts.push(2);
    }
    counts
}

pub(crate) fn shared_closed(c: &mut Criterion) {
    for n in thread_counts() {
        let mut group = c.benchmark_group(format!("shared_closed/threads={n}"));

        // Nothing shared: how much the machine alone slows a thread down
        // when all of them run.
        bench_shared(&mut group, "baseline/closure", vec![Bare; n]);
        let word = AtomicU64::new(0);
        bench_shared(
            &mut group,
            "baseline/atomic_load",
            vec![AtomicLoad(&word); n],
        );
        bench_shared(&mut group, "baseline/fetch_add", vec![FetchAdd(&word); n]);
        let counter = Mutex::new(0);
        bench_shared(
            &mut group,
            "baseline/mutex_counter",
            vec![MutexCounter(&counter); n],
        );

        let fuse = Fuse::new("shared", Config::default());
        bench_shared(&mut group, fuse_id(), vec![&fuse; n]);
        let coarse = fuse_coarse("shared-coarse").build();
        bench_shared(&mut group, "fuse_coarse", vec![&coarse; n]);
        let consecutive = failsafe_consecutive(5, Duration::from_secs(30));
        bench_shared(&mut group, "failsafe_consecutive", vec![consecutive; n]);
        bench_shared(&mut group, "failsafe_default", vec![failsafe_default(); n]);
        let recloser = recloser::Recloser::custom().build();
        bench_shared(&mut group, "recloser", vec![&recloser; n]);
        bench_shared(&mut group, "circuitbreaker_rs", vec![cbrs().build(); n]);
        let tower = Tower::new(tower_builder());
        bench_shared(&mut group, "tower_resilience (noop-waker)", vec![tower; n]);
        let bm = Mutex::new(Bm::builder("shared").build());
        bench_shared(&mut group, "breaker_machines", vec![&bm; n]);
        group.finish();
        assert_closed(&&fuse, "fuse");
    }
}
