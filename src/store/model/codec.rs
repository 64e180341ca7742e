//! How a store spells its payloads (SPEC §8): JSON (milon/fuse's
//! `DatabaseStore`, and the crate's default), or PHP's `serialize()` of
//! milon/fuse's array, which is what Laravel's cache (milon/fuse's default
//! store) keeps under a key.

/// The encoding of the payloads a store writes.
///
/// ```
/// use fuse_breaker::store::Encoding;
/// assert_eq!(Encoding::default(), Encoding::Json);
/// assert_eq!(Encoding::Php.as_str(), "php");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// JSON: milon/fuse's five fields, and the crate's own under `fuse`.
    #[default]
    Json,
    /// PHP's `serialize()` of milon/fuse's five-field array, the crate's
    /// own fields under `fuse` inside it, as Laravel's cache holds a value.
    Php,
}

impl Encoding {
    /// The encoding's name in settings: `json` or `php`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::Encoding::Json.as_str(), "json");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Json => "json",
            Encoding::Php => "php",
        }
    }
}

/// How a store reads and writes payloads: the encoding it writes, and
/// whether it reads a payload in the other encoding too (`auto`, while a
/// key moves from one to the other) or refuses it as not a circuit.
///
/// ```
/// use fuse_breaker::store::{Codec, Encoding};
/// let codec = Codec::default();
/// assert_eq!(codec.writes(), Encoding::Json);
/// assert!(!codec.reads_any());
/// let laravel = Codec::new(Encoding::Php).reading_any();
/// assert!(laravel.reads(Encoding::Json) && laravel.reads(Encoding::Php));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Codec {
    writes: Encoding,
    reads_any: bool,
}

impl Codec {
    /// Writes and reads `encoding` alone.
    ///
    /// ```
    /// use fuse_breaker::store::{Codec, Encoding};
    /// assert!(!Codec::new(Encoding::Php).reads(Encoding::Json));
    /// ```
    pub const fn new(encoding: Encoding) -> Self {
        Codec {
            writes: encoding,
            reads_any: false,
        }
    }

    /// This codec, reading either encoding (`auto`).
    ///
    /// ```
    /// use fuse_breaker::store::{Codec, Encoding};
    /// assert!(Codec::new(Encoding::Json).reading_any().reads(Encoding::Php));
    /// ```
    #[must_use]
    pub const fn reading_any(self) -> Self {
        Codec {
            reads_any: true,
            ..self
        }
    }

    /// The encoding written.
    ///
    /// ```
    /// use fuse_breaker::store::{Codec, Encoding};
    /// assert_eq!(Codec::new(Encoding::Php).writes(), Encoding::Php);
    /// ```
    pub const fn writes(self) -> Encoding {
        self.writes
    }

    /// Whether a payload in the other encoding is read too.
    ///
    /// ```
    /// use fuse_breaker::store::Codec;
    /// assert!(Codec::default().reading_any().reads_any());
    /// ```
    pub const fn reads_any(self) -> bool {
        self.reads_any
    }

    /// Whether a payload in `encoding` is read.
    ///
    /// ```
    /// use fuse_breaker::store::{Codec, Encoding};
    /// assert!(Codec::default().reads(Encoding::Json));
    /// ```
    pub fn reads(self, encoding: Encoding) -> bool {
        self.reads_any || encoding == self.writes
    }
}
