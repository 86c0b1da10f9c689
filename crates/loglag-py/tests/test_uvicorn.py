"""The Handler inside an asyncio service: a FastAPI app under uvicorn whose log sink
stops being read. The pipeline fills and drops, counted; every request is still
answered, because the event loop's thread never waits for the sink.

Needs fastapi and uvicorn (`pip install fastapi uvicorn`); skipped without them
unless LOGLAG_REQUIRE_FASTAPI is set, as in CI.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError:
    if os.environ.get("LOGLAG_REQUIRE_FASTAPI"):
        raise
    pytest.skip("fastapi and uvicorn are not installed", allow_module_level=True)


APP = textwrap.dedent(
    """
    import logging, os, sys
    import fastapi, uvicorn, loglag

    fifo, port = sys.argv[1], int(sys.argv[2])
    # A reader that opens the FIFO and never reads: after the pipe's 64 KiB the
    # writer thread waits in write(2), and the pipeline's 64 KiB fill behind it.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    handler = loglag.Handler(f"fifo://{fifo}", capacity_bytes="64KiB", shutdown_timeout="500ms")
    log = logging.getLogger("api"); log.addHandler(handler); log.setLevel(logging.INFO)
    log.propagate = False
    app = fastapi.FastAPI()

    @app.get("/")
    async def root(i: int = 0):
        log.info("request handled", extra={"request": i, "pad": "x" * 1000})
        return {"ok": True}

    @app.get("/metrics")
    async def metrics():
        return handler.metrics()

    # Listening before uvicorn starts: connections wait in the backlog, so "ready"
    # can be said now and no client has to retry.
    import socket
    sock = socket.socket(); sock.bind(("127.0.0.1", port)); sock.listen(128)
    print("ready", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def test_a_stalled_sink_never_holds_a_request_under_uvicorn(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", APP, str(fifo), str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout.readline().strip() == "ready"
        statuses = [get(port, f"/?i={i}")[0] for i in range(400)]
        assert statuses == [200] * 400
        status, body = get(port, "/metrics")
        m = json.loads(body)
        assert status == 200
        # 400 records of ~1.1 KB against 64 KiB of pipe and 64 KiB of queue: most
        # were dropped, each counted with its reason; none is unaccounted for.
        assert m["accepted"] == 400
        assert m["dropped_by_reason"]["queue_full"] > 0, json.dumps(m)
        assert m["written"] + m["dropped"] + m["in_flight"] == m["accepted"]
    finally:
        server.terminate()
        server.wait(timeout=60)
