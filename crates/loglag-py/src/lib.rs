//! `loglag._loglag`: the loglag pipeline for Python's `logging`.
//!
//! One [`Pipeline`] per `loglag.Handler`: the crate's queue bounded in bytes, its writer
//! thread and its accounting. `emit` reads a `LogRecord` on the caller (level, logger,
//! the formatted message, time, thread, exception text, `extra` fields), encodes it as
//! one JSON or text line in Rust and hands it to the pipeline; the writer thread does
//! the I/O without the GIL. Settings are the crate's, by the crate's parser: a sink
//! URL, keys of the same names, a TOML file and `LOGLAG_*` variables, with the crate's
//! errors (a bad value raises `ValueError` naming its key).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use loglag::{Config, DropReason, Level, Metrics, NonBlocking, Overflow, WorkerGuard};
use pyo3::exceptions::{PyOSError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

mod encode;

use encode::{Encoding, Record};

/// A running pipeline and the settings it was built from (a forked child builds its
/// own from them).
#[pyclass(module = "loglag._loglag", frozen)]
struct Pipeline {
    config: Config,
    encoding: Encoding,
    /// The caller may wait (overflow `block`): the GIL is released while it does.
    may_block: bool,
    state: Mutex<State>,
}

struct State {
    writer: Arc<NonBlocking>,
    /// `None` once closed: records after that are counted by the pipeline as dropped
    /// at shutdown, never written and never lost silently.
    guard: Option<WorkerGuard>,
}

impl Pipeline {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state as it was: still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The settings of a handler: a TOML file, then the sink URL (with its query), then
/// each keyword, then (unless `env` is false) the `LOGLAG_*` variables over them, as
/// the crate reads them.
fn config_of(
    sink: Option<&str>,
    config_file: Option<&str>,
    settings: Option<&Bound<'_, PyDict>>,
    env: bool,
) -> PyResult<Config> {
    let mut config = match config_file {
        Some(path) => Config::from_file(path).map_err(value_error)?,
        None => Config::default(),
    };
    if let Some(url) = sink {
        config.set("sink", url).map_err(value_error)?;
    }
    if let Some(settings) = settings {
        for (key, value) in settings.iter() {
            let key: String = key.extract()?;
            // Python's own spelling of values: True, 0.5, 8 << 20, "8MiB", "100ms".
            let text = if let Ok(b) = value.extract::<bool>() {
                b.to_string()
            } else {
                value.str()?.to_string()
            };
            config.set(&key, &text).map_err(value_error)?;
        }
    }
    Ok(if env { config.with_env() } else { config })
}

fn build(config: &Config) -> PyResult<State> {
    let (writer, guard) = config
        .clone()
        .build()
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    Ok(State {
        writer: Arc::new(writer),
        guard: Some(guard),
    })
}

/// `logging`'s level numbers as the pipeline's levels: CRITICAL is an ERROR, a level
/// between two is the lower one's.
fn level_of(levelno: i64) -> Level {
    match levelno {
        n if n >= 40 => Level::Error,
        n if n >= 30 => Level::Warn,
        n if n >= 20 => Level::Info,
        n if n >= 10 => Level::Debug,
        _ => Level::Trace,
    }
}

/// The accounting as a dict: accepted, written, in flight, and dropped in all, by
/// reason and by reason and level; `written + dropped + in_flight == accepted`.
fn metrics_dict<'py>(py: Python<'py>, m: &Metrics) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("accepted", m.accepted)?;
    d.set_item("written", m.written_records)?;
    d.set_item("written_bytes", m.written_bytes)?;
    d.set_item("in_flight", m.in_flight_records)?;
    d.set_item("in_flight_bytes", m.in_flight_bytes)?;
    d.set_item("max_backlog_bytes", m.max_backlog_bytes)?;
    d.set_item("write_syscalls", m.write_syscalls)?;
    d.set_item("write_errors", m.write_errors)?;
    d.set_item("truncated", m.truncated)?;
    d.set_item("recovered", m.recovered_records)?;
    d.set_item("spool_refused", m.spool_refused)?;
    let by_reason = PyDict::new(py);
    let by_level = PyDict::new(py);
    let mut total = 0;
    for reason in DropReason::ALL {
        let row = &m.dropped[reason as usize];
        let levels = PyDict::new(py);
        for level in Level::ALL {
            let n = row[level as usize];
            if n > 0 {
                levels.set_item(level.as_str(), n)?;
            }
        }
        let n: u64 = row.iter().sum();
        total += n;
        by_reason.set_item(reason.as_str(), n)?;
        by_level.set_item(reason.as_str(), levels)?;
    }
    d.set_item("dropped", total)?;
    d.set_item("dropped_by_reason", by_reason)?;
    d.set_item("dropped_by_reason_and_level", by_level)?;
    Ok(d)
}

#[pymethods]
impl Pipeline {
    #[new]
    #[pyo3(signature = (sink=None, *, config_file=None, settings=None, format="json", env=true))]
    fn new(
        sink: Option<&str>,
        config_file: Option<&str>,
        settings: Option<&Bound<'_, PyDict>>,
        format: &str,
        env: bool,
    ) -> PyResult<Pipeline> {
        let encoding = match format {
            "json" => Encoding::Json,
            "text" => Encoding::Text,
            other => {
                return Err(PyValueError::new_err(format!(
                    "format: {other:?} is not valid (expected \"json\" or \"text\")"
                )))
            }
        };
        let config = config_of(sink, config_file, settings, env)?;
        let may_block = config.settings().overflow() == Overflow::Block;
        let state = build(&config)?;
        Ok(Pipeline {
            config,
            encoding,
            may_block,
            state: Mutex::new(state),
        })
    }

    /// Encodes one `LogRecord` and hands it to the pipeline. Never raises for a full
    /// queue: the record is counted dropped, as the overflow policy says.
    fn emit(&self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<()> {
        let levelno: i64 = record.getattr(pyo3::intern!(py, "levelno"))?.extract()?;
        let message = record.call_method0(pyo3::intern!(py, "getMessage"))?;
        let message = message.downcast::<PyString>()?.to_cow()?;
        let name = record.getattr(pyo3::intern!(py, "name"))?;
        let name = name.downcast::<PyString>()?.to_cow()?;
        let created: f64 = record.getattr(pyo3::intern!(py, "created"))?.extract()?;
        let thread = record.getattr(pyo3::intern!(py, "threadName"))?;
        let thread = thread
            .downcast::<PyString>()
            .ok()
            .map(|t| t.to_cow())
            .transpose()?;
        let exc_text = record.getattr(pyo3::intern!(py, "exc_text"))?;
        let exc_text = exc_text
            .downcast::<PyString>()
            .ok()
            .map(|t| t.to_cow())
            .transpose()?;
        let stack = record.getattr(pyo3::intern!(py, "stack_info"))?;
        let stack = stack
            .downcast::<PyString>()
            .ok()
            .map(|t| t.to_cow())
            .transpose()?;
        let dict = record.getattr(pyo3::intern!(py, "__dict__"))?;
        let dict = dict.downcast::<PyDict>()?;
        let level = level_of(levelno);
        let line = encode::line(
            self.encoding,
            &Record {
                created,
                level,
                logger: &name,
                message: &message,
                thread: thread.as_deref(),
                exc_text: exc_text.as_deref(),
                stack: stack.as_deref(),
                extra: dict,
            },
        )?;
        let writer = self.state().writer.clone();
        if self.may_block {
            py.allow_threads(|| writer.submit(level, line.as_bytes()));
        } else {
            writer.submit(level, line.as_bytes());
        }
        Ok(())
    }

    /// The accounting now.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.state().writer.metrics();
        metrics_dict(py, &m)
    }

    /// Waits until what was accepted before the call is written or dropped, at most
    /// `timeout` seconds; returns the accounting then. `TimeoutError` if it was not.
    #[pyo3(signature = (timeout=5.0))]
    fn flush<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Bound<'py, PyDict>> {
        let timeout = Duration::try_from_secs_f64(timeout).map_err(|_| {
            PyValueError::new_err(format!("timeout: {timeout} is not a duration in seconds"))
        })?;
        let writer = self.state().writer.clone();
        match py.allow_threads(|| writer.flush(timeout)) {
            Ok(flushed) => metrics_dict(py, &flushed.metrics),
            Err(e) => Err(PyTimeoutError::new_err(e.to_string())),
        }
    }

    /// Writes what is queued within the `shutdown_timeout` setting, stops the writer
    /// thread and returns the final accounting. Later records are counted dropped at
    /// shutdown. A second call returns the accounting again.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let guard = self.state().guard.take();
        let m = match guard {
            Some(g) => py.allow_threads(|| g.shutdown()),
            None => self.state().writer.metrics(),
        };
        metrics_dict(py, &m)
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.state().guard.is_none()
    }

    /// In a forked child: the parent's pipeline has no writer thread here, and its
    /// queue is the parent's to write. It is left untouched (never dropped, which would
    /// wait for a thread that does not exist), and the child gets a pipeline of its own
    /// from the same settings.
    fn _after_fork_in_child(&self) -> PyResult<()> {
        let mut state = self.state();
        let closed = state.guard.is_none();
        let fresh = build(&self.config)?;
        let inherited = std::mem::replace(&mut *state, fresh);
        std::mem::forget(inherited);
        if closed {
            // Closed before the fork: closed in the child too.
            if let Some(g) = state.guard.take() {
                g.shutdown();
            }
        }
        Ok(())
    }
}

#[pymodule]
fn _loglag(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Pipeline>()?;
    Ok(())
}
