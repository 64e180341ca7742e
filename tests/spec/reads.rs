//! §3: `state()` and `snapshot()` only read.

use super::*;

#[test]
fn state_and_snapshot_only_read_an_open_circuit_past_its_cooldown() {
    let (fuse, mock) = circuit(config(1, 2));
    trip(&fuse);
    set_time(&mock, secs(31));
    for _ in 0..3 {
        assert_eq!(fuse.state(), State::Open);
        assert_eq!(fuse.snapshot(), open(Duration::ZERO));
    }
    set_time(&mock, secs(3600));
    assert_eq!(fuse.state(), State::Open);
    assert_eq!(fuse.snapshot(), open(Duration::ZERO));
    // The call makes the move, and nothing was used up by the reads.
    let p1 = probe(&fuse);
    let p2 = probe(&fuse);
    assert_eq!(fuse.snapshot(), half_open(Duration::ZERO, 0, 2));
    drop((p1, p2));
}

#[test]
fn state_and_snapshot_only_read_a_closed_circuit() {
    let (fuse, mock) = circuit(config(2, 2));
    fail(&fuse);
    set_time(&mock, secs(61));
    assert_eq!(fuse.snapshot(), closed(vec![]), "aged out of the view");
    assert_eq!(fuse.state(), State::Closed);
    // Reading does not record, clear or open anything.
    set_time(&mock, secs(62));
    fail(&fuse);
    assert_eq!(fuse.snapshot(), closed(vec![secs(62)]));
}
