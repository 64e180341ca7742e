//! The stored model: a circuit as a store keeps it ([`stored`]: SPEC §8's
//! rules over the key's state, pure), its payload in either encoding
//! ([`payload`], [`codec`]), the increments a `rate` window takes where it
//! is kept ([`increment`]), the fleet's throttle window ([`asked`]), the quorum of reporters ([`quorum`]) and the
//! resolution of a store's times ([`resolution`]). It depends on nothing
//! else of the store.

pub(crate) mod asked;
pub(crate) mod codec;
pub(crate) mod increment;
pub(crate) mod payload;
pub(crate) mod quorum;
pub(crate) mod resolution;
pub(crate) mod stored;
