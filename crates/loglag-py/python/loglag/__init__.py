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

import logging
import os
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
    ``shutdown_timeout`` and stops the writer. ``metrics()`` is the accounting.
    """

    def __init__(
        self,
        sink: Optional[str] = None,
        *,
        level: int = logging.NOTSET,
        format: str = "json",
        config_file: Optional[str] = None,
        env: bool = True,
        **settings: Any,
    ) -> None:
        super().__init__(level)
        self._pipeline = Pipeline(
            sink, config_file=config_file, settings=settings or None, format=format, env=env
        )
        self._emit = self._pipeline.emit
        with _handlers_lock:
            _handlers.add(self)

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
        Records logged after this are counted as dropped at shutdown."""
        self._pipeline.close()
        super().close()

    def metrics(self) -> Dict[str, Any]:
        """accepted, written, dropped (in all, by reason, by reason and level),
        in_flight, and the queue's bytes."""
        return self._pipeline.metrics()


_formatter = logging.Formatter()
