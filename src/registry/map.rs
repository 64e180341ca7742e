//! The registry's map: (name, operation) -> circuit, and how a lookup
//! hashes and compares without allocating.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use foldhash::fast::RandomState;

use crate::backing::Backing;
use crate::fuse::Fuse;

/// (name, operation) -> circuit, in a concurrent hash map built for reads
/// (papaya: lock-free lookups, incremental resizing, so a new circuit
/// costs the same whatever the number of circuits). Hashed with foldhash
/// (randomly seeded, a few times faster than the standard `SipHash` on
/// short names).
pub(super) type Circuits<B> = papaya::HashMap<Pair, Arc<Fuse<B>>, RandomState>;

/// Where a circuit was looked up from: its name and operation (`""` for
/// none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Pair {
    pub(super) name: Box<str>,
    pub(super) operation: Box<str>,
}

/// A [`Pair`] borrowed for a lookup: hashes and compares as the pair does.
#[derive(Clone, Copy)]
pub(super) struct Lookup<'a> {
    pub(super) name: &'a str,
    pub(super) operation: &'a str,
}

impl Hash for Pair {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Lookup {
            name: &self.name,
            operation: &self.operation,
        }
        .hash(state);
    }
}

impl Hash for Lookup<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // `str`'s hash ends each piece with a marker: ("a", "bc") and
        // ("ab", "c") differ.
        self.name.hash(state);
        self.operation.hash(state);
    }
}

impl papaya::Equivalent<Pair> for Lookup<'_> {
    fn equivalent(&self, pair: &Pair) -> bool {
        same(&pair.name, self.name) && same(&pair.operation, self.operation)
    }
}

/// `a == b` for the short texts of names, eight bytes at a time. The
/// standard comparison calls the C library's `memcmp`; measured on an
/// Intel Xeon (KVM), glibc's AVX-512 version spent about 80 ns on each
/// comparison of a short name, three quarters of a lookup (100 ns, now
/// 28 ns).
#[inline]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    let words_equal = x.by_ref().zip(y.by_ref()).all(|(x, y)| {
        u64::from_ne_bytes(x.try_into().unwrap_or_default())
            == u64::from_ne_bytes(y.try_into().unwrap_or_default())
    });
    words_equal && x.remainder().iter().zip(y.remainder()).all(|(x, y)| x == y)
}

/// Each circuit of the map once: under the name and operation it was
/// created with, not under the other pairs that share its key.
pub(super) fn each_circuit<'g, B: Backing, G: papaya::Guard>(
    circuits: &'g papaya::HashMapRef<'_, Pair, Arc<Fuse<B>>, RandomState, G>,
) -> impl Iterator<Item = &'g Arc<Fuse<B>>> {
    circuits.iter().filter_map(|(pair, fuse)| {
        let own = fuse.name() == &*pair.name && fuse.operation().unwrap_or("") == &*pair.operation;
        own.then_some(fuse)
    })
}
