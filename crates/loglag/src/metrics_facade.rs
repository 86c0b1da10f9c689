//! Pipelines' [`Metrics`] through the [`metrics`] crate's facade, for services whose
//! exporter is a `metrics` recorder (metrics-exporter-prometheus, statsd, …).
//!
//! The same names as the Prometheus exposition ([`crate::prometheus`]), with a
//! `pipeline` label: counters are set to the pipeline's totals (`Counter::absolute`),
//! gauges to its current values. Publish on your own schedule with [`publish`], or
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

use crate::handle::NonBlocking;
use crate::level::Level;
use crate::metrics::{DropReason, Metrics};

/// Sets every counter and gauge of `pipeline` to `m`'s values.
pub fn publish(pipeline: &str, m: &Metrics) {
    let p = pipeline.to_owned();
    let counters: [(&'static str, u64); 7] = [
        ("loglag_accepted_total", m.accepted),
        ("loglag_written_records_total", m.written_records),
        ("loglag_written_bytes_total", m.written_bytes),
        ("loglag_write_syscalls_total", m.write_syscalls),
        ("loglag_io_errors_total", m.io_errors),
        ("loglag_truncated_total", m.truncated),
        ("loglag_queue_full_events_total", m.queue_full_events),
    ];
    for (name, v) in counters {
        metrics::counter!(name, "pipeline" => p.clone()).absolute(v);
    }
    for reason in DropReason::ALL {
        for level in Level::ALL {
            metrics::counter!(
                "loglag_records_dropped_total",
                "pipeline" => p.clone(),
                "reason" => reason.as_str(),
                "level" => level.as_lower_str()
            )
            .absolute(m.dropped_by_reason_and_level[reason as usize][level as usize]);
        }
    }
    let gauges: [(&'static str, f64); 4] = [
        ("loglag_in_flight_records", m.in_flight_records as f64),
        ("loglag_in_flight_bytes", m.in_flight_bytes as f64),
        ("loglag_max_backlog_bytes", m.max_backlog_bytes as f64),
        (
            "loglag_oldest_queued_age_seconds",
            m.oldest_queued_age.map_or(0.0, |d| d.as_secs_f64()),
        ),
    ];
    for (name, v) in gauges {
        metrics::gauge!(name, "pipeline" => p.clone()).set(v);
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
            .spawn(move || loop {
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
