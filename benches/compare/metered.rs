//! The metrics a bench built with `--features metrics` runs under: the
//! naming scheme of `FUSE_BENCH_METRIC_NAMES` (`fuse` unless set) and a
//! Prometheus recorder, installed before any circuit is built, as a
//! service that exposes `/metrics` runs. Shared by `benches/compare` and
//! `benches/instructions` (the latter includes this file by path).

/// Installs the scheme and the recorder, and returns the id of Fuse's
/// rows under them: `fuse_metrics` under the crate's names,
/// `fuse_resilience4j` under resilience4j's; `fuse` without the feature.
pub(crate) fn install() -> &'static str {
    #[cfg(feature = "metrics")]
    {
        let names = std::env::var("FUSE_BENCH_METRIC_NAMES")
            .map_or(Ok(fuse_breaker::MetricNames::Fuse), |names| names.parse())
            .expect("FUSE_BENCH_METRIC_NAMES: fuse or resilience4j");
        names.install().expect("the scheme is installed first");
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        metrics::set_global_recorder(recorder).expect("the one recorder");
        if names == fuse_breaker::MetricNames::Resilience4j {
            "fuse_resilience4j"
        } else {
            "fuse_metrics"
        }
    }
    #[cfg(not(feature = "metrics"))]
    "fuse"
}
