use std::time::Duration;

use super::*;

fn config() -> Config {
    Config::builder()
        .failure_window(Duration::from_secs(10))
        .window_buckets(10)
        .minimum_calls(1)
        .throttle_k(2.0)
        .build()
        .unwrap()
}

const TAG: Tag = Tag {
    generation: 7,
    epoch: 3,
};

fn counts(requests: u64, accepts: u64) -> Asked {
    Asked { requests, accepts }
}

#[test]
fn a_fresh_record_holds_the_counts_and_names_its_epoch() {
    let config = config();
    let at = Duration::from_secs(1_700_000_000);
    let increment = increment(&config, TAG, counts(5, 2), Duration::from_mins(1));
    let record = fresh(&increment, at).unwrap();
    assert_eq!(
        String::from_utf8(record.clone()).unwrap(),
        "{\"fuse_throttle\":{\"generation\":7,\"epoch\":3,\"asked\":{\"width_us\":1000000,\
         \"buckets\":[[1700000000,5,3,0]]}}}"
    );
    assert_eq!(
        held(&config, Some(&record), TAG, at),
        Held::Ours(counts(5, 2))
    );
}

#[test]
fn increments_add_up_and_the_window_moves_on() {
    let config = config();
    let at = Duration::from_secs(1_700_000_000);
    let ttl = Duration::from_mins(1);
    let mut record = fresh(&increment(&config, TAG, counts(5, 2), ttl), at).unwrap();
    record = increment(&config, TAG, counts(3, 3), ttl)
        .apply(&record, at + Duration::from_secs(4))
        .unwrap();
    let later = at + Duration::from_secs(4);
    assert_eq!(
        held(&config, Some(&record), TAG, later),
        Held::Ours(counts(8, 5))
    );
    // Ten seconds on, the first bucket has left the window.
    let on = at + Duration::from_secs(10);
    assert_eq!(
        held(&config, Some(&record), TAG, on),
        Held::Ours(counts(3, 3))
    );
}

#[test]
fn an_epoch_finds_earlier_ones_replaceable_and_later_ones_over() {
    let config = config();
    let at = Duration::from_secs(1_700_000_000);
    let record = fresh(
        &increment(&config, TAG, counts(1, 1), Duration::from_mins(1)),
        at,
    )
    .unwrap();
    let next = Tag { epoch: 4, ..TAG };
    let before = Tag { epoch: 2, ..TAG };
    let unnamed = Tag {
        generation: 0,
        epoch: 0,
    };
    let other = Tag {
        generation: 9,
        epoch: 9,
    };
    assert_eq!(held(&config, Some(&record), next, at), Held::Replaceable);
    assert_eq!(held(&config, Some(&record), before, at), Held::Later);
    assert_eq!(held(&config, Some(&record), unnamed, at), Held::Later);
    assert_eq!(held(&config, Some(&record), other, at), Held::Replaceable);
    assert_eq!(held(&config, None, TAG, at), Held::Replaceable);
}

#[test]
fn what_this_crate_did_not_write_is_replaced_never_trusted() {
    let config = config();
    let at = Duration::from_secs(1_700_000_000);
    let of = |buckets: &str, width: u64| {
        format!(
            "{{\"fuse_throttle\":{{\"generation\":7,\"epoch\":3,\"asked\":{{\"width_us\":{width},\
             \"buckets\":{buckets}}}}}}}"
        )
    };
    for bad in [
        of("[[1700000000,1,2,0]]", 1_000_000),
        of("[[1700000000,1,0,0]]", 5),
        of(
            &format!("[{}]", vec!["[1,1,0,0]"; 2_000].join(",")),
            1_000_000,
        ),
        of("[[1700000000,-1,0,0]]", 1_000_000),
        "{\"fuse_throttle\":{}}".to_owned(),
        "not json".to_owned(),
    ] {
        assert_eq!(
            held(&config, Some(bad.as_bytes()), TAG, at),
            Held::Replaceable,
            "{bad:.80}"
        );
    }
}

#[test]
fn the_share_is_the_formula_s() {
    let config = config();
    // 100 requests, 20 accepts: (100 - 40) / 101.
    let share = share(&config, TAG, counts(100, 20));
    assert!((share.shed.probability() - 60.0 / 101.0).abs() < 1e-6);
    assert_eq!(key("fuse:a"), "fuse:a#throttle");
}
