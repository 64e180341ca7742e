//! Text safe to show on a terminal: keys, states and errors come from a
//! store or an API that anyone with write access fills, and a control
//! character in them (`ESC ] 0;...BEL` retitles the window, `ESC [2J`
//! clears it) would reach the operator's terminal as a command.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal could act on `c` or show it other than as itself:
/// C0, DEL, C1, and the invisible marks that reorder or hide text
/// (bidirectional overrides and isolates, zero-width characters).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `text` with every backslash doubled and every character [`hidden`]
/// written as an escape: `\t`, `\n`, `\r`, `\xNN` below 0x80,
/// `\u{NNNN}` above (so `\x1b` is always the escape character, never the
/// four characters a key may hold).
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c == '\\' || hidden(c)) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    push_printable(&mut shown, text);
    Cow::Owned(shown)
}

/// The bytes of a key that may not be UTF-8, as [`printable`] shows text,
/// each byte of an invalid sequence as `\xNN`.
pub(crate) fn printable_bytes(bytes: &[u8]) -> String {
    let mut shown = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        push_printable(&mut shown, chunk.valid());
        for byte in chunk.invalid() {
            let _ = write!(shown, "\\x{byte:02x}");
        }
    }
    shown
}

/// `bytes` in hex, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

fn push_printable(shown: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' => shown.push_str("\\\\"),
            '\t' => shown.push_str("\\t"),
            '\n' => shown.push_str("\\n"),
            '\r' => shown.push_str("\\r"),
            c if hidden(c) && c.is_ascii() => {
                let _ = write!(shown, "\\x{:02x}", u32::from(c));
            }
            c if hidden(c) => {
                let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
            }
            c => shown.push(c),
        }
    }
}

/// A JSON text (from `serde_json`, which escapes C0 only) with DEL, C1 and
/// the other [`hidden`] characters escaped as `\uNNNN` too. They can only
/// stand inside its strings, where the escape means the same character.
pub(crate) fn json_safe(json: &str) -> Cow<'_, str> {
    if !json.chars().any(hidden) {
        return Cow::Borrowed(json);
    }
    let mut safe = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if hidden(c) {
            let _ = write!(safe, "\\u{:04x}", u32::from(c));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

#[cfg(test)]
mod tests;
