use super::*;

/// A `current` check that says the writer's word still holds.
#[allow(clippy::unnecessary_wraps)] // the shape `Record::write` takes
fn holds() -> Result<(), ()> {
    Ok(())
}

/// A `current` check that says the writer's word moved on.
fn moved() -> Result<(), ()> {
    Err(())
}

#[test]
fn another_stamp_is_replaced_only_while_the_word_holds() {
    let record = Record::new();
    let old = Stamp {
        epoch: Epoch::new(3),
        claim: 1,
    };
    let new = Stamp {
        epoch: Epoch::new(3),
        claim: 9,
    };
    assert_eq!(record.read(new), None, "untouched");
    assert_eq!(record.write(new, 50, Keep::Latest, moved), Err(()));
    assert_eq!(
        record.read(new),
        None,
        "a writer whose word moved on writes nothing"
    );
    assert_eq!(record.write(new, 50, Keep::Latest, holds), Ok(50));
    assert_eq!(record.write(old, 40, Keep::Latest, moved), Err(()));
    assert_eq!(record.read(new), Some(50));
    assert_eq!(
        record.write(new, 45, Keep::Latest, moved),
        Ok(50),
        "the latest time stays"
    );
    assert_eq!(
        record.write(new, 60, Keep::Latest, moved),
        Ok(60),
        "the latest time stays"
    );
    let next_epoch = Stamp {
        epoch: Epoch::new(4),
        claim: 0,
    };
    assert_eq!(record.write(next_epoch, 70, Keep::Latest, holds), Ok(70));
    assert_eq!(record.read(new), None);
    let first = Record::new();
    let stamp = Stamp {
        epoch: Epoch::new(1),
        claim: 0,
    };
    assert_eq!(first.write(stamp, 10, Keep::First, holds), Ok(10));
    assert_eq!(
        first.write(stamp, 20, Keep::First, moved),
        Ok(10),
        "the first time stays"
    );
}

#[test]
fn a_stamp_of_any_age_is_replaced_while_the_word_holds() {
    for epoch in [0, 1, (1 << 29) - 1, 1 << 29, (1 << 29) + 1, (1 << 30) - 1] {
        let record = Record::new();
        let stale = Stamp {
            epoch: Epoch::new(epoch),
            claim: 5,
        };
        assert_eq!(record.write(stale, 1, Keep::Latest, holds), Ok(1));
        let current = Stamp {
            epoch: Epoch::new(0),
            claim: 1,
        };
        assert_eq!(
            record.write(current, 2, Keep::Latest, holds),
            Ok(2),
            "epoch {epoch}"
        );
        assert_eq!(record.read(current), Some(2));
    }
}

#[test]
fn ring_recent_reads_oldest_first() {
    let ring = Ring::new(3);
    for (claim, at) in [(1, 10), (2, 20), (3, 30)] {
        assert_eq!(ring.write(Epoch::new(1), claim, at, holds), Ok(()));
    }
    let got: Vec<_> = ring.recent(Epoch::new(1), 3, 3).collect();
    assert_eq!(got, vec![Some(10), Some(20), Some(30)]);
    let got: Vec<_> = ring.recent(Epoch::new(1), 4, 2).collect();
    assert_eq!(got, vec![Some(30), None], "claim 4 is not written yet");
    assert_eq!(
        ring.recent(Epoch::new(2), 3, 1).next(),
        Some(None),
        "other epoch"
    );
    assert_eq!(
        ring.write(Epoch::new(1), 7, 70, holds),
        Ok(()),
        "claim 7 shares a slot with claim 3"
    );
    assert_eq!(
        ring.write(Epoch::new(1), 3, 35, moved),
        Err(()),
        "a late writer of claim 3 is refused"
    );
    assert_eq!(ring.recent(Epoch::new(1), 7, 1).next(), Some(Some(70)));
    let last = CLAIMS_MODULUS - 1;
    assert_eq!(ring.write(Epoch::new(1), last, 80, holds), Ok(()));
    assert_eq!(
        ring.write(Epoch::new(1), 0, 90, holds),
        Ok(()),
        "claims wrap"
    );
    let got: Vec<_> = ring.recent(Epoch::new(1), 0, 2).collect();
    assert_eq!(got, vec![Some(80), Some(90)]);
}
