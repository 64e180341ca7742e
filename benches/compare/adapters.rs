//! Each peer crate behind the one `Breaker` trait, and Fuse itself.

use super::{
    AtomicU64, Breaker, Context, Fail, Fuse, Future, Mutex, Op, Ordering, Outcome, PoisonError,
    Poll, State, Waker, pin, thread,
};

impl Breaker for &Fuse {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match self.run(op) {
            Ok(value) => Some(Ok(value)),
            Err(fuse_breaker::Error::Inner(err)) => Some(Err(err)),
            Err(fuse_breaker::Error::Open(_)) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.state() == State::Closed)
    }
}

impl<P, I> Breaker for failsafe::StateMachine<P, I>
where
    P: failsafe::FailurePolicy,
    I: failsafe::Instrument,
{
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match <Self as failsafe::CircuitBreaker>::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(failsafe::Error::Inner(err)) => Some(Err(err)),
            Err(failsafe::Error::Rejected) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        // `Some(true)` while it admits calls, else `None` (it cannot tell
        // closed from half-open); only moves an open circuit whose cooldown
        // has passed.
        self.is_call_permitted().then_some(true)
    }
}

impl Breaker for &recloser::Recloser {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match recloser::Recloser::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(recloser::Error::Inner(err)) => Some(Err(err)),
            Err(recloser::Error::Rejected) => None,
        }
    }
}

pub(crate) type CbRs = circuitbreaker_rs::CircuitBreaker<circuitbreaker_rs::DefaultPolicy, Fail>;

impl Breaker for CbRs {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match circuitbreaker_rs::CircuitBreaker::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(circuitbreaker_rs::BreakerError::Operation(err)) => Some(Err(err)),
            Err(_) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.current_state() == circuitbreaker_rs::State::Closed)
    }
}

/// Polls `fut` to completion on the current thread with a no-op waker.
///
/// tower-resilience has no synchronous API; its service's futures are ready
/// on their first poll when the inner service is ready and the circuit's
/// (tokio) mutex is free, which is always the case on one thread. Only in
/// `shared_closed` can that mutex be held by another thread; the thread then
/// yields and polls again until the holder has handed it over (a real
/// executor would park the task and run another one meanwhile; spinning
/// without yielding stalls for whole scheduler slices when the holder is
/// preempted).
#[inline]
pub(crate) fn poll_now<Fut: Future>(fut: Fut) -> Fut::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::yield_now();
    }
}

/// The inner tower service: runs the request, which is the protected call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Direct;

impl<F: Op> tower::Service<F> for Direct {
    type Response = u64;
    type Error = Fail;
    type Future = std::future::Ready<Result<u64, Fail>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Fail>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, op: F) -> Self::Future {
        std::future::ready(op())
    }
}

pub(crate) type TowerCb = tower_resilience_circuitbreaker::CircuitBreaker<
    Direct,
    tower_resilience_circuitbreaker::DefaultClassifier,
>;

/// A tower-resilience circuit breaker around [`Direct`], driven by
/// [`poll_now`]: `poll_ready`, then `call` and its future.
#[derive(Clone)]
pub(crate) struct Tower(pub(crate) TowerCb);

impl Tower {
    pub(crate) fn new(
        builder: tower_resilience_circuitbreaker::CircuitBreakerConfigBuilder<
            tower_resilience_circuitbreaker::DefaultClassifier,
        >,
    ) -> Self {
        use tower::Layer;
        let layer = builder.build().expect("valid tower-resilience config");
        Tower(layer.layer(Direct))
    }
}

impl Breaker for Tower {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        use tower::Service;
        use tower_resilience_circuitbreaker::CircuitBreakerError;
        let service = &mut self.0;
        match poll_now(std::future::poll_fn(|cx| {
            Service::<F>::poll_ready(service, cx)
        })) {
            Ok(()) => {}
            Err(CircuitBreakerError::Inner(err)) => return Some(Err(err)),
            Err(CircuitBreakerError::OpenCircuit) => return None,
        }
        match poll_now(service.call(op)) {
            Ok(value) => Some(Ok(value)),
            Err(CircuitBreakerError::Inner(err)) => Some(Err(err)),
            Err(CircuitBreakerError::OpenCircuit) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.0.state_sync() == tower_resilience_circuitbreaker::CircuitState::Closed)
    }
}

pub(crate) type Bm = breaker_machines::CircuitBreaker;

impl Breaker for Bm {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        match breaker_machines::CircuitBreaker::call(self, op) {
            Ok(value) => Some(Ok(value)),
            Err(breaker_machines::CircuitError::Execution(err)) => Some(Err(err)),
            Err(_) => None,
        }
    }

    fn closed(&self) -> Option<bool> {
        Some(self.is_closed())
    }
}

/// breaker-machines shared between threads: its `call` takes `&mut self`.
impl Breaker for &Mutex<Bm> {
    #[inline]
    fn call<F: Op>(&mut self, op: F) -> Outcome {
        let mut breaker = self.lock().unwrap_or_else(PoisonError::into_inner);
        Breaker::call(&mut *breaker, op)
    }
}

/// A breaker-machines clock moved by hand: seconds, as `f64` bits.
#[derive(Debug)]
pub(crate) struct BmMockClock(pub(crate) std::sync::Arc<AtomicU64>);

impl breaker_machines::Clock for BmMockClock {
    fn now_secs(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}
