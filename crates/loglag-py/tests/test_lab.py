"""The Handler in the lab: examples/python/seed_api.py's `loglag` condition, measured by
`loglag lab --app` against no logging on the slow sink. Needs the workspace's
`target/release/loglag` (built by `cargo build --release`); skipped without it unless
LOGLAG_REQUIRE_LAB is set, as in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LOGLAG = ROOT / "target" / "release" / "loglag"

if not LOGLAG.exists():
    if os.environ.get("LOGLAG_REQUIRE_LAB"):
        raise FileNotFoundError(f"{LOGLAG}: build it with cargo build --release")
    pytest.skip("no target/release/loglag", allow_module_level=True)


def test_the_lab_measures_the_handler_beside_no_logging_and_verifies_every_line(tmp_path):
    app = (
        f"{sys.executable} {ROOT}/examples/python/seed_api.py"
        " --port {port} --log {log_path} --condition {condition}"
    )
    done = subprocess.run(
        [str(LOGLAG), "lab", "--app", app, "--conditions", "none,loglag", "--sinks", "slow",
         "--duration", "2s", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    pairs = {p["condition"]: p for p in summary["pairs"]}
    handler = pairs["loglag"]
    # Every line the handler wrote was read, each of the 16 KiB the condition
    # promises, and none was lost: the handler's records reach the slow sink.
    assert handler["verified"] is True, handler.get("verify_note")
    assert handler["lost_records"] == 0
    assert handler["http_errors"] == 0 and handler["timeouts"] == 0
    # The lab judged its cost against no logging, at p50 and p99, on that sink.
    judged = {
        f["percentile"]
        for f in summary["findings"]
        if f["condition"] == "loglag" and f["baseline"] == "none" and f["sink"] == "slow"
    }
    assert judged == {"p50", "p99"}
    # And the headline speaks of it.
    assert "loglag" in done.stdout.split("\n\n")[0]


def test_killed_the_spooled_handler_loses_nothing_once_the_next_start_recovers(tmp_path):
    # Reference 002's SIGKILL row on the Python app: a MemoryHandler loses what it held;
    # the spooled Handler, its records queued for an hour (so all are in the spool at
    # the kill), loses nothing once --app-recover, run as the next start would, has
    # delivered the spool.
    script = f"{sys.executable} {ROOT}/examples/python/buffer_api.py"
    env = dict(os.environ, LOGLAG_FLUSH_INTERVAL="1h", LOGLAG_BATCH_BYTES="16MiB")
    done = subprocess.run(
        [str(LOGLAG), "lab",
         "--app", script + " --port {port} --log {log_path} --mode {condition}",
         "--app-recover", script + " --recover --log {log_path} --mode {condition}",
         "--conditions", "memory,loglag-handler-spool", "--expect-lines", "3",
         "--stop-signal", "kill", "--match-request-id", "--sinks", "fast",
         "--warmup", "0", "--duration", "2s", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert done.returncode == 0, done.stderr
    runs = {r["condition"]: r for r in json.loads((tmp_path / "out" / "summary.json").read_text())["runs"]}
    spooled, memory = runs["loglag-handler-spool"], runs["memory"]
    assert spooled["lost_records"] == 0, spooled["verify_note"]
    assert spooled["verified"] is True, spooled["verify_note"]
    # Everything it logged came from the spool, after the kill.
    delivered = f"--app-recover delivered {spooled['expected_records']} records"
    assert delivered in spooled["verify_note"], spooled["verify_note"]
    # The memory buffer (capacity 100, 3 records a request) held what its last flush
    # left: the records modulo 100, written by no one.
    assert memory["lost_records"] == memory["expected_records"] % 100, memory["verify_note"]
