use super::*;

#[test]
fn a_slot_s_channel_is_in_that_slot() {
    for key in ["fuse:billing", "fuse:a}b", "fuse:{x}y", "", "fuse:{}"] {
        let slot = Slot::for_key(key);
        let name = slot_channel("fuse:changes", slot);
        assert!(name.starts_with("fuse:changes{"), "{name}");
        assert_eq!(Slot::for_key(&name), slot, "{key}: {name}");
    }
    for n in 0..16_384 {
        let slot = Slot::new(n).unwrap();
        assert_eq!(Slot::for_key(slot_channel("c", slot)), slot);
    }
}
