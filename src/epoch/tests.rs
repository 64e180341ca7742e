use super::*;

#[test]
fn epochs_wrap_at_two_to_the_thirty() {
    let last = Epoch::new(u32::MAX);
    assert_eq!(last.get(), (1 << 30) - 1);
    assert_eq!(last.next(), Epoch::ZERO);
    assert_eq!(Epoch::ZERO.previous(), last);
    assert_eq!(Epoch::new(5).back(7), Epoch::new((1 << 30) - 2));
    assert_eq!(Epoch::new(1 << 30), Epoch::ZERO);
}
