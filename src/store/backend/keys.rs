//! [`KeyPage`]: one page of a store's keys under a prefix, what
//! [`Store::keys`](crate::store::Store::keys) answers.

/// One page of the keys under a prefix: the keys, those that are not
/// UTF-8 (Redis keys are any bytes; they cannot name a circuit, but an
/// operator's listing shows them), and where the next page starts.
///
/// Keys are in byte order within a page; a SQL or memory store pages in
/// that order too, a Redis store in its `SCAN` order (where a key may come
/// twice, as `SCAN` may return it twice).
///
/// ```
/// use fuse_breaker::store::KeyPage;
///
/// let mut page = KeyPage::new(vec!["fuse:shop:b".into(), "fuse:shop:a".into()], None);
/// page.not_utf8.push(b"fuse:shop:\xff".to_vec());
/// assert_eq!(page.keys, ["fuse:shop:a", "fuse:shop:b"], "sorted");
/// assert!(page.is_last());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyPage {
    /// The keys, sorted.
    pub keys: Vec<String>,
    /// The keys that are not UTF-8, as stored.
    pub not_utf8: Vec<Vec<u8>>,
    /// What to pass as `after` for the next page (the store's own cursor);
    /// `None` on the last page.
    pub next: Option<String>,
}

impl KeyPage {
    /// A page of `keys` (sorted here), followed by the page at `next`.
    ///
    /// ```
    /// let page = fuse_breaker::store::KeyPage::new(vec!["fuse:a".into()], Some("fuse:a".into()));
    /// assert!(!page.is_last());
    /// ```
    pub fn new(mut keys: Vec<String>, next: Option<String>) -> Self {
        keys.sort_unstable();
        KeyPage {
            keys,
            not_utf8: Vec::new(),
            next,
        }
    }

    /// Whether no page follows.
    ///
    /// ```
    /// assert!(fuse_breaker::store::KeyPage::default().is_last());
    /// ```
    pub fn is_last(&self) -> bool {
        self.next.is_none()
    }
}
