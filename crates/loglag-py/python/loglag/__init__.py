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
import threading
import weakref
from typing import Any, Dict, Optional

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
        if not h._pipeline.closed:
            try:
                h._pipeline.flush(5.0)
            except TimeoutError:
                pass


def _after_fork_in_child() -> None:
    for h in list(_handlers):
        h._pipeline._after_fork_in_child()


def _flush_all(timeout: float) -> None:
    for h in list(_handlers):
        if not h._pipeline.closed:
            try:
                h._pipeline.flush(timeout)
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
    logging.shutdown, which closes the handler."""
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


@atexit.register
def _close_all_at_exit() -> None:
    # Registered after logging's own hook, so it runs first (atexit is last in, first
    # out): every pipeline is closed, its queue written, before logging.shutdown.
    global _exiting
    _exiting = True
    for h in list(_handlers):
        h._pipeline.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


class Handler(logging.Handler):
    """A ``logging.Handler`` that hands each record to a loglag pipeline.

    ``sink`` is a URL: ``stdout``, ``stderr``, ``file:///path?rotate=daily&keep=7``,
    ``fifo:///path``, ``syslog://host:514``, ``relp://host:2514``, ``otlp+http://host:4318``
    (its query may hold any other setting). Without one, ``LOGLAG_SINK`` or standard
    output. ``format`` is ``"json"`` (one object per line: ts, level, logger, msg,
    thread, the record's ``extra`` fields, exc) or ``"text"``. Keyword arguments are
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
        self._pipeline = self._start()
        self._emit = self._pipeline.emit
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
            if self._pipeline.closed:
                self._pipeline = self._start(**({"mode": "sync"} if _exiting else {}))
                self._emit = self._pipeline.emit
        self._emit(record)

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)

    # ``logging.Handler.handle`` takes the handler's lock around ``emit``; the
    # pipeline needs none (its queue is made for many threads), and a caller's every
    # record passes here, so this is the whole of the handler's Python.
    def handle(self, record: logging.LogRecord) -> bool:
        if self.filters:
            rv = self.filter(record)
            if not rv:
                return False
            if isinstance(rv, logging.LogRecord):
                record = rv
        try:
            if record.exc_info and not record.exc_text:
                # logging's own rendering of the traceback, once per record.
                record.exc_text = _formatter.formatException(record.exc_info)
            self._emit(record)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)
        return True

    def flush(self, timeout: float = 5.0) -> Dict[str, Any]:  # type: ignore[override]
        """Waits until every record logged before the call is written or dropped, at
        most ``timeout`` seconds, and returns the accounting; ``TimeoutError`` if not.
        Does nothing once the handler is closed."""
        if self._pipeline.closed:
            return self._pipeline.metrics()
        return self._pipeline.flush(timeout)

    def close(self) -> None:
        """Writes what is queued (within ``shutdown_timeout``) and stops the writer.
        A record logged after this starts a fresh pipeline from the same settings, as
        ``logging.FileHandler`` reopens its file (``metrics()`` then counts from
        there)."""
        with self.lock:
            self._pipeline.close()
            self._emit = self._reopen_and_emit
        super().close()

    def metrics(self) -> Dict[str, Any]:
        """accepted, written, dropped (in all, by reason, by reason and level),
        in_flight, and the queue's bytes."""
        return self._pipeline.metrics()


_formatter = logging.Formatter()
