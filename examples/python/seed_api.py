#!/usr/bin/env python3
"""A reference API in Python for `loglag lab --app`: the seven logging conditions of
the reference experiment, on one asyncio event loop, with the standard library only,
and an eighth, `loglag`, with loglag's own Python handler.

    loglag lab --app 'python3 examples/python/seed_api.py --port {port} --log {log_path} --condition {condition}' \\
        --conditions none,short1,short10,json-gen,json-pre-sync,json-sync,json-queue

Synchronous conditions use logging.StreamHandler (write + flush on the event loop);
json-queue uses QueueHandler in front of a QueueListener thread with a 256-record queue;
loglag uses loglag.Handler (`pip install ./crates/loglag-py`, then run this with that
Python), the same 16 KiB JSON record built by the handler from `extra` fields.
Each request does a small fixed hash chain and returns a small fixed JSON body.
"""

import argparse
import asyncio
import hashlib
import json
import logging
import logging.handlers
import queue
import sys
import time

import loglag_modes

SHORT_LINE_BYTES = 128
JSON_LINE_BYTES = 16384
CONDITIONS = ["none", "short1", "short10", "json-gen", "json-pre-sync", "json-sync", "json-queue", "loglag"]


def short_line():
    line = "2026-10-29T00:00:00.000Z INFO api: request handled path=/ status=200 note="
    return line.ljust(SHORT_LINE_BYTES - 1, ".")  # the handler adds the newline


def build_json(request_id, payload):
    return json.dumps(
        {
            "ts_ns": "%020d" % time.monotonic_ns(),
            "level": "INFO",
            "msg": "request handled",
            "request_id": "%012d" % request_id,
            "payload": payload,
        },
        separators=(",", ":"),
    )


def json_payload():
    overhead = len(build_json(0, "")) + 1  # + newline
    n = JSON_LINE_BYTES - overhead
    return "".join(chr(ord("a") + i % 26) for i in range(n))


def work(request_id):
    digest = hashlib.sha256(b"loglag fixed work input 0123456789").digest()
    for _ in range(100):
        digest = hashlib.sha256(digest).digest()
    return json.dumps({"ok": True, "id": request_id, "digest": digest.hex()}).encode()


def loglag_payload():
    """The payload that makes loglag.Handler's JSON line JSON_LINE_BYTES long, as the
    other JSON conditions' lines are (the lab verifies the bytes): measured once, by
    writing the record with an empty payload to a scratch file."""
    import os
    import tempfile

    import loglag

    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "probe.log")
        handler = loglag.Handler(f"file://{path}", flush_on_signals=False)
        probe = logging.getLogger("api.probe")
        probe.propagate = False
        probe.addHandler(handler)
        # The same logger name, thread and request id width as the requests' records.
        record = logging.LogRecord("api", logging.INFO, __file__, 0, "request handled", None, None)
        record.request_id = "%012d" % 0
        record.payload = ""
        handler.handle(record)
        handler.close()
        with open(path, "rb") as f:
            overhead = len(f.readline())
    return "".join(chr(ord("a") + i % 26) for i in range(JSON_LINE_BYTES - overhead))


class App:
    def __init__(self, condition, log_path):
        self.condition = condition
        self.payload = json_payload()
        self.prebuilt = build_json(0, self.payload)
        self.short = short_line()
        self.next_id = 0
        self.listener = None
        self.logger = logging.getLogger("api")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        if condition in ("none", "json-gen"):
            return
        if condition == "loglag":
            self.payload = loglag_payload()
            self.logger.addHandler(loglag_modes.handler(log_path, format="json"))
            return
        stream = open(log_path, "w", encoding="ascii", newline="\n")
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(message)s"))
        if condition == "json-queue":
            q = queue.Queue(maxsize=256)
            self.listener = logging.handlers.QueueListener(q, handler)
            self.listener.start()
            self.logger.addHandler(logging.handlers.QueueHandler(q))
        else:
            self.logger.addHandler(handler)

    def log(self, request_id):
        c = self.condition
        if c == "none":
            return
        if c == "short1":
            self.logger.info(self.short)
        elif c == "short10":
            for _ in range(10):
                self.logger.info(self.short)
        elif c == "json-gen":
            line = build_json(request_id, self.payload)
            assert len(line) + 1 == JSON_LINE_BYTES
        elif c == "json-pre-sync":
            self.logger.info(self.prebuilt)
        elif c == "loglag":
            self.logger.info(
                "request handled",
                extra={"request_id": "%012d" % request_id, "payload": self.payload},
            )
        else:  # json-sync, json-queue
            self.logger.info(build_json(request_id, self.payload))

    async def handle(self, reader, writer):
        try:
            request = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        request_id = self.next_id
        self.next_id += 1
        body = work(request_id)
        self.log(request_id)
        status = b"200 OK" if request.startswith(b"GET ") else b"405 Method Not Allowed"
        writer.write(
            b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
        try:
            await writer.drain()
        finally:
            writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True, help="FIFO or file the logs go to")
    parser.add_argument("--condition", required=True, choices=CONDITIONS)
    args = parser.parse_args()
    app = App(args.condition, args.log)
    server = await asyncio.start_server(app.handle, "127.0.0.1", args.port)
    print("listening http://127.0.0.1:%d condition=%s" % (args.port, args.condition), file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
