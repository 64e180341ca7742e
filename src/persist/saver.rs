//! [`Saver`]: a registry saved on a thread of its own, after every
//! transition and at least every period.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::events::Transition;
use crate::registry::Registry;

/// Saves a registry to its file on a thread of its own: soon after every
/// transition of its circuits, at least every period, and once more when
/// dropped; stops when dropped or when the registry is. A save that fails
/// is retried at the next; with feature `tracing` it is logged. Made by
/// [`Registry::save_every`].
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use fuse_breaker::Registry;
///
/// let path = std::env::temp_dir().join(format!("fuse-saver-{}.json", std::process::id()));
/// let registry = Arc::new(Registry::new(Default::default()));
/// let saver = registry.save_every(&path, Duration::from_secs(10));
/// registry.get("billing").force_open();
/// drop(saver); // saves once more, then stops
/// assert!(std::fs::read_to_string(&path)?.contains("\"open\""));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Saver {
    signal: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Signal {
    wake: Mutex<Wake>,
    woken: Condvar,
}

#[derive(Debug, Default)]
struct Wake {
    changed: bool,
    stop: bool,
}

impl Signal {
    fn set(&self, set: impl FnOnce(&mut Wake)) {
        set(&mut self.wake.lock().unwrap_or_else(PoisonError::into_inner));
        self.woken.notify_one();
    }

    /// Waits for a change, a stop or the end of `period`: whether to stop.
    fn wait(&self, period: Duration) -> bool {
        let wake = self.wake.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut wake, _) = self
            .woken
            .wait_timeout_while(wake, period, |wake| !wake.changed && !wake.stop)
            .unwrap_or_else(PoisonError::into_inner);
        wake.changed = false;
        wake.stop
    }
}

impl Registry {
    /// Saves this registry to `path` on a thread of its own (see
    /// [`Saver`]): soon after every transition of its circuits, at least
    /// every `period`, and once more when the saver is dropped.
    pub fn save_every(self: &Arc<Self>, path: impl Into<PathBuf>, period: Duration) -> Saver {
        let signal = Arc::new(Signal::default());
        let told: Weak<Signal> = Arc::downgrade(&signal);
        self.on_transition(move |_: &Transition| {
            if let Some(signal) = told.upgrade() {
                signal.set(|wake| wake.changed = true);
            }
        });
        let (registry, path, waiting) = (Arc::downgrade(self), path.into(), signal.clone());
        let thread = std::thread::Builder::new()
            .name("fuse-saver".to_owned())
            .spawn(move || {
                loop {
                    let stop = waiting.wait(period);
                    let Some(registry) = registry.upgrade() else {
                        return;
                    };
                    let saved = registry.save(&path);
                    #[cfg(feature = "tracing")]
                    if let Err(err) = &saved {
                        tracing::warn!(target: "fuse_breaker", error = %err, "{err}");
                    }
                    let _ = saved;
                    if stop {
                        return;
                    }
                }
            })
            .ok();
        Saver { signal, thread }
    }
}

impl Drop for Saver {
    /// Saves once more, then stops the thread.
    fn drop(&mut self) {
        self.signal.set(|wake| wake.stop = true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
