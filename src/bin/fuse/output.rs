//! What `fuse status` prints: a table, or one JSON object per circuit, a
//! line as each circuit is read; every string from a store or an API made
//! [printable](crate::text) first. An open or half-open circuit's line
//! says which opening in a row it is (`#3`), and an open one's how long
//! the opening lasts and how long is left of it. A circuit with a quorum
//! (SPEC §8, `min_reporters` above 1) says how many processes reported the
//! failures in its window (`quorum 1/2`) after its columns, and a closed
//! circuit that grades its admission (SPEC §11) the share of calls it
//! admits and why (`admits 35 % (ramp_up)`) after those.

use std::io::{self, Write};
use std::time::Duration;

use fuse_breaker::admin::CircuitView;

use crate::admission::Admission;
use crate::rate::Window;
use crate::text::{json_safe, printable};

/// One line of the status table, from a store or from an admin API.
pub(crate) struct Row {
    pub(crate) key: String,
    pub(crate) state: String,
    pub(crate) failures: usize,
    /// In flight, allowed.
    pub(crate) probes: (u32, u32),
    /// Openings in a row, this one included (0 while closed).
    pub(crate) openings: u32,
    /// How long this opening lasts (open only).
    pub(crate) open_for: Option<Duration>,
    pub(crate) half_open_in: Option<Duration>,
    /// Whether `open_for` and `half_open_in` are assumed from this
    /// process's open duration: the payload does not say when the opening
    /// ends (a circuit milon/fuse opened).
    pub(crate) assumed: bool,
    /// Under the `rate` policy: the window and the rule, said after the
    /// columns (`failures` is then the failed calls in the window).
    pub(crate) rate: Option<Window>,
    /// With a quorum (SPEC §8): the reporters of the failures in the
    /// window and `min_reporters`, said after the columns.
    pub(crate) quorum: Option<Quorum>,
    /// A closed circuit that grades its admission (SPEC §11): the share
    /// it admits and why, said after the columns.
    pub(crate) admission: Option<Admission>,
}

/// A circuit's quorum (SPEC §8): how many distinct processes reported the
/// failures in its window, of the `min_reporters` it takes to open it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quorum {
    pub(crate) reporters: u32,
    pub(crate) min_reporters: u32,
}

impl Quorum {
    /// The quorum of a circuit whose `min_reporters` is above 1.
    pub(crate) fn of(reporters: u32, min_reporters: u32) -> Option<Self> {
        (min_reporters > 1).then_some(Quorum {
            reporters,
            min_reporters,
        })
    }
}

impl std::fmt::Display for Quorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "quorum {}/{}", self.reporters, self.min_reporters)
    }
}

impl Row {
    pub(crate) fn of(view: &CircuitView) -> Self {
        let rate = Window::of_view(view);
        Row {
            key: view.key.clone(),
            state: view.state.clone(),
            failures: rate
                .as_ref()
                .map_or(view.failures, |rate| failed(rate.failed)),
            probes: (view.probes_in_flight, view.probes_allowed),
            openings: view.openings,
            open_for: view.open_for_ms.map(Duration::from_millis),
            half_open_in: view.half_open_in_ms.map(Duration::from_millis),
            assumed: view.open_for_assumed,
            rate,
            // An in-process circuit has no quorum, whatever its setting.
            quorum: Quorum::of(view.reporters, view.config.min_reporters).filter(|_| view.shared),
            admission: Admission::of_view(view),
        }
    }
}

/// A window's failed calls as a count of failures (saturating).
pub(crate) fn failed(failed: u64) -> usize {
    usize::try_from(failed).unwrap_or(usize::MAX)
}

/// Where the status goes: standard output, as a table or JSON lines.
pub(crate) struct Output {
    json: bool,
    out: io::StdoutLock<'static>,
    /// Whether the table's header is written (before its first row, or
    /// at the end of an empty table; not before an error).
    header: bool,
    /// Keys listed as unreadable.
    unreadable: usize,
    /// Whether a row's duration was assumed (marked `*`, said below the
    /// table).
    assumed: bool,
}

impl Output {
    pub(crate) fn new(json: bool) -> Self {
        Output {
            json,
            out: io::stdout().lock(),
            header: false,
            unreadable: 0,
            assumed: false,
        }
    }

    /// A circuit: its row, or `json` (made on demand).
    pub(crate) fn circuit(
        &mut self,
        row: &Row,
        json: impl FnOnce() -> serde_json::Value,
    ) -> io::Result<()> {
        if self.json {
            return self.json_line(&json());
        }
        let probes = format!("{}/{}", row.probes.0, row.probes.1);
        let failures = row.failures.to_string();
        let opening = match row.openings {
            0 => "-".to_owned(),
            n => format!("#{n}"),
        };
        // A duration the payload does not carry is marked, and said
        // below the table.
        let mark = if row.assumed && row.open_for.is_some() {
            self.assumed = true;
            "*"
        } else {
            ""
        };
        self.line([
            &printable(&row.key),
            &printable(&row.state),
            &failures,
            &probes,
            &opening,
            &format!("{}{mark}", seconds(row.open_for)),
            &format!("{}{mark}", seconds(row.half_open_in)),
        ])?;
        // On the row's line, after its columns: a count circuit's line
        // without a quorum is as it always was.
        if let Some(rate) = &row.rate {
            write!(self.out, "  {rate}")?;
        }
        if let Some(quorum) = &row.quorum {
            write!(self.out, "  {quorum}")?;
        }
        if let Some(admission) = &row.admission {
            write!(self.out, "  {admission}")?;
        }
        writeln!(self.out)
    }

    /// A key under which no circuit could be read: `shown` is the key made
    /// printable, `json` the key's fields for JSON, `error` why, made
    /// printable too (also said on standard error).
    pub(crate) fn unreadable(
        &mut self,
        shown: &str,
        mut json: serde_json::Value,
        error: &str,
    ) -> io::Result<()> {
        self.unreadable += 1;
        let _ = writeln!(io::stderr(), "fuse: {error}");
        if self.json {
            json["error"] = error.into();
            return self.json_line(&json);
        }
        self.line([shown, "unreadable", "-", "-", "-", "-", "-"])?;
        writeln!(self.out)
    }

    fn json_line(&mut self, value: &serde_json::Value) -> io::Result<()> {
        writeln!(self.out, "{}", json_safe(&value.to_string()))
    }

    /// A row of the table, after the header, without its line's end.
    fn line(&mut self, row: [&str; COLUMNS]) -> io::Result<()> {
        self.header()?;
        columns(&mut self.out, row)
    }

    /// The table's header, unless it is written.
    fn header(&mut self) -> io::Result<()> {
        if self.json || self.header {
            return Ok(());
        }
        self.header = true;
        let header = [
            "KEY",
            "STATE",
            "FAILURES",
            "PROBES",
            "OPENING",
            "OPEN FOR",
            "HALF-OPEN IN",
        ];
        columns(&mut self.out, header)?;
        writeln!(self.out)
    }

    /// Writes out what is left (the header of an empty table); how many
    /// keys were listed as unreadable.
    pub(crate) fn finish(mut self) -> io::Result<usize> {
        self.header()?;
        if self.assumed {
            writeln!(
                self.out,
                "* assumed from this process's open duration (FUSE_OPEN_DURATION): \
                 the circuit's payload does not say when its opening ends (milon/fuse \
                 opened it)"
            )?;
        }
        self.out.flush()?;
        Ok(self.unreadable)
    }
}

/// The table's columns: key, state, failures, probes, the opening's n in
/// a row, its duration, and the time until half-open.
const COLUMNS: usize = 7;

fn columns(
    out: &mut impl Write,
    [
        key,
        state,
        failures,
        probes,
        opening,
        open_for,
        half_open_in,
    ]: [&str; COLUMNS],
) -> io::Result<()> {
    write!(
        out,
        "{key:<40} {state:<10} {failures:>8} {probes:>8} {opening:>8} {open_for:>10} \
         {half_open_in:>14}"
    )
}

/// A duration in seconds, to the tenth (`-` for none).
fn seconds(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".to_owned(),
        |duration| format!("{:.1}s", duration.as_secs_f64()),
    )
}

/// The error of a write to standard output.
pub(crate) fn written(err: &io::Error) -> String {
    format!("cannot write the status: {err}")
}
