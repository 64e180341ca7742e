use super::*;
use crate::store::cache::Cache;
use std::sync::atomic::AtomicUsize;

#[test]
fn announcements_are_read_strictly() {
    let now = Duration::from_secs(1_700_000_000) + Duration::from_micros(12);
    assert_eq!(
        announcement(b"1700000000 12 12 fuse:billing{\"state\":\"open\"}"),
        Some(("fuse:billing", now, &b"{\"state\":\"open\"}"[..]))
    );
    // A key with spaces and digits is read by its length.
    assert_eq!(
        announcement(b"1700000000 12 8 fuse:1 2{}"),
        Some(("fuse:1 2", now, &b"{}"[..]))
    );
    for bad in [
        &b"1700000000 12 99 fuse:a{}"[..],
        b"17x 12 1 a{}",
        b"",
        // Times no clock tells: the sum overflows, microseconds of a
        // second or more, past what the rules count in.
        b"18446744073709551615 1000000 1 x{}",
        b"18446744073709551615 0 1 x{}",
        b"1700000000 1000000 1 x{}",
        b"99999999999 0 1 x{}",
        // Signs, an empty number, no key, a key that is not UTF-8.
        b"+1700000000 12 1 x{}",
        b"-1 12 1 x{}",
        b"1700000000  1 x{}",
        b"1700000000 12 0 {}",
        b"1700000000 12 2 \xff\xfe{}",
        b"1700000000 12 18446744073709551615 x{}",
    ] {
        assert_eq!(announcement(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

/// Runs of a listening loop: the first panics, the second returns, the
/// third listens until it is aborted.
#[tokio::test(start_paused = true)]
async fn the_listening_task_is_started_again_whatever_ends_it() {
    use crate::config::Config;
    struct Ended(Arc<AtomicUsize>);
    impl Drop for Ended {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let changes = Arc::new(Changes::new());
    let cache = Arc::new(Cache::new(
        "fuse:a",
        Arc::new(crate::store::circuit::live::Live::new(
            Config::default(),
            None,
        )),
        Duration::from_mins(1),
        None,
    ));
    changes.watch("fuse:a", &cache);
    let mirrored = || cache.decide(|_, _| Some(())).is_some();
    let remember = || {
        cache.remember(
            &crate::store::model::stored::Stored::fresh(1),
            1_700_000_000_000_000_000,
        );
    };
    remember();
    let (runs, ended) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let listening = Listening::default();
    let (counted, dropped) = (runs.clone(), ended.clone());
    listening.start(
        &tokio::runtime::Handle::current(),
        Arc::downgrade(&changes),
        move || {
            let run = counted.fetch_add(1, Ordering::SeqCst);
            let ended = Ended(dropped.clone());
            async move {
                let _ended = ended;
                match run {
                    0 => panic!("a listening loop that panics"),
                    1 => {}
                    _ => std::future::pending().await,
                }
            }
        },
    );
    let settle = async || {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    };
    settle().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!mirrored(), "mirrors forgotten when the loop panicked");
    remember();
    tokio::time::sleep(MIN_RELISTEN).await;
    settle().await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "started again after the panic"
    );
    assert!(!mirrored(), "mirrors forgotten when the loop returned");
    tokio::time::sleep(3 * MIN_RELISTEN).await;
    settle().await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "started again after it returned"
    );
    assert_eq!(ended.load(Ordering::SeqCst), 2);
    drop(listening);
    settle().await;
    assert_eq!(
        ended.load(Ordering::SeqCst),
        3,
        "the loop ends with the store"
    );
}
