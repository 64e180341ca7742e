//! [`Factor`]: a non-negative number with six decimal places, kept as an
//! integer so that a [`Config`](crate::Config) stays `Eq` and `Hash` and
//! every engine computes the same nanosecond from it.

use std::fmt;
use std::str::FromStr;

/// A non-negative number with six decimal places (`open_backoff`,
/// `open_jitter`): a whole number of millionths.
///
/// ```
/// use fuse_breaker::config::Factor;
///
/// let doubling = Factor::from_f64(2.0);
/// assert_eq!(doubling.millionths(), 2_000_000);
/// assert_eq!(doubling.to_string(), "2");
/// assert_eq!("0.25".parse::<Factor>()?, Factor::from_millionths(250_000));
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Factor(u32);

/// Millionths in one.
const MILLION: u32 = 1_000_000;

impl Factor {
    /// Zero.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Factor::ZERO.millionths(), 0);
    /// ```
    pub const ZERO: Factor = Factor(0);

    /// One.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Factor::ONE.to_f64(), 1.0);
    /// ```
    pub const ONE: Factor = Factor(MILLION);

    /// The factor of `millionths` millionths.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Factor::from_millionths(1_500_000).to_f64(), 1.5);
    /// ```
    pub const fn from_millionths(millionths: u32) -> Self {
        Factor(millionths)
    }

    /// `value` rounded to the nearest millionth. A value that no factor
    /// holds (negative, not a number, or above 4294.967295) gives the
    /// largest factor, which every setting refuses with its value.
    ///
    /// ```
    /// use fuse_breaker::config::Factor;
    /// assert_eq!(Factor::from_f64(0.2).millionths(), 200_000);
    /// assert_eq!(Factor::from_f64(-1.0), Factor::from_millionths(u32::MAX));
    /// ```
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked range
    pub fn from_f64(value: f64) -> Self {
        let scaled = (value * f64::from(MILLION)).round();
        if scaled >= 0.0 && scaled <= f64::from(u32::MAX) {
            Factor(scaled as u32)
        } else {
            Factor(u32::MAX)
        }
    }

    /// The factor in millionths.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Factor::ONE.millionths(), 1_000_000);
    /// ```
    pub const fn millionths(self) -> u32 {
        self.0
    }

    /// The factor as a floating-point number.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Factor::from_millionths(250_000).to_f64(), 0.25);
    /// ```
    pub fn to_f64(self) -> f64 {
        f64::from(self.0) / f64::from(MILLION)
    }
}

impl fmt::Display for Factor {
    /// The shortest decimal form: `2`, `1.5`, `0.000001`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, part) = (self.0 / MILLION, self.0 % MILLION);
        if part == 0 {
            return write!(f, "{whole}");
        }
        let digits = format!("{part:06}");
        write!(f, "{whole}.{}", digits.trim_end_matches('0'))
    }
}

impl FromStr for Factor {
    type Err = String;

    /// A decimal number with at most six decimal places (`2`, `1.5`,
    /// `0.25`); anything else is refused with why.
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (whole, part) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || (text.contains('.') && !digits(part)) {
            return Err(format!(
                "{text:?} is not a decimal number such as 2 or 0.25"
            ));
        }
        if part.len() > 6 {
            return Err(format!("{text:?} has more than six decimal places"));
        }
        let too_large = || format!("{text:?} is too large");
        let whole: u32 = whole.parse().map_err(|_| too_large())?;
        let part: u32 = format!("{part:0<6}").parse().map_err(|_| too_large())?;
        whole
            .checked_mul(MILLION)
            .and_then(|w| w.checked_add(part))
            .map(Factor)
            .ok_or_else(too_large)
    }
}

#[cfg(test)]
mod tests;
