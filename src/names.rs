//! Circuit keys (SPEC §1) and the interning of names, so that a rejection
//! can name its circuit without allocating or touching a shared counter.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

/// `prefix:app:name:operation`, empty or absent pieces left out, pieces
/// used verbatim.
pub(crate) fn key(prefix: &str, app: Option<&str>, name: &str, operation: Option<&str>) -> String {
    [Some(prefix), app, Some(name), operation]
        .into_iter()
        .flatten()
        .filter(|piece| !piece.is_empty())
        .collect::<Vec<_>>()
        .join(":")
}

/// The one `'static` copy of `text`: each distinct text is stored once for
/// the life of the process and shared by every circuit that uses it. Runs
/// only when a circuit is built, never on a call.
pub(crate) fn intern(text: &str) -> &'static str {
    static TABLE: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut table = TABLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(&interned) = table.get(text) {
        return interned;
    }
    let interned: &'static str = Box::leak(text.to_owned().into_boxed_str());
    table.insert(interned);
    interned
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
    fn interning_shares_one_copy() {
        let a = intern(&String::from("fuse:shared"));
        let b = intern("fuse:shared");
        assert!(std::ptr::eq(a, b));
    }
}
