//! Graded admission (SPEC §11) in the status: a closed circuit that ramps
//! up or throttles says the share of calls it admits and why after its
//! columns; the JSON says it of every circuit.

use super::*;

/// A closed circuit of an admin API that admits `admission` of its calls
/// because of `why`, its throttle's window `requests` and `accepts`.
fn graded(key: &str, admission: f64, why: &str, requests: u64, accepts: u64) -> serde_json::Value {
    let mut value = view(key, "closed");
    value["admission"] = admission.into();
    value["graded_by"] = why.into();
    value["requests"] = requests.into();
    value["accepts"] = accepts.into();
    value
}

/// Through an admin API: a ramp and a throttle are said after the
/// columns, with the throttle's window; a circuit that admits every call,
/// one not closed, and one of an older API (which says nothing of it)
/// say nothing; a reason with control characters is escaped.
#[test]
fn an_admin_api_s_graded_circuits_show_the_share_they_admit() {
    let (url, _) = fake_api(100, move |_| {
        let mut open = graded("fuse:shop:open", 0.5, "ramp_up", 0, 0);
        open["state"] = "open".into();
        let mut plain = view("fuse:shop:plain", "closed");
        plain["admission"] = 1.0.into();
        plain["graded_by"] = serde_json::Value::Null;
        serde_json::json!({
            "circuits": [
                graded("fuse:shop:billing", 0.35, "ramp_up", 0, 0),
                graded("fuse:shop:search", 0.125, "throttle", 400, 25),
                graded("fuse:shop:hostile", 0.5, "\u{1b}[2J", 0, 0),
                open,
                plain,
                view("fuse:shop:older", "closed"),
            ],
            "total": 6, "next": null, "writable": false,
        })
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status"]);
    assert!(!has_control(&out.stdout), "{out:?}");
    let table = stdout(&out);
    assert!(
        line_of(&table, "fuse:shop:billing").ends_with("  admits 35 % (ramp_up)"),
        "{table}"
    );
    assert!(
        line_of(&table, "fuse:shop:search")
            .ends_with("  admits 12 % (throttle: 25 accepts of 400 requests)"),
        "{table}"
    );
    assert!(
        line_of(&table, "fuse:shop:hostile").ends_with("  admits 50 % (\\x1b[2J)"),
        "{table}"
    );
    for key in ["fuse:shop:open", "fuse:shop:plain", "fuse:shop:older"] {
        assert!(!line_of(&table, key).contains("admits"), "{key}: {table}");
    }
}

/// `fuse --url status` on an in-process circuit that recovered: its ramp
/// (ten minutes from 20 %) after its columns, and in JSON the view's
/// fields and settings.
#[test]
fn an_in_process_ramp_reaches_the_status() {
    use fuse_breaker::admin::{Admin, CircuitView};
    use fuse_breaker::{Config, Registry};
    use std::sync::Arc;
    use std::time::Duration;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_millis(50))
        .ramp_up(Duration::from_mins(10))
        .ramp_up_floor(20)
        .build()
        .unwrap();
    let registry = Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .build()
            .unwrap(),
    );
    let charge = registry.get("charge");
    registry.get("search");
    charge.try_acquire().unwrap().failure();
    std::thread::sleep(Duration::from_millis(60));
    charge.try_acquire().expect("a probe").success();
    let target = serve_admin(&runtime, Admin::new().registry(registry.clone()));

    let table = stdout(&fuse(&target, "shop", &["status"]));
    assert!(
        line_of(&table, "fuse:shop:charge").ends_with("  admits 20 % (ramp_up)"),
        "{table}"
    );
    assert!(
        !line_of(&table, "fuse:shop:search").contains("admits"),
        "{table}"
    );
    let json = stdout(&fuse(&target, "shop", &["status", "charge", "--json"]));
    let view: CircuitView = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(view.graded_by.as_deref(), Some("ramp_up"), "{json}");
    assert!((view.admission.to_f64() - 0.2).abs() < 1e-6, "{json}");
    assert_eq!(
        (view.config.ramp_up_ms, view.config.ramp_up_floor),
        (Some(600_000), 20),
        "{json}"
    );
}

/// On every store: a shared circuit that recovered ramps up (ten minutes
/// from 10 %, `FUSE_RAMP_UP`) from the time its store closed it, said
/// after its columns and in JSON with the settings; one that never opened
/// admits every call and says nothing after its columns.
#[test]
fn a_shared_circuit_s_ramp_reaches_the_status() {
    use std::time::Duration;

    use fuse_breaker::Config;

    let open = Duration::from_millis(100);
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(open)
        .ramp_up(Duration::from_mins(10))
        .build()
        .unwrap();
    for target in targets() {
        let at = &target.url;
        let app = app();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let circuit = |name: &str| {
                fuse_breaker::Fuse::builder(name)
                    .store(store.clone())
                    .app(&app)
                    .config(config.clone())
                    .build()
            };
            let (billing, plain) = (circuit("billing"), circuit("plain"));
            // Closed by hand: a key that holds a closed circuit, no ramp.
            plain.force_closed().await.unwrap();
            billing
                .try_acquire()
                .await
                .unwrap()
                .failure()
                .await
                .unwrap();
            tokio::time::sleep(open + Duration::from_millis(50)).await;
            let probe = billing.try_acquire().await.expect("a probe");
            probe.success().await.unwrap();
            let shown = billing.snapshot().await.unwrap();
            assert_eq!(shown.graded_by, Some(fuse_breaker::Grading::RampUp), "{at}");
        });
        let status = |json: bool| {
            let mut command = command();
            command.args([target.flag, &target.url, "--app", &app, "status"]);
            if json {
                command.args(["billing", "--json"]);
            }
            stdout(
                &command
                    .env("FUSE_FAILURE_THRESHOLD", "1")
                    .env("FUSE_HALF_OPEN_PROBES", "1")
                    .env("FUSE_OPEN_DURATION", "100ms")
                    .env("FUSE_RAMP_UP", "10m")
                    .output()
                    .unwrap(),
            )
        };
        let table = status(false);
        let line = line_of(&table, &format!("fuse:{app}:billing"));
        assert!(line.contains(" closed "), "{at}: {table}");
        assert!(line.ends_with("  admits 10 % (ramp_up)"), "{at}: {table}");
        let line = line_of(&table, &format!("fuse:{app}:plain"));
        assert!(!line.contains("admits"), "{at}: {table}");
        let json: serde_json::Value = serde_json::from_str(status(true).trim()).unwrap();
        assert_eq!(
            (
                &json["admission"],
                &json["graded_by"],
                &json["requests"],
                &json["accepts"]
            ),
            (&0.1.into(), &"ramp_up".into(), &0.into(), &0.into()),
            "{at}: {json}"
        );
        assert_eq!(
            (
                &json["ramp_up_ms"],
                &json["ramp_up_floor"],
                &json["throttle_k"],
                &json["max_throttle"]
            ),
            (
                &600_000.into(),
                &10.into(),
                &serde_json::Value::Null,
                &90.into()
            ),
            "{at}: {json}"
        );
    }
}
