//! Shared stores (SPEC §8): one circuit under one key, for every process
//! that uses the key.

pub(crate) mod stored;
