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

use loglag::{Config, DropReason, Level, Metrics, Mode, NonBlocking, Overflow, WorkerGuard};
use pyo3::exceptions::{PyOSError, PyRecursionError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyWeakrefReference};

use std::borrow::Cow;

mod encode;

use encode::{Encoding, Record};

/// A running pipeline and the settings it was built from (a forked child builds its
/// own from them).
#[pyclass(module = "loglag._loglag", frozen)]
struct Pipeline {
    config: Config,
    encoding: Encoding,
    /// The caller may wait (overflow `block` or `block-for`, or `mode = "sync"`, which
    /// writes on the caller): the GIL is released while it does.
    may_block: bool,
    /// A forked child builds a pipeline of its own, unless the parent's holds a lock a
    /// child cannot take (a spool, a rotating file's): then the child writes through
    /// the inherited one, which the crate does on the caller in a forked child.
    own_pipeline_in_child: bool,
    state: Mutex<State>,
    /// The `loglag.Handler` this pipeline serves, weakly (the handler holds this
    /// pipeline's `handle_record`): `handle_record` hands it a record's error, and a
    /// record that finds the pipeline closed.
    handler: Mutex<Option<Py<PyAny>>>,
}

struct State {
    writer: Arc<NonBlocking>,
    /// In a forked child that writes through the parent's pipeline: on the caller, so
    /// without the GIL.
    inherited_in_child: bool,
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

/// A Python string as UTF-8: borrowed as it is (no copy), or, when it holds a lone
/// surrogate (a path or header decoded with `surrogateescape`), with U+FFFD in its
/// place; never an error that would cost the record.
pub(crate) fn text<'a>(s: &'a Bound<'_, PyString>) -> Cow<'a, str> {
    match s.to_str() {
        Ok(t) => Cow::Borrowed(t),
        Err(_) => s.to_string_lossy(),
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
            // Python's values as text: True, 8 << 20, "8MiB", "100ms" (durations need
            // their unit).
            let text = if let Ok(b) = value.extract::<bool>() {
                b.to_string()
            } else {
                value.str()?.to_string()
            };
            config.set(&key, &text).map_err(value_error)?;
        }
    }
    // `env=False` ignores the environment on purpose: read no variable, and say
    // nothing of those set (an empty environment read).
    let mut config = if env {
        config.with_env()
    } else {
        config
            .with_vars(std::iter::empty::<(std::ffi::OsString, std::ffi::OsString)>())
            .0
    };
    // The handler's own signal flush (Python-level, chaining to the application's
    // handlers) is the one that runs: the crate's would end the process on SIGINT
    // instead of raising KeyboardInterrupt, whatever a shared TOML file or
    // LOGLAG_FLUSH_ON_SIGNALS says.
    config
        .set("flush_on_signals", "false")
        .map_err(value_error)?;
    Ok(config)
}

/// Starts a pipeline, without the GIL: opening a sink can wait (a FIFO until its reader
/// opens it, a name lookup, a spool's lock), and no other Python thread must wait with it.
fn build(py: Python<'_>, config: &Config) -> PyResult<State> {
    let config = config.clone();
    let (writer, guard) = py
        .allow_threads(move || config.build().map_err(|e| e.to_string()))
        .map_err(PyOSError::new_err)?;
    Ok(State {
        writer: Arc::new(writer),
        inherited_in_child: false,
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
        py: Python<'_>,
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
        let state = build(py, &config)?;
        let may_block = !matches!(
            config.settings().overflow(),
            Overflow::DropNewest | Overflow::DropOldest | Overflow::ShedByLevel
        ) || state.writer.mode() == Mode::Sync;
        let own_pipeline_in_child = config.settings().spool().is_none()
            && !matches!(
                config.sink(),
                Some(loglag::sink::SinkSpec::RollingFile { .. })
            );
        Ok(Pipeline {
            config,
            encoding,
            may_block,
            own_pipeline_in_child,
            state: Mutex::new(state),
            handler: Mutex::new(None),
        })
    }

    /// Encodes one `LogRecord` and hands it to the pipeline. Never raises for a full
    /// queue: the record is counted dropped, as the overflow policy says.
    fn emit<'py>(&self, py: Python<'py>, record: &Bound<'py, PyAny>) -> PyResult<()> {
        let dict = record.getattr(pyo3::intern!(py, "__dict__"))?;
        let dict = dict.downcast::<PyDict>()?;
        // A record's attributes live in its `__dict__`: one dict lookup each instead of
        // an attribute lookup through the type (a subclass's property still works).
        let field = |name: &Bound<'py, PyString>| -> PyResult<Bound<'py, PyAny>> {
            match dict.get_item(name)? {
                Some(value) => Ok(value),
                None => record.getattr(name),
            }
        };
        let levelno: i64 = field(pyo3::intern!(py, "levelno"))?.extract()?;
        // Shown as Python names it (WARNING, CRITICAL, a custom level's name); counted
        // at the pipeline's nearest level.
        let levelname = field(pyo3::intern!(py, "levelname"))?;
        let levelname = match levelname.downcast::<PyString>() {
            Ok(name) => text(name),
            Err(_) => Cow::Owned(levelname.str()?.to_string_lossy().into_owned()),
        };
        let message = record.call_method0(pyo3::intern!(py, "getMessage"))?;
        let message = text(message.downcast::<PyString>()?);
        let name = field(pyo3::intern!(py, "name"))?;
        let name = text(name.downcast::<PyString>()?);
        let created: f64 = field(pyo3::intern!(py, "created"))?.extract()?;
        let thread = field(pyo3::intern!(py, "threadName"))?;
        let thread = thread
            .downcast::<PyString>()
            .ok()
            .map(|t| t.to_string_lossy());
        let exc_text = field(pyo3::intern!(py, "exc_text"))?;
        let exc_text = exc_text
            .downcast::<PyString>()
            .ok()
            .map(|t| t.to_string_lossy());
        let stack = field(pyo3::intern!(py, "stack_info"))?;
        let stack = stack
            .downcast::<PyString>()
            .ok()
            .map(|t| t.to_string_lossy());
        let level = level_of(levelno);
        let line = encode::line(
            self.encoding,
            &Record {
                created,
                level_name: &levelname,
                logger: &name,
                message: &message,
                thread: thread.as_deref(),
                exc_text: exc_text.as_deref(),
                stack: stack.as_deref(),
                extra: dict,
            },
        )?;
        let (writer, inherited) = {
            let state = self.state();
            (state.writer.clone(), state.inherited_in_child)
        };
        if self.may_block || inherited {
            py.allow_threads(|| writer.submit(level, line.as_bytes()));
        } else {
            writer.submit(level, line.as_bytes());
        }
        Ok(())
    }

    /// Binds the `logging.Handler` this pipeline serves (weakly), for `handle_record`.
    fn _bind(&self, handler: &Bound<'_, PyAny>) -> PyResult<()> {
        let weak = PyWeakrefReference::new(handler)?;
        *self.handler.lock().unwrap_or_else(|e| e.into_inner()) = Some(weak.into_any().unbind());
        Ok(())
    }

    /// `logging.Handler.handle` for a bound handler without filters, in one call from
    /// `logging`'s C-level method call: the traceback rendered once (`logging`'s
    /// own formatting), the record emitted, an error handed to the handler's
    /// `handleError` (a `RecursionError` raised, as `logging` does). A record that
    /// finds the pipeline closed takes the handler's reopening path; one whose close
    /// begins while it is encoded is counted dropped at shutdown, never lost.
    fn handle_record<'py>(&self, py: Python<'py>, record: &Bound<'py, PyAny>) -> PyResult<bool> {
        let handler = || -> Option<Bound<'py, PyAny>> {
            let weak = self.handler.lock().unwrap_or_else(|e| e.into_inner());
            weak.as_ref()?
                .bind(py)
                .downcast::<PyWeakrefReference>()
                .ok()?
                .upgrade()
        };
        if self.state().guard.is_none() {
            if let Some(h) = handler() {
                return h
                    .call_method1(pyo3::intern!(py, "_handle_in_python"), (record,))?
                    .extract();
            }
        }
        let emitted = (|| {
            let exc_info = record.getattr(pyo3::intern!(py, "exc_info"))?;
            if exc_info.is_truthy()?
                && !record.getattr(pyo3::intern!(py, "exc_text"))?.is_truthy()?
            {
                loglag_module(py)?
                    .getattr(pyo3::intern!(py, "_fill_exc_text"))?
                    .call1((record,))?;
            }
            self.emit(py, record)
        })();
        match emitted {
            Ok(()) => Ok(true),
            Err(e) if e.is_instance_of::<PyRecursionError>(py) => Err(e),
            Err(e) => match handler() {
                Some(h) => {
                    loglag_module(py)?
                        .getattr(pyo3::intern!(py, "_handle_error"))?
                        .call1((h, record, e.value(py)))?;
                    Ok(true)
                }
                None => Err(e),
            },
        }
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

    /// Writes what is queued within `timeout` seconds (default: the `shutdown_timeout`
    /// setting), stops the writer thread and returns the final accounting. What is not
    /// written by then, and later records, are counted dropped at shutdown. A second
    /// call returns the accounting again.
    #[pyo3(signature = (timeout=None))]
    fn close<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyDict>> {
        let timeout = timeout
            .map(|t| {
                Duration::try_from_secs_f64(t).map_err(|_| {
                    PyValueError::new_err(format!("timeout: {t} is not a duration in seconds"))
                })
            })
            .transpose()?;
        let guard = self.state().guard.take();
        let m = match (guard, timeout) {
            (Some(g), Some(t)) => py.allow_threads(|| g.shutdown_within(t)),
            (Some(g), None) => py.allow_threads(|| g.shutdown()),
            (None, _) => self.state().writer.metrics(),
        };
        metrics_dict(py, &m)
    }

    /// The `shutdown_timeout` setting, in seconds: the budget of a flush and close.
    #[getter]
    fn shutdown_timeout(&self) -> f64 {
        self.config.settings().shutdown_timeout().as_secs_f64()
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.state().guard.is_none()
    }

    /// In a forked child: the parent's pipeline has no writer thread here, and its
    /// queue is the parent's to write. Returns whether the child got a pipeline of its
    /// own (built from the same settings; the inherited one is left untouched, never
    /// dropped, which would wait for a thread that is not here), or writes through the
    /// inherited one on the caller (a spool or a rotating file: their locks are the
    /// parent's, and a second pipeline would wait for them and then run without).
    fn _after_fork_in_child(&self, py: Python<'_>) -> PyResult<bool> {
        let mut state = self.state();
        if !self.own_pipeline_in_child || state.guard.is_none() {
            state.inherited_in_child = true;
            return Ok(false);
        }
        let fresh = build(py, &self.config)?;
        let inherited = std::mem::replace(&mut *state, fresh);
        std::mem::forget(inherited);
        Ok(true)
    }
}

#[pymodule]
fn _loglag(m: &Bound<'_, PyModule>) -> PyResult<()> {
    encode::measure_plain_record(m.py());
    m.add_class::<Pipeline>()?;
    Ok(())
}

/// The `loglag` package, for its helpers on the rare paths (a traceback to render, an
/// error to hand to `handleError`).
fn loglag_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("loglag")
}
