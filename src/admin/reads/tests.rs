use super::*;

const MS: Duration = Duration::from_millis(1);

#[test]
fn the_budget_holds_per_second_and_refills_as_much_a_second() {
    let start = Instant::now();
    let mut budget = Budget::new(10, start);
    assert_eq!(budget.take(25, start), 10);
    assert_eq!(budget.take(1, start), 0);
    assert_eq!(budget.take(5, start + 99 * MS), 0);
    assert_eq!(budget.take(5, start + 100 * MS), 1);
    assert_eq!(budget.take(5, start + 350 * MS), 2);
    // Never more than a second's worth, however long it rested.
    assert_eq!(budget.take(100, start + Duration::from_hours(1)), 10);
    // An instant before the last is no gain.
    assert_eq!(budget.take(1, start), 0);
}

fn kept(at: Instant) -> Kept {
    Kept {
        outcome: Outcome::Unreachable(String::new()),
        at,
    }
}

fn names(plans: &[Plan]) -> Vec<&'static str> {
    plans
        .iter()
        .map(|plan| match plan {
            Plan::Kept(_) => "kept",
            Plan::Read => "read",
            Plan::Unread => "unread",
        })
        .collect()
}

#[test]
fn fresh_readings_serve_and_the_oldest_are_read_first() {
    let start = Instant::now();
    let mut inner = Inner {
        budget: Budget::new(2, start),
        kept: HashMap::new(),
    };
    // Readings a, c and b half a second, two and three seconds before
    // `now`; one a minute before.
    let now = start + REMEMBER + 10 * FRESH;
    inner
        .kept
        .insert("a".into(), kept(start + REMEMBER + 9 * FRESH + FRESH / 2));
    inner
        .kept
        .insert("b".into(), kept(start + REMEMBER + 7 * FRESH));
    inner
        .kept
        .insert("c".into(), kept(start + REMEMBER + 8 * FRESH));
    inner.kept.insert("gone".into(), kept(start + 10 * FRESH));
    // Budget: two reads; "d" (never read) and "b" (the oldest) get them.
    let plans = inner.plan(&["a", "b", "c", "d"], now);
    assert_eq!(names(&plans), ["kept", "read", "unread", "read"]);
    assert!(!inner.kept.contains_key("gone"), "forgotten");
    // Read; half a second on, one more read, for "c": each its turn.
    inner.kept.insert("b".into(), kept(now));
    inner.kept.insert("d".into(), kept(now));
    let plans = inner.plan(&["b", "c", "d"], now + FRESH / 2);
    assert_eq!(names(&plans), ["kept", "read", "kept"]);
}
