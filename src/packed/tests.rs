use super::*;
use proptest::prelude::*;

fn heads() -> impl Strategy<Value = (Head, Cursor)> {
    (
        0u8..3,
        (0u32..(1 << Epoch::BITS)).prop_map(Epoch::new),
        0..=MAX_HALF_OPEN_PROBES,
        0..=MAX_HALF_OPEN_PROBES,
        (0..CLAIMS_MODULUS, 0..OPENING.max()),
        0..=MAX_FAILURE_THRESHOLD,
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(
                s,
                epoch,
                successes,
                inflight,
                (claims, n),
                live,
                (rate, timed, throttle, ramping),
            )| {
                let mut head = Head::closed(epoch);
                let marks = Marks {
                    rate,
                    timed: rate && timed,
                    throttle,
                };
                let mut cursor = Cursor {
                    marks,
                    ..Cursor::default()
                };
                match s {
                    0 => {
                        cursor = Cursor {
                            claims,
                            live,
                            marks,
                        };
                        head.ramping = ramping;
                    }
                    1 => head = Head::open(epoch, n),
                    _ => {
                        head.state = State::HalfOpen;
                        head.successes = successes;
                        head.inflight = inflight;
                    }
                }
                (head, cursor)
            },
        )
}

proptest! {
    #[test]
    fn round_trip((head, cursor) in heads()) {
        let word = Word::pack(&head, cursor);
        prop_assert_eq!(word.unpack(), (head, cursor));
        prop_assert_eq!(word.state(), head.state);
        prop_assert_eq!(word.epoch(), head.epoch);
        prop_assert_eq!(Word::from_bits(word.bits()), word);
    }
}

fn grants() -> impl Strategy<Value = Grant> {
    (
        any::<bool>(),
        (0u32..(1 << Epoch::BITS)).prop_map(Epoch::new),
    )
        .prop_map(|(probe, epoch)| {
            let kind = if probe {
                crate::model::PermitKind::Probe
            } else {
                crate::model::PermitKind::Closed
            };
            Grant::new(kind, epoch)
        })
}

proptest! {
    /// The closed admission read off the word is the model's.
    #[test]
    fn closed_grant_is_the_models((head, cursor) in heads()) {
        let word = Word::pack(&head, cursor);
        let config = crate::Config::default();
        let span = || Ok::<_, ()>(crate::model::Span::since(0));
        let model = crate::model::acquire(&config, head, span, || 0);
        if let Some(grant) = word.closed_grant() {
            prop_assert_eq!(head.state, State::Closed);
            prop_assert_eq!(model, Ok((crate::model::Decision::Granted(grant), None)));
        } else {
            prop_assert_ne!(head.state, State::Closed);
        }
    }

    /// A quiet success is exactly a success the model says changes
    /// nothing in the word.
    #[test]
    fn quiet_success_is_the_models((head, cursor) in heads(), grant in grants(), same in any::<bool>()) {
        // Half the grants are of the word's own epoch.
        let grant = if same { Grant::new(grant.kind(), head.epoch) } else { grant };
        let word = Word::pack(&head, cursor);
        let config = crate::Config::default();
        let effect = crate::model::verdict(&config, head, grant, crate::Verdict::Success);
        let nothing = match effect {
            crate::model::Effect::Record(outcome) => !outcome.failed && cursor.live == 0,
            crate::model::Effect::Stale | crate::model::Effect::Nothing => true,
            crate::model::Effect::Move(_) => false,
        };
        if word.quiet_success(grant) {
            prop_assert!(nothing, "{:?} {:?} {:?}", head, cursor, grant);
        }
        let count = !cursor.marks.rate && !cursor.marks.throttle;
        if effect == crate::model::Effect::Record(crate::policy::Outcome::SUCCESS) && cursor.live == 0 && count {
            prop_assert!(word.quiet_success(grant));
        }
        if !count {
            prop_assert!(!word.quiet_success(grant) || effect != crate::model::Effect::Record(crate::policy::Outcome::SUCCESS));
        }
    }

    /// An accepted success is exactly a closed success of the word's own
    /// closed epoch with no failures to clear, of a throttling `count`
    /// circuit: the throttle's accept is all it records.
    #[test]
    fn accepted_success_is_a_quiet_success_but_for_the_throttle((head, cursor) in heads(), grant in grants(), same in any::<bool>()) {
        let grant = if same { Grant::new(grant.kind(), head.epoch) } else { grant };
        let word = Word::pack(&head, cursor);
        let config = crate::Config::default();
        let effect = crate::model::verdict(&config, head, grant, crate::Verdict::Success);
        let records = effect == crate::model::Effect::Record(crate::policy::Outcome::SUCCESS);
        let expected = records && cursor.live == 0 && cursor.marks.throttle && !cursor.marks.rate;
        prop_assert_eq!(word.accepted_success(grant), expected);
    }

    /// A counted success is exactly a closed success of the word's own
    /// closed epoch, of a rate circuit (throttling or not: its throttle
    /// reads the rate window).
    #[test]
    fn counted_success_is_a_current_closed_success_under_rate((head, cursor) in heads(), grant in grants(), same in any::<bool>()) {
        let grant = if same { Grant::new(grant.kind(), head.epoch) } else { grant };
        let word = Word::pack(&head, cursor);
        let config = crate::Config::default();
        let effect = crate::model::verdict(&config, head, grant, crate::Verdict::Success);
        let records = effect == crate::model::Effect::Record(crate::policy::Outcome::SUCCESS);
        prop_assert_eq!(word.counted_success(grant), records && cursor.marks.rate);
        prop_assert_eq!(word.times_calls(), cursor.marks.timed);
    }

    /// A counted failure is exactly a failure the model records, on a
    /// count circuit that does not throttle; the cursor read and replaced at the word is the
    /// unpacked one.
    #[test]
    fn counted_failure_is_a_current_closed_failure_under_count((head, cursor) in heads(), grant in grants(), same in any::<bool>(), claims in 0..CLAIMS_MODULUS, live in 0..=MAX_FAILURE_THRESHOLD) {
        let grant = if same { Grant::new(grant.kind(), head.epoch) } else { grant };
        let word = Word::pack(&head, cursor);
        let config = crate::Config::default();
        let effect = crate::model::verdict(&config, head, grant, crate::Verdict::Failure);
        let records = effect == crate::model::Effect::Record(crate::policy::Outcome { failed: true, slow: false });
        prop_assert_eq!(word.counted_failure(grant), records && !cursor.marks.rate && !cursor.marks.throttle);
        if head.state == State::Closed {
            prop_assert_eq!(word.failures(), (cursor.claims, cursor.live));
            let moved = Word::pack(&head, Cursor { claims, live, ..cursor });
            prop_assert_eq!(word.with_failures(claims, live), moved);
        }
    }

    /// The marks survive every move of the word.
    #[test]
    fn marks_survive_every_move((head, cursor) in heads(), next in heads()) {
        let word = Word::next(&head, cursor, &next.0);
        prop_assert_eq!(word.unpack().1.marks, cursor.marks);
    }
}

#[test]
fn initial_is_closed_epoch_zero() {
    assert_eq!(
        Word::initial(&Config::default()).unpack(),
        (Head::closed(Epoch::ZERO), Cursor::default())
    );
}

#[test]
fn extremes_fit() {
    let mut head = Head::closed(Epoch::new(u32::MAX));
    let cursor = Cursor {
        claims: CLAIMS_MODULUS - 1,
        live: MAX_FAILURE_THRESHOLD,
        marks: Marks {
            rate: true,
            timed: true,
            throttle: true,
        },
    };
    assert_eq!(Word::pack(&head, cursor).unpack(), (head, cursor));
    head.state = State::HalfOpen;
    head.successes = MAX_HALF_OPEN_PROBES;
    head.inflight = MAX_HALF_OPEN_PROBES;
    assert_eq!(
        Word::pack(&head, Cursor::default()).unpack(),
        (head, Cursor::default())
    );
}
