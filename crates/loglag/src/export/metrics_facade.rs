//! Pipelines' [`Metrics`] through the [`metrics`] crate's facade, for services whose
//! exporter is a `metrics` recorder (metrics-exporter-prometheus, statsd, …).
//!
//! The same families as the Prometheus exposition ([`crate::export::prometheus`], one list
//! for both), with a `pipeline` label: counters are set to the pipeline's totals
//! (`Counter::absolute`), gauges to its current values. Publish on your own schedule with [`publish`], or
//! every interval from a thread with [`Publisher::spawn`].
//!
//! ```no_run
//! let (writer, _guard) = loglag::non_blocking(std::io::stdout());
//! let _publisher = loglag::metrics_facade::Publisher::spawn(
//!     std::time::Duration::from_secs(10),
//!     vec![("app".into(), writer.clone())],
//! );
//! ```

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::core::metrics::Metrics;
use crate::export::prometheus::{families, Kind};
use crate::pipeline::handle::NonBlocking;

/// Sets every counter and gauge of `pipeline` to `m`'s values: the families of the
/// Prometheus exposition, names prefixed `loglag_` (histograms are not published:
/// the facade records samples, not finished buckets).
pub fn publish(pipeline: &str, m: &Metrics) {
    for family in families(m, Some(pipeline)) {
        let name = format!("loglag_{}", family.name);
        for (_, labels, value) in &family.samples {
            match family.kind {
                Kind::Counter => metrics::counter!(name.clone(), labels).absolute(*value as u64),
                Kind::Gauge => metrics::gauge!(name.clone(), labels).set(*value),
                Kind::Histogram => {}
            }
        }
    }
}

/// A thread that publishes its pipelines every interval; stops (after one last
/// publish) when dropped.
#[derive(Debug)]
pub struct Publisher {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Publisher {
    /// Publishes `pipelines` now and then every `interval`.
    pub fn spawn(
        interval: Duration,
        pipelines: Vec<(String, NonBlocking)>,
    ) -> std::io::Result<Publisher> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("loglag-metrics".into())
            .spawn(move || {
                crate::sys::fork::block_async_signals();
                loop {
                    for (name, writer) in &pipelines {
                        publish(name, &writer.metrics());
                    }
                    match stopped.recv_timeout(interval) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => {
                            for (name, writer) in &pipelines {
                                publish(name, &writer.metrics());
                            }
                            return;
                        }
                    }
                }
            })?;
        Ok(Publisher {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
