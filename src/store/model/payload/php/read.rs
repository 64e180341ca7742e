//! The parser of the subset: one pass over the bytes, a declared length
//! or count checked against the bytes left before anything is sized by
//! it, arrays no deeper than [`MAX_DEPTH`].

use std::fmt;

use super::{Key, MAX_DEPTH, Malformed, Value};

/// The fewest bytes an array element takes: the key `i:0;` and the value
/// `N;`.
const MIN_ELEMENT: usize = 6;

/// What the type letter `tag` starts, in an error.
fn kind(tag: u8) -> String {
    match tag {
        b'O' => "an object (O:)".to_owned(),
        b'C' => "a custom-serialized object (C:)".to_owned(),
        b'r' => "a reference (r:)".to_owned(),
        b'R' => "a reference (R:)".to_owned(),
        b'E' => "an enum case (E:)".to_owned(),
        b'S' => "an escaped string (S:)".to_owned(),
        b'N' => "null (N;)".to_owned(),
        b'b' => "a boolean (b:)".to_owned(),
        b'd' => "a float (d:)".to_owned(),
        b'a' => "an array (a:)".to_owned(),
        tag if tag.is_ascii_graphic() => format!("an unknown type {:?}", char::from(tag)),
        tag => format!("an unknown type (byte {tag:#04x})"),
    }
}

pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl Reader<'_> {
    pub(super) fn error(&self, what: impl fmt::Display) -> Malformed {
        Malformed {
            at: self.at,
            what: what.to_string(),
        }
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Takes `byte`, or says what was expected instead.
    fn expect(&mut self, byte: u8) -> Result<(), Malformed> {
        match self.peek() {
            Some(found) if found == byte => {
                self.at += 1;
                Ok(())
            }
            Some(found) => Err(self.error(format_args!(
                "expected {:?}, found {:?}",
                char::from(byte),
                char::from(found)
            ))),
            None => Err(self.error(format_args!(
                "expected {:?}, found the end (truncated)",
                char::from(byte)
            ))),
        }
    }

    /// Takes the digits that follow (none is an error).
    fn digits(&mut self) -> Result<&[u8], Malformed> {
        let start = self.at;
        while self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.at += 1;
        }
        if self.at == start {
            return Err(match self.peek() {
                Some(found) => self.error(format_args!(
                    "expected a digit, found {:?}",
                    char::from(found)
                )),
                None => self.error("expected a digit, found the end (truncated)"),
            });
        }
        Ok(&self.bytes[start..self.at])
    }

    /// A length or a count (`[0-9]+`), no more than `limit`: the most the
    /// bytes left can hold.
    fn count(&mut self, what: &str, limit: usize) -> Result<usize, Malformed> {
        let start = self.at;
        let count = self.digits()?.iter().try_fold(0usize, |count, &digit| {
            count
                .checked_mul(10)?
                .checked_add(usize::from(digit - b'0'))
        });
        match count {
            Some(count) if count <= limit => Ok(count),
            _ => Err(Malformed {
                at: start,
                what: format!(
                    "{what} of {} beyond the {} bytes left",
                    String::from_utf8_lossy(&self.bytes[start..self.at]),
                    self.left()
                ),
            }),
        }
    }

    /// An integer (`[+-]?[0-9]+`) of 64 bits.
    fn int(&mut self) -> Result<i64, Malformed> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.at += 1;
        }
        // Accumulated towards the sign, so that i64::MIN reads.
        let value = self.digits()?.iter().try_fold(0i64, |value, &digit| {
            let digit = i64::from(digit - b'0');
            let value = value.checked_mul(10)?;
            if negative {
                value.checked_sub(digit)
            } else {
                value.checked_add(digit)
            }
        });
        value.ok_or_else(|| Malformed {
            at: start,
            what: format!(
                "the integer {} beyond 64 bits",
                String::from_utf8_lossy(&self.bytes[start..self.at])
            ),
        })
    }

    /// A float: PHP's `INF`, `-INF`, `NAN`, or a decimal with an optional
    /// exponent; then its `;`.
    fn float(&mut self) -> Result<f64, Malformed> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|byte| byte.is_ascii_alphanumeric() || b"+-.".contains(&byte))
        {
            self.at += 1;
        }
        let text = &self.bytes[start..self.at];
        let value = match text {
            b"INF" => Some(f64::INFINITY),
            b"-INF" => Some(f64::NEG_INFINITY),
            b"NAN" => Some(f64::NAN),
            text if decimal(text) => std::str::from_utf8(text)
                .ok()
                .and_then(|text| text.parse().ok()),
            _ => None,
        };
        let Some(value) = value else {
            return Err(Malformed {
                at: start,
                what: format!("the float {:?}", String::from_utf8_lossy(text)),
            });
        };
        self.expect(b';')?;
        Ok(value)
    }

    /// A string's bytes, after its `s:`.
    fn string(&mut self) -> Result<String, Malformed> {
        let at = self.at;
        let len = self.count("a string length", self.left())?;
        self.expect(b':')?;
        self.expect(b'"')?;
        if len > self.left() {
            return Err(Malformed {
                at,
                what: format!(
                    "a string length of {len} beyond the {} bytes left",
                    self.left()
                ),
            });
        }
        let start = self.at;
        self.at += len;
        let text = std::str::from_utf8(&self.bytes[start..self.at]).map_err(|err| Malformed {
            at: start + err.valid_up_to(),
            what: "a string that is not UTF-8".to_owned(),
        })?;
        self.expect(b'"')?;
        self.expect(b';')?;
        Ok(text.to_owned())
    }

    /// The type letter and its `:` (or `;` for null).
    fn tag(&mut self, what: &str) -> Result<u8, Malformed> {
        let Some(tag) = self.peek() else {
            return Err(self.error(format_args!("expected {what}, found the end (truncated)")));
        };
        self.at += 1;
        Ok(tag)
    }

    pub(super) fn value(&mut self, depth: usize) -> Result<Value, Malformed> {
        let start = self.at;
        let tag = self.tag("a value")?;
        if tag == b'N' {
            self.expect(b';')?;
            return Ok(Value::Null);
        }
        if !b"bidsa".contains(&tag) {
            self.at = start;
            return Err(self.error(format_args!("{}, which this crate refuses", kind(tag))));
        }
        self.expect(b':')?;
        match tag {
            b'b' => {
                let value = match self.peek() {
                    Some(b'0') => false,
                    Some(b'1') => true,
                    _ => return Err(self.error("a boolean that is neither 0 nor 1")),
                };
                self.at += 1;
                self.expect(b';')?;
                Ok(Value::Bool(value))
            }
            b'i' => {
                let value = self.int()?;
                self.expect(b';')?;
                Ok(Value::Int(value))
            }
            b'd' => self.float().map(Value::Float),
            b's' => self.string().map(Value::Str),
            _ => self.array(start, depth),
        }
    }

    /// An array's elements, after its `a:` at `start`.
    fn array(&mut self, start: usize, depth: usize) -> Result<Value, Malformed> {
        if depth >= MAX_DEPTH {
            return Err(Malformed {
                at: start,
                what: format!("arrays nested deeper than {MAX_DEPTH}"),
            });
        }
        let count = self.count("an array count", self.left() / MIN_ELEMENT)?;
        self.expect(b':')?;
        self.expect(b'{')?;
        // Grown as elements are read, never sized by the count alone: the
        // arrays nested in the first element could each claim the bytes
        // left.
        let mut elements = Vec::new();
        for _ in 0..count {
            let key = match self.tag("an array key")? {
                b'i' => {
                    self.expect(b':')?;
                    let key = self.int()?;
                    self.expect(b';')?;
                    Key::Int(key)
                }
                b's' => {
                    self.expect(b':')?;
                    Key::Str(self.string()?)
                }
                tag => {
                    self.at -= 1;
                    return Err(self.error(format_args!(
                        "an array key that is {}, not an integer or a string",
                        kind(tag)
                    )));
                }
            };
            elements.push((key, self.value(depth + 1)?));
        }
        self.expect(b'}')?;
        Ok(Value::Array(elements))
    }
}

/// Whether `text` is a decimal as PHP's `unserialize()` reads one:
/// `[+-]?`, digits with an optional `.` (a digit on one side at least),
/// then an optional exponent `[eE][+-]?[0-9]+`.
fn decimal(text: &[u8]) -> bool {
    let digits = |text: &[u8]| text.iter().take_while(|byte| byte.is_ascii_digit()).count();
    let mut rest = text
        .strip_prefix(b"+")
        .or_else(|| text.strip_prefix(b"-"))
        .unwrap_or(text);
    let whole = digits(rest);
    rest = &rest[whole..];
    let mut fraction = 0;
    if let Some(after) = rest.strip_prefix(b".") {
        fraction = digits(after);
        rest = &after[fraction..];
    }
    if whole + fraction == 0 {
        return false;
    }
    if let Some(after) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let after = after
            .strip_prefix(b"+")
            .or_else(|| after.strip_prefix(b"-"))
            .unwrap_or(after);
        let exponent = digits(after);
        return exponent > 0 && exponent == after.len();
    }
    rest.is_empty()
}
