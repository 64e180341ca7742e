//! [`Window`]: what the reference model and the stored model hold of a
//! closed circuit's window, one variant per registered policy, whose
//! methods hand each call to that policy's [`Rule`].

use super::{Buckets, Failures, Outcome, Policy, Recorded, Rule, View};
use crate::config::Config;

/// Writes [`Window`] and its dispatch from the registered policies.
macro_rules! windows {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $text:literal => $window:ty,
    )+) => {
        /// The window of a closed circuit under its configuration's policy:
        /// one variant per policy, holding that policy's window.
        #[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub(crate) enum Window {
            $($variant($window),)+
        }

        #[cfg_attr(not(any(test, fuzzing, feature = "store")), allow(dead_code))] // the reference and stored models
        impl Window {
            /// The empty window of `config`'s policy.
            pub(crate) fn empty(config: &Config) -> Self {
                match config.policy() {
                    $(Policy::$variant => Window::$variant(<$window as Rule>::empty(config)),)+
                }
            }

            /// The policy whose window this is.
            pub(crate) fn policy(&self) -> Policy {
                match self {
                    $(Window::$variant(_) => Policy::$variant,)+
                }
            }

            /// Records a closed verdict at `now` (see [`Rule::record`]). A
            /// window of another policy than `config`'s (a payload written
            /// under another configuration) starts over empty first.
            pub(crate) fn record(&mut self, config: &Config, outcome: Outcome, now: u64) -> Recorded {
                if !self.fits(config) {
                    *self = Window::empty(config);
                }
                match self {
                    $(Window::$variant(window) => window.record(config, outcome, now),)+
                }
            }

            /// What a snapshot shows at `now` (nothing of a window of another
            /// policy than `config`'s).
            pub(crate) fn view(&self, config: &Config, now: u64) -> View {
                match self {
                    _ if !self.fits(config) => View::default(),
                    $(Window::$variant(window) => window.view(config, now),)+
                }
            }

            /// See [`Rule::prune`].
            #[cfg_attr(not(feature = "store"), allow(dead_code))] // the stored model's
            pub(crate) fn prune(&mut self, config: &Config, now: u64) -> bool {
                match self {
                    $(Window::$variant(window) => window.prune(config, now),)+
                }
            }

            /// See [`Rule::covers`].
            #[cfg(feature = "store")]
            pub(crate) fn covers(&self, config: &Config, at: u64, now: u64) -> bool {
                match self {
                    $(Window::$variant(window) => window.covers(config, at, now),)+
                }
            }

            /// See [`Rule::holds`].
            #[cfg(feature = "store")]
            pub(crate) fn holds(&self, config: &Config, now: u64) -> bool {
                match self {
                    $(Window::$variant(window) => window.holds(config, now),)+
                }
            }

            /// See [`Rule::reconfigured`].
            #[cfg_attr(not(any(test, fuzzing)), allow(dead_code))] // the reference model's
            pub(crate) fn reconfigured(&mut self, old: &Config, new: &Config, now: u64) {
                match self {
                    $(Window::$variant(window) => window.reconfigured(old, new, now),)+
                }
            }

            /// Empties the window (a new epoch), keeping its policy.
            pub(crate) fn clear(&mut self) {
                match self {
                    $(Window::$variant(window) => *window = <$window>::default(),)+
                }
            }

            /// See [`Rule::is_empty`].
            #[cfg_attr(not(feature = "store"), allow(dead_code))] // the stored model's
            pub(crate) fn is_empty(&self) -> bool {
                match self {
                    $(Window::$variant(window) => window.is_empty(),)+
                }
            }

            /// Whether the window is of `config`'s policy.
            pub(crate) fn fits(&self, config: &Config) -> bool {
                self.policy() == config.policy()
            }
        }

        impl Policy {
            /// See [`Rule::COUNTS_CALLS`].
            #[inline]
            pub(crate) fn counts_calls(self) -> bool {
                match self {
                    $(Policy::$variant => <$window as Rule>::COUNTS_CALLS,)+
                }
            }
        }
    };
}

super::registered!(windows);
