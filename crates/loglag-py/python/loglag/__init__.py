"""loglag for Python services: a ``logging.Handler`` on the loglag pipeline.

``loglag.Handler`` takes formatting's last step and all of the I/O off the request:
each record is encoded in Rust and queued in a buffer bounded in **bytes**; a writer
thread writes it without the GIL. A full queue never blocks the caller (unless
``overflow="block"``): the record is dropped and counted with its reason and level, and
the drop is announced in the log. At any moment::

    written + dropped + in_flight == accepted          # handler.metrics()

Replacing a ``logging.FileHandler``::

    import logging, loglag
    logging.getLogger().addHandler(loglag.Handler("file:///var/log/app.log?rotate=daily&keep=7"))

Settings are loglag's own, with the same names, units and errors everywhere: a sink URL
and its query, keyword arguments (``capacity_bytes="8MiB"``, ``overflow="shed-by-level"``,
``spool="/var/lib/app/log.spool"``), a TOML file (``config_file=``) and ``LOGLAG_*``
variables (they win, as in the Rust crate). A bad value raises ``ValueError`` naming the
key. With a spool, a ``kill -9`` loses nothing: the next start writes what was queued.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time
import weakref
from typing import Any, Dict, Optional, Tuple

from ._loglag import Pipeline

__all__ = ["Handler", "Pipeline"]

# Every handler alive, so a forked child can give each a pipeline of its own.
_handlers: "weakref.WeakSet[Handler]" = weakref.WeakSet()
_handlers_lock = threading.Lock()


def _before_fork() -> None:
    # The parent writes what it has queued before the child is made: the child starts
    # with an empty pipeline, and no record is written twice or by no one.
    with _handlers_lock:
        handlers = list(_handlers)
    for h in handlers:
        if h._pipeline is not None and not h._pipeline.closed:
            try:
                h._pipeline.flush(5.0)
            except TimeoutError:
                pass


def _after_fork_in_child() -> None:
    global _handlers_lock
    # Another thread of the parent may have held it at the fork: not in this process.
    _handlers_lock = threading.Lock()
    rebuilt = False
    for h in list(_handlers):
        if h._pipeline is None:
            continue
        try:
            rebuilt |= h._pipeline._after_fork_in_child()
        except Exception as e:  # one handler's sink must not cost the others theirs
            print(f"loglag: a forked child could not start its pipeline: {e}", file=sys.stderr)
    mp_util = sys.modules.get("multiprocessing.util")
    if rebuilt and mp_util is not None:
        # multiprocessing's forked children end with os._exit, after its finalizers
        # and without atexit: what they queued is written there. Its child clears the
        # finalizers first and then runs its after-fork hooks, so the finalizer is
        # registered from one of those.
        mp_util.register_after_fork(
            _AFTER_FORK_TOKEN,
            lambda _token: mp_util.Finalize(None, _close_all, exitpriority=100),
        )


class _Token:
    """multiprocessing keeps its after-fork hooks by weak reference to an object."""


_AFTER_FORK_TOKEN = _Token()


def _flush_all(timeout: float) -> None:
    # One deadline for all of them: a signal is answered within `timeout`.
    deadline = time.monotonic() + timeout
    for h in list(_handlers):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if h._pipeline is not None and not h._pipeline.closed:
            try:
                h._pipeline.flush(left)
            except TimeoutError:
                pass


# The signals that end a service: what is queued is written first. Python's default
# for SIGTERM ends the process without `atexit` (so without logging.shutdown).
_FLUSH_SIGNALS = ("SIGTERM", "SIGINT")
_signals_installed = False


def _install_signal_flush(timeout: float) -> None:
    """On SIGTERM and SIGINT, flush every handler, then do what was there before:
    the application's own handler (SIGINT's default raises KeyboardInterrupt), or the
    default action (SIGTERM ends the process, by the signal). Only from the main
    thread (Python's rule); an application that installs its own handlers later
    (uvicorn, gunicorn) replaces this one, and their orderly exit runs
    logging.shutdown, which closes the handler. All handlers together are flushed
    within `timeout`. Python runs a signal handler when the main thread next runs
    Python code: a main thread blocked in C (e.g. waiting with overflow="block" on a
    stalled sink) answers the signal when that wait ends."""
    global _signals_installed
    if _signals_installed or threading.current_thread() is not threading.main_thread():
        return
    for name in _FLUSH_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        previous = signal.getsignal(signum)
        if previous is None:
            # A handler installed outside Python: not ours to wrap.
            continue

        def on_signal(num, frame, previous=previous):
            _flush_all(timeout)
            if callable(previous):
                previous(num, frame)
            elif previous == signal.SIG_DFL:
                signal.signal(num, signal.SIG_DFL)
                os.kill(os.getpid(), num)

        signal.signal(signum, on_signal)
    _signals_installed = True


# Set once the interpreter is ending (this module's atexit hook ran): a handler
# reopened after that writes on the caller, since no one would close its writer.
_exiting = False


def _close_all() -> None:
    for h in list(_handlers):
        h.close()


@atexit.register
def _close_all_at_exit() -> None:
    # Registered after logging's own hook, so it runs first (atexit is last in, first
    # out): every pipeline is closed, its queue written, before logging.shutdown. A
    # record after this (a daemon thread, a later atexit hook) is written on the caller.
    global _exiting
    _exiting = True
    _close_all()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


class Handler(logging.Handler):
    """A ``logging.Handler`` that hands each record to a loglag pipeline.

    ``sink`` is a URL: ``stdout``, ``stderr``, ``file:///path?rotate=daily&keep=7``,
    ``fifo:///path``, ``syslog://host:514``, ``relp://host:2514``, ``otlp+http://host:4318``
    (its query may hold any other setting). Without one, ``LOGLAG_SINK`` or standard
    output. ``format`` is ``"json"`` (one object per line: timestamp, level,
    message, logger, thread, the record's ``extra`` fields, exc) or ``"text"``. Keyword arguments are
    loglag settings (see ``loglag --help`` or the crate's ``SETTINGS``); ``env=False``
    ignores ``LOGLAG_*`` variables.

    ``flush(timeout)`` waits until what was logged is written; ``close()`` (which
    ``logging.shutdown`` calls at exit) writes what is queued within
    ``shutdown_timeout`` and stops the writer. ``metrics()`` is the accounting. With
    ``flush_on_signals`` (the default), SIGTERM and SIGINT flush every handler first
    and then do what they did before: the application's handler, or the default
    action.
    """

    def __init__(
        self,
        sink: Optional[str] = None,
        *,
        level: int = logging.NOTSET,
        format: str = "json",
        config_file: Optional[str] = None,
        env: bool = True,
        flush_on_signals: bool = True,
        **settings: Any,
    ) -> None:
        super().__init__(level)
        self._arguments = (sink, config_file, dict(settings), format, env)
        # What pipelines this handler closed and replaced had counted.
        self._retired: Optional[Dict[str, Any]] = None
        # The last flush without a timeout: its budget's deadline, and when it ended.
        self._budget: Optional[Tuple[float, float]] = None
        self._pipeline = self._start()
        self._emit = self._pipeline.emit
        self._bind_handle()
        with _handlers_lock:
            _handlers.add(self)
        if flush_on_signals:
            _install_signal_flush(5.0)

    def _start(self, **more: Any) -> Pipeline:
        sink, config_file, settings, format, env = self._arguments
        settings = {**settings, **more}
        return Pipeline(
            sink, config_file=config_file, settings=settings or None, format=format, env=env
        )

    def _reopen_and_emit(self, record: logging.LogRecord) -> None:
        # A record after close(), as logging.FileHandler reopens its file: a fresh
        # pipeline from the same settings. logging.config.dictConfig (which uvicorn
        # and Django call) closes every handler there is, including ones it does not
        # configure; they keep logging. Once the interpreter is ending, the new
        # pipeline writes on the caller.
        with self.lock:
            if self._pipeline is None or self._pipeline.closed:
                if self._pipeline is not None:
                    # The closed pipeline goes first: its spool and its file's lock
                    # are released with it, and the new one takes them.
                    self._retired = _add_counts(self._retired, self._pipeline.metrics())
                    self._pipeline = None
                # If the sink cannot be opened now, the error reaches handleError and
                # the next record tries again.
                self._pipeline = self._start(**({"mode": "sync"} if _exiting else {}))
                self._emit = self._pipeline.emit
                self._bind_handle()
            pipeline = self._pipeline
        pipeline.emit(record)

    def _bind_handle(self) -> None:
        # logging calls ``handler.handle(record)``; bound on the instance to the
        # pipeline's own ``handle_record``, that is one call into Rust, with no Python
        # frame of ours on the caller (a third of what the handler added). A handler
        # with filters, a subclass that overrides ``handle``, ``emit`` or ``filter``,
        # or a closed one, takes ``handle`` below instead. Filters are changed through
        # ``addFilter``/``removeFilter`` (which rebind), not by editing ``filters``.
        cls = type(self)
        plain = (
            cls.handle is Handler.handle
            and cls.emit is Handler.emit
            and cls.filter is logging.Filterer.filter
        )
        pipeline = self._pipeline
        if not plain or self.filters or pipeline is None or pipeline.closed:
            self.__dict__.pop("handle", None)
        else:
            pipeline._bind(self)
            self.handle = pipeline.handle_record

    def addFilter(self, filter: Any) -> None:  # noqa: N802 (logging's name)
        # Under the lock a reopening rebinds under: the two cannot interleave and
        # leave a filter unseen.
        with self.lock:
            super().addFilter(filter)
            self._bind_handle()

    def removeFilter(self, filter: Any) -> None:  # noqa: N802 (logging's name)
        with self.lock:
            super().removeFilter(filter)
            self._bind_handle()

    def _handle_in_python(self, record: logging.LogRecord) -> bool:
        # The pipeline's ``handle_record`` found itself closed: the reopening path.
        return Handler.handle(self, record)

    def emit(self, record: logging.LogRecord) -> None:
        """Hands the record to the pipeline (a subclass's ``emit`` may call it)."""
        if record.exc_info and not record.exc_text:
            # logging's own rendering of the traceback, once per record.
            record.exc_text = _formatter.formatException(record.exc_info)
        self._emit(record)

    # ``logging.Handler.handle`` takes the handler's lock around ``emit``; the
    # pipeline needs none (its queue is made for many threads). A plain handler does
    # not come here at all (``_bind_handle``).
    def handle(self, record: logging.LogRecord) -> bool:
        if self.filters or type(self).filter is not logging.Filterer.filter:
            rv = self.filter(record)
            if not rv:
                return False
            if isinstance(rv, logging.LogRecord):
                record = rv
        try:
            self.emit(record)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)
        return True

    def flush(self, timeout: Optional[float] = None) -> Dict[str, Any]:  # type: ignore[override]
        """Waits until every record logged before the call is written or dropped, and
        returns the accounting. With a ``timeout`` (seconds), ``TimeoutError`` when it
        passes first; without one (as ``logging`` calls it), at most
        ``shutdown_timeout`` and no error, so that ``logging.shutdown`` goes on to
        ``close``, which then has no budget left to wait again: ``logging.shutdown``
        takes one ``shutdown_timeout``, not two, inside a deployment's grace period."""
        pipeline = self._pipeline
        if pipeline is None or pipeline.closed:
            return self.metrics()
        if timeout is not None:
            pipeline.flush(timeout)
            return self.metrics()
        deadline = time.monotonic() + pipeline.shutdown_timeout
        try:
            pipeline.flush(pipeline.shutdown_timeout)
        except TimeoutError:
            pass
        # A close() right after this one (as logging.shutdown calls them) gets what is
        # left of the same budget.
        self._budget = (deadline, time.monotonic())
        return self.metrics()

    def close(self) -> None:
        """Writes what is queued (within ``shutdown_timeout``) and stops the writer.
        A record logged after this starts a fresh pipeline from the same settings, as
        ``logging.FileHandler`` reopens its file; ``metrics()`` keeps counting across."""
        with self.lock:
            # Records that arrive while the queue is written take the reopening path,
            # which waits for this lock. One already past that choice when close
            # begins reaches the closing pipeline: written, or counted dropped at
            # shutdown, never lost.
            self.__dict__.pop("handle", None)
            self._emit = self._reopen_and_emit
            if self._pipeline is not None:
                # Right after a flush without a timeout (as logging.shutdown calls
                # them): what is left of that flush's budget, so that the two take one
                # shutdown_timeout; what is still queued then is counted as dropped.
                budget, self._budget = self._budget, None
                now = time.monotonic()
                if budget is not None and now - budget[1] < 1.0:
                    self._pipeline.close(max(0.0, budget[0] - now))
                else:
                    self._pipeline.close()
        super().close()

    def metrics(self) -> Dict[str, Any]:
        """accepted, written, dropped (in all, by reason, by reason and level),
        in_flight, and the queue's bytes; across every pipeline this handler ran."""
        if self._pipeline is None:
            return dict(self._retired or {})
        return _add_counts(self._retired, self._pipeline.metrics())


def _add_counts(a: Optional[Dict[str, Any]], b: Dict[str, Any]) -> Dict[str, Any]:
    """Two accountings as one: counts add, the rest is the newer's."""
    if a is None:
        return b
    out = dict(b)
    for key, value in b.items():
        if isinstance(value, bool) or key in ("in_flight", "in_flight_bytes"):
            continue
        if key.startswith("max_"):
            out[key] = max(a.get(key, 0), value)
        elif isinstance(value, int):
            out[key] = a.get(key, 0) + value
        elif isinstance(value, dict):
            out[key] = _add_counts(a.get(key, {}), value)
    return out


_formatter = logging.Formatter()


def _fill_exc_text(record: logging.LogRecord) -> None:
    """logging's own rendering of a record's traceback, once per record."""
    record.exc_text = _formatter.formatException(record.exc_info)


def _handle_error(handler: logging.Handler, record: logging.LogRecord, error: BaseException) -> None:
    """``handleError`` as ``logging`` calls it: inside the ``except`` of the error, which
    it reads from ``sys.exc_info()``."""
    try:
        raise error
    except Exception:
        handler.handleError(record)
