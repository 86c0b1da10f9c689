#!/usr/bin/env python3
"""A FastAPI service that logs 3 records per request through one of Python's logging
setups: reference 002's buffers, measured through `loglag lab --app`.

    python3 -m venv target/fastapi-venv && target/fastapi-venv/bin/pip install fastapi uvicorn
    loglag lab --app 'target/fastapi-venv/bin/python examples/python/fastapi_app.py --port {port} --log {log_path} --mode {condition}' \\
        --conditions stream,memory,queue,queue-memory --expect-lines 3

Modes (2 INFO and 1 DEBUG record per request, but none):
    none          no logging: the logger's level is above CRITICAL (--expect-lines none=0)
    stream        logging.StreamHandler: every record written at once
    memory        logging.handlers.MemoryHandler (capacity --capacity, flushLevel ERROR)
    queue         QueueHandler in front of a QueueListener thread
    queue-memory  QueueHandler -> QueueListener -> MemoryHandler
    picologging   picologging's StreamHandler (pip install picologging): logging in C,
                  written in the request
    loguru        loguru with enqueue=True (pip install loguru): a multiprocessing
                  queue, unbounded, and a writer thread
    loglag-handler  loglag.Handler (crates/loglag-py): bounded in bytes, a writer thread
                  (not `loglag`, which the lab reads as its own condition's 16 KiB lines)
    loglag-handler-spool  the same with its queue in a spool next to the log: a SIGKILL
                  loses nothing once `--recover` (the lab's --app-recover) delivers it

At shutdown (SIGTERM or SIGINT, handled by uvicorn) the lifespan hook flushes every
handler; with --no-flush-at-exit it does not, and what the buffers hold is lost, as in
reference 002. Two uvicorn pitfalls are handled here:
  * uvicorn's default logging config replaces handlers configured before it starts:
    it runs with log_config=None;
  * uvicorn re-raises SIGTERM after the lifespan shutdown, so Python's atexit flush
    never runs: the flush must happen in the lifespan hook, or not at all.
"""

import argparse
import contextlib
import logging
import logging.handlers
import queue

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse

import loglag_modes

MODES = ("none", "stream", "memory", "queue", "queue-memory", "picologging", "loguru") + loglag_modes.MODES


class PercentStyle:
    """loguru's logger with the `logging` module's %-style arguments (loguru formats
    with str.format and would write `%s` as it is)."""

    def __init__(self, logger):
        self.logger = logger

    def info(self, msg, *args):
        self.logger.info(msg % args if args else msg)

    def debug(self, msg, *args):
        self.logger.debug(msg % args if args else msg)


def configure(mode, log_path, capacity):
    """Returns the logger and a function that flushes everything it buffers."""
    if mode == "picologging":
        import picologging

        logger = picologging.getLogger("api")
        logger.propagate = False
        logger.setLevel(picologging.DEBUG)
        target = picologging.StreamHandler(open(log_path, "w", encoding="utf-8", newline="\n"))
        target.setFormatter(picologging.Formatter("%(levelname)s api %(message)s"))
        logger.addHandler(target)
        return logger, target.flush
    if mode == "loguru":
        from loguru import logger as loguru_logger

        loguru_logger.remove()
        stream = open(log_path, "w", encoding="utf-8", newline="\n")
        loguru_logger.add(stream, level="DEBUG", format="{level} api {message}", enqueue=True)
        return PercentStyle(loguru_logger), loguru_logger.complete
    logger = logging.getLogger("api")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    if mode == "none":
        logger.setLevel(logging.CRITICAL + 1)
        return logger, logging.shutdown
    if mode in loglag_modes.MODES:
        logger.addHandler(loglag_modes.handler(log_path, mode == "loglag-handler-spool"))
        return logger, logging.shutdown
    stream = open(log_path, "w", encoding="utf-8", newline="\n")
    target = logging.StreamHandler(stream)
    target.setFormatter(logging.Formatter("%(levelname)s api %(message)s"))
    listener = None
    if mode == "stream":
        logger.addHandler(target)
    elif mode == "memory":
        logger.addHandler(
            logging.handlers.MemoryHandler(capacity, flushLevel=logging.ERROR, target=target)
        )
    else:
        inner = target
        if mode == "queue-memory":
            inner = logging.handlers.MemoryHandler(capacity, flushLevel=logging.ERROR, target=target)
        q = queue.Queue(-1)
        listener = logging.handlers.QueueListener(q, inner)
        listener.start()
        logger.addHandler(logging.handlers.QueueHandler(q))

    def flush():
        if listener is not None:
            listener.stop()  # drains the queue into the inner handler
        logging.shutdown()  # flushes and closes every handler, MemoryHandler included

    return logger, flush


def build(args):
    logger, flush = configure(args.mode, args.log, args.capacity)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        if not args.no_flush_at_exit:
            flush()

    app = FastAPI(lifespan=lifespan)
    counter = {"next": 0}

    @app.get("/", response_class=PlainTextResponse)
    async def root(request: Request):
        request_id = request.headers.get("x-request-id")
        if request_id is None:
            request_id = counter["next"]
            counter["next"] += 1
        logger.info("request received id=%s path=/ user_agent=loglag", request_id)
        logger.debug("handler state id=%s cache=hit items=3", request_id)
        logger.info("request done id=%s status=200 bytes=2", request_id)
        return "ok"

    return app


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="required unless --recover")
    parser.add_argument("--log", required=True, help="FIFO or file the logs go to")
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--capacity", type=int, default=100, help="MemoryHandler capacity")
    parser.add_argument("--no-flush-at-exit", action="store_true")
    parser.add_argument(
        "--recover",
        action="store_true",
        help="deliver what a killed loglag-handler-spool left in its spool, then exit",
    )
    args = parser.parse_args()
    if args.recover:
        raise SystemExit(loglag_modes.recover(args.log, args.mode))
    if args.port is None:
        parser.error("--port is required (unless --recover)")
    uvicorn.run(build(args), host="127.0.0.1", port=args.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
