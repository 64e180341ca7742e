//! No password of a URL is printed, whole or in part, whatever it holds:
//! random passwords of 16 to 40 characters drawn from every reserved and
//! unreserved character of RFC 3986, percent-encoded or not, in every
//! form of URL the crate reads (a user and password, or a secret query
//! parameter), never show a run of 6 of their characters in what
//! [`redact`](fuse_breaker::redact) makes of the URL or of a message
//! quoting it, in a store's name, `Debug` or errors (feature `redis` and
//! `sql`), in the settings' `Debug` and errors (feature `config-file`), or
//! in what the `fuse` command prints (feature `cli`). No server is needed:
//! every URL names a port nothing listens on.

use std::fmt::Write as _;

use proptest::prelude::*;

/// The characters a password is drawn from: RFC 3986's unreserved and
/// reserved (gen-delims and sub-delims) ones.
const CHARS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789\
                     -._~:/?#[]@!$&'()*+,;=";

/// How many characters in a row of a password may be printed at most.
const RUN: usize = 6;

/// Where a URL holds its password.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// `scheme://app:PASSWORD@...`.
    Userinfo,
    /// `...?NAME=PASSWORD`.
    Query(&'static str),
}

/// One form of URL: its scheme, the `fuse` command's flag for it, and
/// where its password goes.
#[derive(Clone, Copy, Debug)]
struct Form {
    scheme: &'static str,
    #[cfg_attr(
        not(any(
            feature = "config-file",
            all(feature = "redis", feature = "sql"),
            feature = "cli"
        )),
        allow(dead_code)
    )]
    flag: &'static str,
    place: Place,
}

const fn form(scheme: &'static str, flag: &'static str, place: Place) -> Form {
    Form {
        scheme,
        flag,
        place,
    }
}

/// Every form of every scheme the crate reads.
const FORMS: [Form; 19] = [
    form("redis", "--redis", Place::Userinfo),
    form("redis", "--redis", Place::Query("password")),
    form("rediss", "--redis", Place::Userinfo),
    form("redis+unix", "--redis", Place::Userinfo),
    form("redis+unix", "--redis", Place::Query("pass")),
    form("redis+cluster", "--redis", Place::Userinfo),
    form("rediss+cluster", "--redis", Place::Userinfo),
    form("redis+sentinel", "--redis", Place::Userinfo),
    form("rediss+sentinel", "--redis", Place::Userinfo),
    form("postgres", "--database-url", Place::Userinfo),
    form("postgres", "--database-url", Place::Query("password")),
    form("postgresql", "--database-url", Place::Userinfo),
    form("postgresql", "--database-url", Place::Query("sslpassword")),
    form("sqlite", "--database-url", Place::Userinfo),
    form("sqlite", "--database-url", Place::Query("key")),
    form("http", "--url", Place::Userinfo),
    form("http", "--url", Place::Query("token")),
    form("https", "--url", Place::Userinfo),
    form("https", "--url", Place::Query("auth")),
];

/// A port nothing listens on.
#[cfg(any(all(feature = "redis", feature = "sql"), feature = "cli"))]
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// Where nothing is: the directory every URL's path points into.
fn nowhere() -> String {
    format!(
        "{}/nowhere-{}",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    )
}

/// `text` with every character but the unreserved ones percent-encoded.
fn encoded(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// A URL of `form` with `written` (the password as the URL has it) in
/// its place, on `port`.
fn url_of(form: Form, written: &str, port: u16) -> String {
    let scheme = form.scheme;
    let host = format!("127.0.0.1:{port}");
    let at = match form.place {
        Place::Userinfo => format!("app:{written}@"),
        Place::Query(_) => String::new(),
    };
    let base = match scheme {
        "redis" | "rediss" => format!("{scheme}://{at}{host}/0"),
        "redis+unix" => format!("{scheme}://{at}{}/fuse.sock", nowhere()),
        "redis+cluster" | "rediss+cluster" => format!("{scheme}://{at}{host},{host}"),
        "redis+sentinel" | "rediss+sentinel" => format!("{scheme}://{at}{host}/shop/1"),
        "sqlite" if at.is_empty() => format!("sqlite:{}/fuse.db", nowhere()),
        "sqlite" => format!("sqlite://{at}{}/fuse.db", nowhere()),
        // postgres, postgresql, http, https
        _ => format!("{scheme}://{at}{host}/fuse"),
    };
    match form.place {
        Place::Userinfo => base,
        Place::Query(name) => format!("{base}?{name}={written}"),
    }
}

/// A case: a form, its password, and the password as its URL has it.
#[derive(Clone, Debug)]
struct Case {
    form: Form,
    password: String,
    written: String,
}

/// A random password in a random form, percent-encoded or not. Unescaped
/// in a query, a password has no `&`, `;` or `#`: they end a query value
/// (what follows is no longer the password, for any reader of the URL).
fn cases() -> impl Strategy<Value = Case> {
    let chars: Vec<char> = CHARS.chars().collect();
    (
        proptest::sample::select(FORMS.to_vec()),
        proptest::collection::vec(proptest::sample::select(chars), 16..=40),
        any::<bool>(),
    )
        .prop_map(|(form, password, escape)| {
            let mut password = String::from_iter(password);
            if let (Place::Query(_), false) = (form.place, escape) {
                password.retain(|c| !"&;#".contains(c));
            }
            let written = if escape {
                encoded(&password)
            } else {
                password.clone()
            };
            Case {
                form,
                password,
                written,
            }
        })
}

impl Case {
    fn url(&self, port: u16) -> String {
        url_of(self.form, &self.written, port)
    }

    /// Fails the case if `printed` (what `what` printed) holds a run of
    /// [`RUN`] characters of the password, as given or as written.
    fn assert_hidden(&self, what: &str, printed: &str) -> Result<(), TestCaseError> {
        for secret in [&self.password, &self.written] {
            let chars: Vec<char> = secret.chars().collect();
            for run in chars.windows(RUN) {
                let run = String::from_iter(run);
                prop_assert!(
                    !printed.contains(&run),
                    "{what} printed {run:?} of the password {:?} ({:?} in {:?}): {printed}",
                    self.password,
                    self.written,
                    self.form
                );
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// What `redact` makes of a URL, or of a message quoting it.
    #[test]
    fn redact_hides_every_password(case in cases()) {
        let url = case.url(6379);
        case.assert_hidden("redact::url", &fuse_breaker::redact::url(&url))?;
        for message in [
            format!("error sending request for url ({url})"),
            format!("invalid URL \"{url}\": bad port"),
            format!("{url}: refused"),
            format!("[{url}]"),
        ] {
            case.assert_hidden("redact::text", &fuse_breaker::redact::text(&message))?;
        }
    }
}

#[cfg(feature = "config-file")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    /// The settings' `Debug`, and the error of a file whose line with the
    /// URL is wrong.
    #[test]
    fn settings_hide_every_password(case in cases()) {
        let url = case.url(6379);
        let key = if case.form.flag == "--redis" { "redis_url" } else { "database_url" };
        let settings = fuse_breaker::settings::Settings::from_toml(&format!("{key} = \"{url}\""));
        let settings = settings.map_err(|err| TestCaseError::fail(err.to_string()))?;
        case.assert_hidden("Settings's Debug", &format!("{settings:?}"))?;
        let err = fuse_breaker::settings::Settings::from_toml(&format!("{key} = \"{url}\" 1")).unwrap_err();
        case.assert_hidden("SettingsError", &err.to_string())?;
        case.assert_hidden("SettingsError's Debug", &format!("{err:?}"))?;
    }
}

#[cfg(all(feature = "redis", feature = "sql"))]
proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// A store opened on the URL: its name, `Debug` and first read's
    /// error, or the error of opening it.
    #[test]
    fn stores_hide_every_password(case in cases()) {
        use fuse_breaker::store::Store as _;
        if case.form.flag == "--url" {
            return Ok(());
        }
        let url = case.url(free_port());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            match fuse_breaker::store::open(&url) {
                Err(err) => {
                    case.assert_hidden("open's error", &err.to_string())?;
                    case.assert_hidden("open's error's Debug", &format!("{err:?}"))?;
                }
                Ok(store) => {
                    case.assert_hidden("a store's name", store.name())?;
                    case.assert_hidden("a store's Debug", &format!("{store:?}"))?;
                    let err = store.load("fuse:a").await.map(drop).unwrap_err();
                    case.assert_hidden("a read's error", &err.to_string())?;
                    case.assert_hidden("a read's error's Debug", &format!("{err:?}"))?;
                }
            }
            Ok::<(), TestCaseError>(())
        })?;
    }
}

#[cfg(feature = "cli")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 150, failure_persistence: None, ..ProptestConfig::default() })]

    /// What the `fuse` command prints, on both its outputs.
    #[test]
    fn the_command_hides_every_password(case in cases()) {
        let url = case.url(free_port());
        std::fs::create_dir_all(env!("CARGO_TARGET_TMPDIR")).unwrap();
        for args in [&["status"][..], &["open", "billing"]] {
            let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_fuse"));
            for var in [
                "FUSE_REDIS_URL",
                "FUSE_DATABASE_URL",
                "FUSE_DATABASE_TABLE",
                "FUSE_ADMIN_URL",
                "FUSE_ADMIN_TOKEN",
                "FUSE_APP",
                "FUSE_KEY_PREFIX",
            ] {
                command.env_remove(var);
            }
            let out = command
                .current_dir(env!("CARGO_TARGET_TMPDIR"))
                .args([case.form.flag, &url])
                .args(args)
                .output()
                .expect("the fuse binary");
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            prop_assert!(!out.status.success(), "{url} {args:?}: {printed}");
            case.assert_hidden("the fuse command", &printed)?;
        }
    }
}

/// The URLs of the report: a cluster's and Sentinel's, with a `/` in the
/// password; the command prints no piece of it, nor the user.
#[cfg(feature = "cli")]
#[test]
fn the_command_quotes_no_piece_of_a_password_with_a_slash() {
    let port = free_port();
    for url in [
        format!("redis+cluster://app:hun/ter2@127.0.0.1:{port}"),
        format!("redis+sentinel://app:hun/ter2@127.0.0.1:{port}/shop"),
        format!("redis+sentinel://app:/hunter2@127.0.0.1:{port}/shop"),
        format!("redis+sentinel://app:/hunter2@127.0.0.1:{port}"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fuse"))
            .env_remove("FUSE_REDIS_URL")
            .env_remove("FUSE_DATABASE_URL")
            .env_remove("FUSE_ADMIN_URL")
            .args(["--redis", &url, "status"])
            .output()
            .expect("the fuse binary");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{url}: {printed}");
        assert!(printed.contains("127.0.0.1"), "{url}: {printed}");
        for piece in ["app", "hun", "ter2"] {
            assert!(!printed.contains(piece), "{url}: {printed}");
        }
    }
}

/// The command's help shows where each setting may come from, never the
/// value of a variable holding a URL (or the token): their passwords.
#[cfg(feature = "cli")]
#[test]
fn the_command_s_help_shows_no_url_from_the_environment() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fuse"))
        .env("FUSE_REDIS_URL", "redis://app:redissecret@127.0.0.1:1")
        .env(
            "FUSE_DATABASE_URL",
            "postgres://app:dbsecret@127.0.0.1:1/fuse",
        )
        .env("FUSE_ADMIN_URL", "http://app:adminsecret@127.0.0.1:1")
        .env("FUSE_ADMIN_TOKEN", "tokensecret")
        .arg("--help")
        .output()
        .expect("the fuse binary");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains("FUSE_REDIS_URL"), "{printed}");
    for secret in ["secret", "app:"] {
        assert!(!printed.contains(secret), "{printed}");
    }
}
