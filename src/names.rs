//! Circuit keys (SPEC §1), the names a circuit owns, and the label a
//! rejection carries, so that it can name its circuit without allocating
//! or touching a shared counter, and outlive it.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

/// The key of a circuit (SPEC §1): `prefix:app:name:operation`, empty or
/// absent pieces left out, pieces used verbatim but for control
/// characters, which are written escaped (`\u{1b}`). The key every
/// circuit, in-process or shared, of these pieces has: what an operator's
/// tool looks a circuit up by without making one.
///
/// ```
/// assert_eq!(fuse_breaker::key("fuse", Some("shop"), "billing", Some("charge")), "fuse:shop:billing:charge");
/// assert_eq!(fuse_breaker::key("fuse", None, "billing", Some("")), "fuse:billing");
///
/// let fuse = fuse_breaker::Fuse::builder("billing").app("shop").build();
/// assert_eq!(fuse.key(), fuse_breaker::key("fuse", Some("shop"), "billing", None));
/// ```
pub fn key(prefix: &str, app: Option<&str>, name: &str, operation: Option<&str>) -> String {
    [Some(prefix), app, Some(name), operation]
        .into_iter()
        .flatten()
        .filter(|piece| !piece.is_empty())
        .map(printable)
        .collect::<Vec<_>>()
        .join(":")
}

/// `piece` with each control character (ESC, NUL, a newline: what a
/// terminal or a log would act on) written as `\u{1b}`: a key never holds
/// one, whatever name a program gives a circuit. (A configured key prefix
/// or app with one is refused where it is read.)
pub(crate) fn printable(piece: &str) -> Cow<'_, str> {
    if !piece.chars().any(char::is_control) {
        return Cow::Borrowed(piece);
    }
    let mut out = String::with_capacity(piece.len() + 8);
    for c in piece.chars() {
        if c.is_control() {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A circuit's names, owned by the circuit (and freed with it): its key,
/// where its name and operation are in the key, and the label a rejection
/// carries (made the first time the circuit rejects a call).
#[derive(Debug)]
pub struct Names {
    text: Arc<Text>,
    operation: Option<(usize, usize)>,
    label: OnceLock<Label>,
}

impl Names {
    /// The names of the circuit `prefix:app:name:operation` (see [`key`]).
    pub(crate) fn new(
        prefix: &str,
        app: Option<&str>,
        name: &str,
        operation: Option<&str>,
    ) -> Self {
        let (app, name) = (app.map(printable), printable(name));
        let operation = operation.map(printable);
        let (app, name, operation) = (app.as_deref(), &*name, operation.as_deref());
        let key = key(prefix, app, name, operation);
        // Every piece is verbatim and the non-empty ones are joined in
        // order, so the name ends where the operation (if any) begins.
        let operation = operation.filter(|operation| !operation.is_empty());
        let end = key.len() - operation.map_or(0, |operation| operation.len() + 1);
        let name_range = (end - name.len(), end);
        let operation_range = operation.map(|operation| (key.len() - operation.len(), key.len()));
        Names {
            text: Arc::new(Text {
                key: key.into_boxed_str(),
                name: name_range,
            }),
            operation: operation_range,
            label: OnceLock::new(),
        }
    }

    pub(crate) fn key(&self) -> &str {
        &self.text.key
    }

    pub(crate) fn name(&self) -> &str {
        self.text.name()
    }

    pub(crate) fn operation(&self) -> Option<&str> {
        self.operation
            .map(|(start, end)| &self.text.key[start..end])
    }

    /// The label a rejection carries: interned the first time it is asked
    /// for (see [`Label`]), then one atomic load.
    #[inline]
    pub(crate) fn label(&self) -> &Label {
        self.label.get_or_init(|| Label::intern(&self.text))
    }
}

/// A key and where the name is in it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Text {
    key: Box<str>,
    name: (usize, usize),
}

impl Text {
    fn name(&self) -> &str {
        self.key.get(self.name.0..self.name.1).unwrap_or_default()
    }

    /// Bytes this text holds on the heap, with its interning entry.
    fn footprint(&self) -> usize {
        self.key.len() + std::mem::size_of::<Self>() + 2 * std::mem::size_of::<usize>()
    }
}

/// How many bytes of keys (with their bookkeeping) the process interns for
/// rejections: 4 MiB, some 50,000 keys of 40 bytes. Beyond it a circuit's
/// rejections share its names by reference count instead.
pub(crate) const INTERNED_BYTES: usize = 4 << 20;

/// A circuit's key and name as a rejection carries them, in two words.
///
/// The first time a circuit rejects a call, its key is interned: copied
/// once into memory the process keeps, shared by every circuit with the
/// same key (a circuit dropped and made again under its name interns
/// nothing new). From then on a rejection copies a pointer, allocating
/// nothing and touching no shared counter, and the error names its circuit
/// for as long as it lives, after the circuit is gone too. Interned keys
/// are bounded ([`INTERNED_BYTES`]): once the budget is spent, the
/// circuits that reject for the first time after that share their names
/// through a reference count (an atomic increment per rejection) and free
/// them with the last error that holds them.
#[derive(Clone, Debug)]
pub(crate) enum Label {
    Interned(&'static Text),
    Shared(Arc<Text>),
}

impl Label {
    /// `text` interned in the process's interner, or shared if its
    /// budget is spent.
    #[cold]
    fn intern(text: &Arc<Text>) -> Self {
        static INTERNER: LazyLock<Mutex<Interner>> =
            LazyLock::new(|| Mutex::new(Interner::new(INTERNED_BYTES)));
        INTERNER
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .label(text)
    }

    fn text(&self) -> &Text {
        match self {
            Label::Interned(text) => text,
            Label::Shared(text) => text,
        }
    }

    pub(crate) fn key(&self) -> &str {
        &self.text().key
    }

    pub(crate) fn name(&self) -> &str {
        self.text().name()
    }
}

/// The keys interned for rejections, each once, within a budget of bytes.
struct Interner {
    keys: HashSet<&'static Text>,
    bytes: usize,
    budget: usize,
}

impl Interner {
    fn new(budget: usize) -> Self {
        Interner {
            keys: HashSet::new(),
            bytes: 0,
            budget,
        }
    }

    /// The interned copy of `text` (made now if there is none and the
    /// budget allows), else `text` shared.
    fn label(&mut self, text: &Arc<Text>) -> Label {
        if let Some(found) = self.keys.get(&**text) {
            return Label::Interned(found);
        }
        let footprint = text.footprint();
        if self.bytes + footprint > self.budget {
            return Label::Shared(text.clone());
        }
        self.bytes += footprint;
        let leaked: &'static Text = Box::leak(Box::new(Text {
            key: text.key.clone(),
            name: text.name,
        }));
        self.keys.insert(leaked);
        Label::Interned(leaked)
    }
}

impl PartialEq for Label {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl Eq for Label {}

#[cfg(test)]
mod tests;
