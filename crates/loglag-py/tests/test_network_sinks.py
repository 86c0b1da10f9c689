"""The network sinks a Python service meets: an OTLP/HTTP collector and an rsyslog-style
RELP server, each a small real server on loopback written here, speaking the protocol
(OTLP/HTTP JSON; RELP's open, syslog and close commands with their acknowledgements).
"""

from __future__ import annotations

import http.server
import json
import logging
import socket
import threading

import loglag


def logger_with(handler: logging.Handler, name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.setLevel(logging.DEBUG)
    log.propagate = False
    return log


class Collector(http.server.BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        doc = json.loads(body)
        for rl in doc.get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                for record in sl.get("logRecords", []):
                    Collector.received.append(record)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def test_an_otlp_collector_receives_every_record_with_its_body():
    Collector.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    h = loglag.Handler(f"otlp+http+json://127.0.0.1:{port}")
    log = logger_with(h, "app.otlp")
    for i in range(50):
        log.info("otlp record %d", i)
    m = h.flush(30.0)
    h.close()
    server.shutdown()
    assert (m["accepted"], m["written"], m["dropped"]) == (50, 50, 0)
    # The line's envelope maps onto OTLP's: message to the body, level to severity,
    # timestamp to the record's time, the rest to attributes.
    assert [r["body"]["stringValue"] for r in Collector.received] == [
        f"otlp record {i}" for i in range(50)
    ]
    first = Collector.received[0]
    assert first["severityText"] == "INFO" and int(first["timeUnixNano"]) > 0
    assert {"key": "logger", "value": {"stringValue": "app.otlp"}} in first["attributes"]


def relp_server(listener: socket.socket, messages: list, done: threading.Event) -> None:
    """Accepts one RELP session: answers `open`, acknowledges each `syslog` with 200
    and keeps its message, answers `close`."""
    conn, _ = listener.accept()
    buf = b""

    def frame():
        nonlocal buf
        while True:
            # TXNR SP COMMAND SP DATALEN [SP DATA] LF
            parts = buf.split(b" ", 3)
            if len(parts) >= 3:
                head_len = len(parts[0]) + len(parts[1]) + 2
                rest = buf[head_len:]
                digits = rest.split(b" ", 1)[0].split(b"\n", 1)[0]
                if digits.isdigit():
                    n = int(digits)
                    start = head_len + len(digits) + (1 if n else 0)
                    end = start + n
                    if len(buf) > end:
                        txnr, command, data = parts[0], parts[1], buf[start:end]
                        buf = buf[end + 1 :]
                        return txnr, command, data
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buf += chunk

    while True:
        f = frame()
        if f is None:
            break
        txnr, command, data = f
        if command == b"open":
            offer = b"200 OK\nrelp_version=0\nrelp_software=test\ncommands=syslog"
            conn.sendall(txnr + b" rsp " + str(len(offer)).encode() + b" " + offer + b"\n")
        elif command == b"syslog":
            messages.append(data.decode("utf-8", "replace"))
            conn.sendall(txnr + b" rsp 6 200 OK\n")
        elif command == b"close":
            conn.sendall(txnr + b" rsp 0\n")
            break
    conn.close()
    done.set()


def test_a_relp_server_acknowledges_every_record():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    messages: list = []
    done = threading.Event()
    threading.Thread(target=relp_server, args=(listener, messages, done), daemon=True).start()
    h = loglag.Handler(f"relp://127.0.0.1:{port}")
    log = logger_with(h, "app.relp")
    for i in range(40):
        log.warning("relp record %d", i)
    m = h.flush(30.0)
    assert (m["accepted"], m["written"], m["dropped"]) == (40, 40, 0)
    h.close()
    assert done.wait(30)
    listener.close()
    got = [json.loads(m[m.index("{"):])["message"] for m in messages]
    assert got == [f"relp record {i}" for i in range(40)], messages[:3]
