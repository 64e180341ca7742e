//! Circuit keys (SPEC §1), the names a circuit owns, and the copy of them
//! a rejection carries, so that it can name its circuit without
//! allocating or touching a shared counter, and outlive it.

use std::borrow::Cow;
use std::fmt::Write as _;

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
/// where its name and operation are in the key, and the copy a rejection
/// carries.
#[derive(Debug)]
pub(crate) struct Names {
    key: Box<str>,
    name: (usize, usize),
    operation: Option<(usize, usize)>,
    label: Label,
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
        let label = Label::new(&key, name_range);
        Names {
            key: key.into_boxed_str(),
            name: name_range,
            operation: operation_range,
            label,
        }
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    pub(crate) fn name(&self) -> &str {
        &self.key[self.name.0..self.name.1]
    }

    pub(crate) fn operation(&self) -> Option<&str> {
        self.operation.map(|(start, end)| &self.key[start..end])
    }

    /// The copy of the key and name a rejection carries.
    #[inline]
    pub(crate) fn label(&self) -> &Label {
        &self.label
    }
}

/// Bytes of a key held in a [`Label`] itself.
const INLINE: usize = 48;

/// A circuit's key and name as an error carries them after the circuit is
/// gone: in the label itself up to 48 bytes (no allocation, no shared
/// counter), behind a shared pointer beyond. Every field is a whole aligned
/// word or block, so that copying a label moves the same blocks it was
/// written with (a copy of narrower, misaligned pieces stalled each
/// rejection on store forwarding, 4 ns).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Label {
    /// The key, then zeros, when it fits.
    bytes: Bytes,
    /// The key's length when it fits.
    len: u32,
    /// Where the name is in the key.
    name: (u32, u32),
    /// The key when it does not fit.
    shared: Option<std::sync::Arc<str>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(16))]
struct Bytes([u8; INLINE]);

impl Label {
    fn new(key: &str, name: (usize, usize)) -> Self {
        let mut bytes = Bytes([0; INLINE]);
        let (len, shared) = if key.len() <= INLINE {
            bytes.0[..key.len()].copy_from_slice(key.as_bytes());
            (key.len(), None)
        } else {
            (0, Some(key.into()))
        };
        let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
        Label {
            bytes,
            len: offset(len),
            name: (offset(name.0), offset(name.1)),
            shared,
        }
    }

    pub(crate) fn key(&self) -> &str {
        if let Some(key) = &self.shared {
            return key;
        }
        let len = usize::try_from(self.len).unwrap_or(0);
        // Copied from a `str` whole: always UTF-8.
        std::str::from_utf8(self.bytes.0.get(..len).unwrap_or_default()).unwrap_or_default()
    }

    pub(crate) fn name(&self) -> &str {
        let (start, end) = self.name;
        let range = usize::try_from(start).unwrap_or(0)..usize::try_from(end).unwrap_or(0);
        self.key().get(range).unwrap_or_default()
    }
}

impl std::fmt::Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Label")
            .field("key", &self.key())
            .field("name", &self.name())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_leave_out_empty_pieces() {
        assert_eq!(key("fuse", None, "billing-sdk", None), "fuse:billing-sdk");
        assert_eq!(
            key("fuse", Some("punt"), "billing", Some("charge")),
            "fuse:punt:billing:charge"
        );
        assert_eq!(key("fuse", Some(""), "billing", Some("")), "fuse:billing");
        assert_eq!(key("p", None, "n", Some("op")), "p:n:op");
        assert_eq!(key("p", Some("a b"), "n/x", None), "p:a b:n/x");
    }

    #[test]
    fn control_characters_are_escaped_in_every_piece() {
        let names = Names::new(
            "fu\0se",
            Some("sh\x1bop"),
            "bill\x1b]0;pwned\x07",
            Some("a\nb"),
        );
        assert_eq!(
            names.key(),
            "fu\\u{0}se:sh\\u{1b}op:bill\\u{1b}]0;pwned\\u{7}:a\\u{a}b"
        );
        assert_eq!(names.name(), "bill\\u{1b}]0;pwned\\u{7}");
        assert_eq!(names.operation(), Some("a\\u{a}b"));
        assert!(!names.key().chars().any(char::is_control));
        assert!(matches!(printable("caf\u{e9}"), Cow::Borrowed(_)));
    }

    #[test]
    fn names_find_the_name_and_operation_in_the_key() {
        let names = Names::new("fuse", Some("shop"), "api:v2", Some("get:/x"));
        assert_eq!(names.key(), "fuse:shop:api:v2:get:/x");
        assert_eq!(names.name(), "api:v2");
        assert_eq!(names.operation(), Some("get:/x"));
        let bare = Names::new("fuse", None, "", Some(""));
        assert_eq!(
            (bare.key(), bare.name(), bare.operation()),
            ("fuse", "", None)
        );
    }

    #[test]
    fn a_label_holds_short_keys_inline_and_long_ones_shared() {
        for name in ["billing", "é".repeat(21).as_str(), "x".repeat(500).as_str()] {
            let names = Names::new("fuse", None, name, None);
            let label = names.label().clone();
            drop(names);
            assert_eq!(label.key(), format!("fuse:{name}"));
            assert_eq!(label.name(), name);
        }
        assert_eq!(std::mem::size_of::<Label>(), 80);
    }
}
