use std::time::Duration;

use super::*;
use crate::store::MemoryStore;

#[test]
fn a_full_registry_retires_idle_handles_nobody_holds_then_overflows() {
    let registry = Registry::builder()
        .max_circuits(2)
        .idle_after(Duration::ZERO)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let held = registry.get("a");
    drop(registry.get("b"));
    let c = registry.get("c");
    assert_eq!(registry.len(), 2);
    assert_eq!(registry.retired(), 1, "b, held by nobody");
    assert!(Arc::ptr_eq(&held, &registry.get("a")), "the held one stays");
    // Every handle held: a new name goes through the overflow circuit.
    let overflow = registry.get("d");
    assert_eq!(overflow.key(), "fuse:(overflow)");
    assert_eq!(registry.overflows(), 1);
    assert_eq!(registry.len(), 2);
    drop((held, c));
}
