#!/usr/bin/env python3
"""An API that logs 3 records per request through one of Python's logging setups, for
`loglag lab --app` and reference 002 (memory buffers and what they lose at shutdown).

    loglag lab --app 'python3 examples/python/buffer_api.py --port {port} --log {log_path} --mode {condition}' \\
        --conditions stream,memory,queue,queue-memory --expect-lines 3

Modes (each request logs 2 INFO and 1 DEBUG record, ~120 bytes each):
    stream        logging.StreamHandler: every record written at once
    memory        logging.handlers.MemoryHandler (capacity --capacity, flushLevel ERROR)
    queue         QueueHandler in front of a QueueListener thread
    queue-memory  QueueHandler -> QueueListener -> MemoryHandler
    loglag-handler  loglag.Handler (crates/loglag-py): bounded in bytes, a writer thread
                  (not `loglag`, which the lab reads as its own condition's 16 KiB lines)
    loglag-handler-spool  the same with its queue in a spool file next to the log
                  (LOG.spool): a SIGKILL loses nothing; the next start delivers it,
                  which `--recover` does alone (the lab's --app-recover):

    loglag lab --app 'python3 examples/python/buffer_api.py --port {port} --log {log_path} --mode {condition}' \\
        --app-recover 'python3 examples/python/buffer_api.py --recover --log {log_path} --mode {condition}' \\
        --conditions memory,queue,loglag-handler,loglag-handler-spool --expect-lines 3 \\
        --stop-signal kill --match-request-id --rounds 3

On SIGTERM or SIGINT it flushes every handler (logging.shutdown) and exits 0, as a
well-behaved service does; with --no-flush-at-exit it exits without flushing, which is
how a buffer loses its records at a deploy. SIGKILL loses whatever is buffered.
Standard library only.
"""

import argparse
import asyncio
import logging
import logging.handlers
import os
import queue
import signal
import sys

import loglag_modes

MODES = ("stream", "memory", "queue", "queue-memory") + loglag_modes.MODES


class App:
    def __init__(self, mode, log_path, capacity):
        self.next_id = 0
        self.logger = logging.getLogger("api")
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        self.listener = None
        if mode in loglag_modes.MODES:
            self.logger.addHandler(loglag_modes.handler(log_path, mode == "loglag-handler-spool"))
            return
        stream = open(log_path, "w", encoding="utf-8", newline="\n")
        target = logging.StreamHandler(stream)
        target.setFormatter(logging.Formatter("%(levelname)s api %(message)s"))
        if mode == "stream":
            self.logger.addHandler(target)
        elif mode == "memory":
            self.logger.addHandler(
                logging.handlers.MemoryHandler(capacity, flushLevel=logging.ERROR, target=target)
            )
        else:
            inner = target
            if mode == "queue-memory":
                inner = logging.handlers.MemoryHandler(
                    capacity, flushLevel=logging.ERROR, target=target
                )
            q = queue.Queue(-1)
            self.listener = logging.handlers.QueueListener(q, inner)
            self.listener.start()
            self.logger.addHandler(logging.handlers.QueueHandler(q))

    def shutdown(self, flush):
        if not flush:
            # Leave without flushing: what the buffers hold is lost, as in reference 002.
            os._exit(0)
        if self.listener is not None:
            self.listener.stop()  # drains the queue into the inner handler
        logging.shutdown()  # flushes and closes every handler, MemoryHandler included
        os._exit(0)

    async def handle(self, reader, writer):
        try:
            request = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        request_id = self.next_id
        self.next_id += 1
        for line in request.split(b"\r\n"):
            if line.lower().startswith(b"x-request-id:"):
                request_id = line.split(b":", 1)[1].strip().decode("ascii", "replace")
        self.logger.info("request received id=%s path=/ user_agent=loglag", request_id)
        self.logger.debug("handler state id=%s cache=hit items=3", request_id)
        self.logger.info("request done id=%s status=200 bytes=2", request_id)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
            b"Connection: close\r\n\r\nok"
        )
        try:
            await writer.drain()
        finally:
            writer.close()


async def main():
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
        sys.exit(loglag_modes.recover(args.log, args.mode))
    if args.port is None:
        parser.error("--port is required (unless --recover)")
    app = App(args.mode, args.log, args.capacity)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, app.shutdown, not args.no_flush_at_exit)
    server = await asyncio.start_server(app.handle, "127.0.0.1", args.port)
    print("listening http://127.0.0.1:%d mode=%s" % (args.port, args.mode), file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
