//! The pipelines' metrics through the `metrics` facade, read back by a recorder of
//! our own: the names, the `pipeline` label, drops by reason and level, and the
//! publisher thread's last publish when it stops. Run by `.ci/run` with
//! `--features metrics`.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loglag::{Level, Mode, NonBlockingBuilder};
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};

/// Every value set, by `name{label=value,…}`.
#[derive(Default, Clone)]
struct Values(Arc<Mutex<HashMap<String, f64>>>);

struct Slot(String, Values);

impl CounterFn for Slot {
    fn increment(&self, value: u64) {
        *self.1 .0.lock().unwrap().entry(self.0.clone()).or_default() += value as f64;
    }
    fn absolute(&self, value: u64) {
        self.1
             .0
            .lock()
            .unwrap()
            .insert(self.0.clone(), value as f64);
    }
}

impl GaugeFn for Slot {
    fn increment(&self, value: f64) {
        *self.1 .0.lock().unwrap().entry(self.0.clone()).or_default() += value;
    }
    fn decrement(&self, value: f64) {
        *self.1 .0.lock().unwrap().entry(self.0.clone()).or_default() -= value;
    }
    fn set(&self, value: f64) {
        self.1 .0.lock().unwrap().insert(self.0.clone(), value);
    }
}

fn key_text(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Values {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Slot(key_text(key), self.clone())))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Slot(key_text(key), self.clone())))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[test]
fn pipelines_publish_their_totals_through_the_facade() {
    let values = Values::default();
    metrics::set_global_recorder(values.clone()).unwrap();
    struct Failing;
    impl loglag::sink::Sink for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("an injected I/O error"))
        }
    }
    let (app, app_guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(std::io::sink());
    let (audit, audit_guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(Failing)
        .unwrap();
    for _ in 0..7 {
        app.submit(Level::Info, b"ok\n");
    }
    audit.submit(Level::Warn, b"lost\n");
    app_guard.flush(Duration::from_secs(30)).unwrap();
    audit_guard.flush(Duration::from_secs(30)).unwrap();
    // A publisher that stops at once still publishes once more on its way out.
    let publisher = loglag::metrics_facade::Publisher::spawn(
        Duration::from_secs(3600),
        vec![("app".into(), app.clone()), ("audit".into(), audit.clone())],
    )
    .unwrap();
    drop(publisher);
    let v = values.0.lock().unwrap().clone();
    assert_eq!(
        v["loglag_written_records_total{pipeline=app}"], 7.0,
        "{v:?}"
    );
    assert_eq!(v["loglag_accepted_total{pipeline=audit}"], 1.0);
    assert_eq!(
        v["loglag_records_dropped_total{pipeline=audit,reason=io_error,level=warn}"],
        1.0
    );
    assert_eq!(
        v["loglag_records_dropped_total{pipeline=app,reason=io_error,level=warn}"],
        0.0
    );
    assert_eq!(v["loglag_in_flight_records{pipeline=app}"], 0.0);
}
