//! The name of the SQL store's table, checked once so that it can be put in
//! a statement as it is.

use std::fmt;

/// A table name of letters, digits and underscores, not starting with a
/// digit, at most 63 bytes (PostgreSQL's limit): nothing in it can end the
/// quoted identifier it is written as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Table(String);

/// milon/fuse's table.
pub(crate) const DEFAULT_TABLE: &str = "fuse_circuits";

impl Table {
    /// `name`, or why it cannot be a table's.
    pub(crate) fn new(name: &str) -> Result<Self, String> {
        let first = name.chars().next();
        let valid = !name.is_empty()
            && name.len() <= 63
            && first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(Table(name.to_owned()))
        } else {
            Err(format!(
                "{name:?} is not a table name: letters, digits and underscores, \
                 not starting with a digit, at most 63 bytes"
            ))
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.0
    }
}

impl Default for Table {
    fn default() -> Self {
        Table(DEFAULT_TABLE.to_owned())
    }
}

/// The quoted identifier.
impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0)
    }
}

#[cfg(test)]
mod tests;
