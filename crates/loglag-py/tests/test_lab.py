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
