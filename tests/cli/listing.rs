//! Listing a store's keys: every key, page by page, the unreadable ones
//! marked, an app a literal prefix, a cluster's shards.

use super::*;

#[test]
fn every_key_is_listed_and_the_unreadable_ones_marked() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        stdout(&fuse(&target, &app, &["open", "good"]));
        put(&target, &format!("fuse:{app}:corrupt"), "[1, 2]");
        let mut bad = vec![format!("fuse:{app}:corrupt")];
        if target.flag == "--redis" {
            let mut redis = redis::Client::open(target.url.as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            let _: i64 = redis::cmd("RPUSH")
                .arg(format!("fuse:{app}:alist"))
                .arg("x")
                .query(&mut redis)
                .unwrap();
            bad.push(format!("fuse:{app}:alist"));
        }
        if !target.url.starts_with("postgres") {
            let mut key = format!("fuse:{app}:").into_bytes();
            key.extend_from_slice(b"\xff\xfe");
            put_bytes(&target, &key, CLOSED);
            bad.push(format!("fuse:{app}:\\xff\\xfe"));
        }

        let out = fuse(&target, &app, &["status"]);
        let table = stdout(&out);
        let errors = String::from_utf8_lossy(&out.stderr);
        assert!(
            line_of(&table, &format!("fuse:{app}:good")).contains(" open "),
            "{at}: {table}"
        );
        for key in &bad {
            assert!(
                line_of(&table, key).contains(" unreadable "),
                "{at}: {key}: {table}"
            );
            assert!(errors.contains(key.as_str()), "{at}: {key}: {errors}");
        }
        assert!(errors.contains("not a circuit"), "{at}: {errors}");

        let json = stdout(&fuse(&target, &app, &["status", "--json"]));
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), bad.len() + 1, "{at}: {json}");
        let errors = lines.iter().filter(|line| line["error"].is_string());
        assert_eq!(errors.count(), bad.len(), "{at}: {json}");
        assert!(
            lines
                .iter()
                .any(|line| line["key"] == format!("fuse:{app}:good") && line["state"] == "open"),
            "{at}: {json}"
        );
    }
}

#[test]
fn more_than_ten_thousand_circuits_are_all_listed() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let keys: Vec<Vec<u8>> = (0..10_050)
            .map(|n| format!("fuse:{app}:c{n:05}").into_bytes())
            .collect();
        put_many(&target, &keys, CLOSED);
        let json = stdout(&fuse(&target, &app, &["status", "--json"]));
        remove_under(&target, &format!("fuse:{app}:"));
        let mut listed: Vec<String> = json
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["key"].as_str().unwrap().to_owned()
            })
            .collect();
        listed.sort();
        listed.dedup();
        assert_eq!(listed.len(), keys.len(), "{at}");
    }
}

/// An app's listing holds the keys under that app as written, whatever
/// its characters mean to Redis's `MATCH`, `LIKE` or `GLOB`.
#[test]
fn an_app_is_a_literal_prefix_on_every_store() {
    for target in targets() {
        let at = &target.url;
        let base = app();
        let apps: Vec<String> = ["*", "ping", "[b]", "b", "\\*", "_", "%", "x", "?", "\\"]
            .iter()
            .map(|tail| format!("{base}{tail}"))
            .collect();
        for app in &apps {
            stdout(&fuse(&target, app, &["open", "n"]));
        }
        for app in &apps {
            let json = stdout(&fuse(&target, app, &["status", "--json"]));
            let keys: Vec<String> = json
                .lines()
                .map(|line| {
                    let value: serde_json::Value = serde_json::from_str(line).unwrap();
                    value["key"].as_str().unwrap().to_owned()
                })
                .collect();
            assert_eq!(keys, [format!("fuse:{app}:n")], "{at}: --app {app:?}");
        }
    }
}

/// Every store's listing, page by page: every key under the prefix once
/// (Redis's `SCAN` may repeat one), none beside it, none expired; in byte
/// order across pages where the store pages in that order.
#[test]
fn the_stores_list_their_keys_page_by_page() {
    use fuse_breaker::store::{MemoryStore, Store};
    use std::sync::Arc;

    let targets = targets();
    block_on(async {
        let mut stores: Vec<(Arc<dyn Store>, bool)> = vec![(Arc::new(MemoryStore::new()), true)];
        for target in targets {
            // Redis's SCAN pages in no order.
            let ordered = target.flag != "--redis";
            stores.push((fuse_breaker::store::open(&target.url).unwrap(), ordered));
        }
        let ttl = std::time::Duration::from_mins(1);
        for (store, ordered) in stores {
            let at = store.name().to_owned();
            let app = app();
            let prefix = format!("fuse:{app}:");
            let mut keys: Vec<String> = (0..25).map(|n| format!("{prefix}k{n:02}")).collect();
            keys.push(format!("{prefix}é"));
            for key in keys
                .iter()
                .chain(&[format!("fuse:{app}x:k"), format!("fuse:{app}")])
            {
                let swapped = store.swap(key, None, CLOSED.as_bytes(), ttl, false).await;
                assert!(swapped.is_ok(), "{at}: {swapped:?}");
            }
            let expired = format!("{prefix}expired");
            store
                .swap(
                    &expired,
                    None,
                    CLOSED.as_bytes(),
                    std::time::Duration::from_millis(1),
                    false,
                )
                .await
                .unwrap();
            // A row lives through the second its expiry names (as
            // milon/fuse's do), the second after the write's end.
            tokio::time::sleep(std::time::Duration::from_millis(2100)).await;

            let (mut listed, mut pages, mut after) = (Vec::new(), 0, None::<String>);
            loop {
                let page = store.keys(&prefix, after.as_deref(), 7).await.unwrap();
                assert!(page.not_utf8.is_empty(), "{at}");
                listed.extend(page.keys);
                pages += 1;
                assert!(pages < 100, "{at}: the listing does not end");
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            if ordered {
                assert!(listed.is_sorted(), "{at}: {listed:?}");
                assert!(pages >= 4, "{at}: {pages} pages");
            }
            listed.sort();
            listed.dedup();
            assert_eq!(listed, keys, "{at}");
            // Where a cursor is not a key (Redis's SCAN, SQLite's hex), one
            // that is not the store's is refused, named.
            let bad = store.keys(&prefix, Some("not a cursor"), 7).await;
            if at.starts_with("redis") || at.starts_with("sqlite") {
                assert!(
                    bad.unwrap_err().to_string().contains("not a cursor"),
                    "{at}"
                );
            }
        }
    });
}

/// On a Redis Cluster (`FUSE_TEST_REDIS_CLUSTER_URL`): circuits on every
/// shard are all listed (every primary scanned, page by page), and opened,
/// closed and reset by key.
#[test]
fn a_cluster_s_circuits_on_every_shard_are_listed_and_changed() {
    let Some(url) = server(
        "FUSE_TEST_REDIS_CLUSTER_URL",
        "fuse command's Redis Cluster",
    ) else {
        return;
    };
    let target = Target {
        flag: "--redis",
        url: url.clone(),
    };
    let app = app();
    let nodes: Vec<String> = url
        .trim_start_matches("redis+cluster://")
        .split(',')
        .map(|node| format!("redis://{node}"))
        .collect();
    let mut cluster = redis::cluster::ClusterClient::new(nodes)
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = (0..3_000).map(|n| format!("fuse:{app}:c{n:04}")).collect();
    let mut pipe = redis::cluster::cluster_pipe();
    for key in &keys {
        pipe.cmd("SET")
            .arg(key)
            .arg(CLOSED)
            .arg("EX")
            .arg(600)
            .ignore();
    }
    let () = pipe.query(&mut cluster).unwrap();

    let json = stdout(&fuse(&target, &app, &["status", "--json"]));
    let mut listed: Vec<String> = json
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["key"].as_str().unwrap().to_owned()
        })
        .collect();
    listed.sort();
    assert_eq!(listed, keys, "every key once, from every primary");

    stdout(&fuse(&target, &app, &["open", "c0042"]));
    let json = stdout(&fuse(&target, &app, &["status", "c0042", "--json"]));
    assert!(json.contains("\"state\":\"open\""), "{json}");
    stdout(&fuse(&target, &app, &["close", "c0042"]));
    let json = stdout(&fuse(&target, &app, &["status", "c0042", "--json"]));
    assert!(json.contains("\"state\":\"closed\""), "{json}");
    stdout(&fuse(&target, &app, &["reset", "c0042"]));

    let mut pipe = redis::cluster::cluster_pipe();
    for key in &keys {
        pipe.cmd("DEL").arg(key).ignore();
    }
    let () = pipe.query(&mut cluster).unwrap();
}
