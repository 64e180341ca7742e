//! Where the two languages meet: a store milon/fuse keeps circuits in, a
//! circuit both sides configure alike, and the Rust side's mode.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Refusal, SharedFuse, Store};
use fuse_breaker::{Config, config::ConfigError};

use super::Php;
use crate::common::unique;

/// A store milon/fuse keeps a circuit in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A Redis key holding the array as JSON (a PSR-16 cache).
    #[cfg(feature = "redis")]
    Json,
    /// Laravel's cache on Redis: PHP's `serialize()` of the array under
    /// `laravel_database_laravel_cache_KEY`, in database 1.
    #[cfg(feature = "redis")]
    Laravel,
    /// milon/fuse's `DatabaseStore` on PostgreSQL.
    #[cfg(feature = "sql")]
    Postgres,
    /// milon/fuse's `DatabaseStore` on SQLite (this test run's file).
    #[cfg(feature = "sql")]
    Sqlite,
}

/// A store of `kind` on this machine's server.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) kind: Kind,
    /// The URL the Rust store opens.
    rust_url: String,
    /// The URL `milon.php` opens.
    php_url: String,
}

/// Runs `scenario` on the store of `kind`, unless its server or PHP is
/// missing (said; a failure under `CI=true`).
pub(crate) fn run(kind: Kind, scenario: fn(&Target)) {
    let Some(target) = Target::of(kind) else {
        return;
    };
    if Php::start(target.php_store(), &target.php_url, &[]).is_none() {
        return;
    }
    scenario(&target);
}

impl Target {
    fn of(kind: Kind) -> Option<Target> {
        let (rust_url, php_url) = match kind {
            #[cfg(feature = "redis")]
            Kind::Json => {
                let url = crate::redis_url()?;
                (url.clone(), url)
            }
            // Laravel's cache connection: database 1 (`REDIS_CACHE_DB`).
            #[cfg(feature = "redis")]
            Kind::Laravel => {
                let url = format!("{}/1", server_only(&crate::redis_url()?));
                (format!("{url}?payload=laravel"), url)
            }
            #[cfg(feature = "sql")]
            Kind::Postgres => {
                let url = crate::database_url()?;
                (url.clone(), url)
            }
            #[cfg(feature = "sql")]
            Kind::Sqlite => (crate::sqlite_url(), crate::sqlite_url()),
        };
        Some(Target {
            kind,
            rust_url,
            php_url,
        })
    }

    /// The store's name for `milon.php`.
    fn php_store(&self) -> &'static str {
        match self.kind {
            #[cfg(feature = "redis")]
            Kind::Json => "json",
            #[cfg(feature = "redis")]
            Kind::Laravel => "laravel",
            #[cfg(feature = "sql")]
            Kind::Postgres | Kind::Sqlite => "database",
        }
    }

    /// A Rust store on the target (a runtime must be running).
    fn store(&self) -> Arc<dyn Store> {
        match self.kind {
            #[cfg(feature = "redis")]
            Kind::Json | Kind::Laravel => Arc::new(
                fuse_breaker::store::RedisStore::open(&self.rust_url).expect("a Redis URL"),
            ),
            #[cfg(feature = "sql")]
            Kind::Postgres | Kind::Sqlite => Arc::new(crate::sql_store(&self.rust_url)),
        }
    }

    /// The Rust side of `circuit`, in `mode`, on a store of its own.
    pub(crate) fn rust(&self, circuit: &Circuit, mode: Mode) -> SharedFuse {
        self.rust_with(circuit, circuit.config(), mode)
    }

    /// The Rust side of `circuit` with `config`, in `mode`.
    pub(crate) fn rust_with(&self, circuit: &Circuit, config: Config, mode: Mode) -> SharedFuse {
        let mut builder = fuse_breaker::Fuse::builder(&circuit.name)
            .store(self.store())
            .config(config);
        if let Some(app) = &circuit.app {
            builder = builder.app(app);
        }
        if let Some(operation) = &circuit.operation {
            builder = builder.operation(operation);
        }
        if let Mode::Cached(staleness) = mode {
            builder = builder.cached(staleness);
        }
        builder.build()
    }

    /// The PHP side of `circuit`: a `milon.php` of its own.
    pub(crate) fn php(&self, circuit: &Circuit) -> Php {
        Php::start(self.php_store(), &self.php_url, &circuit.php_args())
            .expect("PHP ran when the test started")
    }
}

/// `redis://host:port` of a `redis://host:port/db` URL.
#[cfg(feature = "redis")]
fn server_only(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => &url[..after_scheme + slash],
        None => url,
    }
}

/// How the Rust side keeps the circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every call asks the store.
    Strict,
    /// A mirror no older than this.
    Cached(Duration),
}

/// The staleness of the cached Rust side.
pub(crate) const STALENESS: Duration = Duration::from_millis(300);

/// Both modes: the scenarios whose verdicts go to the store either way run
/// in each.
pub(crate) const MODES: [Mode; 2] = [Mode::Strict, Mode::Cached(STALENESS)];

/// One circuit as both sides configure it: its key's pieces and
/// milon/fuse's four settings.
#[derive(Clone, Debug)]
pub(crate) struct Circuit {
    pub(crate) name: String,
    pub(crate) prefix: String,
    pub(crate) app: Option<String>,
    pub(crate) operation: Option<String>,
    pub(crate) threshold: u32,
    /// Seconds.
    pub(crate) window: u64,
    /// Seconds.
    pub(crate) open: u64,
    pub(crate) probes: u32,
}

impl Circuit {
    /// A circuit of a name of its own: `threshold` failures in 60 s open
    /// it for 30 s, `probes` successes close it.
    pub(crate) fn new(threshold: u32, probes: u32) -> Circuit {
        Circuit {
            name: unique("php"),
            prefix: "fuse".to_owned(),
            app: None,
            operation: None,
            threshold,
            window: 60,
            open: 30,
            probes,
        }
    }

    /// The Rust configuration (a probe timeout longer than any test, as
    /// milon/fuse has none).
    pub(crate) fn try_config(&self) -> Result<Config, ConfigError> {
        Config::builder()
            .failure_threshold(self.threshold)
            .failure_window(Duration::from_secs(self.window))
            .open_duration(Duration::from_secs(self.open))
            .half_open_probes(self.probes)
            .probe_timeout(Duration::from_mins(5))
            .key_prefix(self.prefix.clone())
            .build()
    }

    /// [`try_config`](Self::try_config), valid.
    pub(crate) fn config(&self) -> Config {
        self.try_config()
            .unwrap_or_else(|err| panic!("the configuration of {self:?}: {err}"))
    }

    /// `milon.php`'s arguments for it.
    fn php_args(&self) -> Vec<String> {
        vec![
            format!("--prefix={}", self.prefix),
            format!("--app={}", self.app.as_deref().unwrap_or("")),
            format!("--name={}", self.name),
            format!("--operation={}", self.operation.as_deref().unwrap_or("")),
            format!("--threshold={}", self.threshold),
            format!("--window={}", self.window),
            format!("--open={}", self.open),
            format!("--probes={}", self.probes),
        ]
    }
}

/// PHP opens `circuit` as milon/fuse does (its threshold of failures),
/// `ago` seconds before now, then runs on the system's clock again.
pub(crate) fn php_opened(php: &mut Php, circuit: &Circuit, ago: u64) {
    php.pin(super::unix_now() - ago);
    for _ in 0..circuit.threshold {
        assert!(php.allow(), "closed, PHP admits");
        php.failure();
    }
    assert_eq!(php.state_name(), "open");
    php.unpin();
}

/// Whether the Rust side refuses a call because the circuit is open (a
/// store error fails the test).
pub(crate) async fn rust_rejects(fuse: &SharedFuse) -> bool {
    match fuse.try_acquire().await {
        Ok(_permit) => false,
        Err(Refusal::Open(_)) => true,
        Err(Refusal::Store(err)) => panic!("{}: a store error: {err}", fuse.key()),
    }
}
