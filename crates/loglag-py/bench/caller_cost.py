#!/usr/bin/env python3
"""What one `logger.info("... id=%d status=%d", i, 200)` costs the caller, per handler.

    python crates/loglag-py/bench/caller_cost.py [--rounds 5] [--calls 100000]

Each row runs in a process of its own, rows interleaved round by round (this machine's
speed drifts from minute to minute), and the median of the rounds is printed in µs per
call, with each row's ratio to the `logging` module's own floor: a handler whose
`emit` only calls `record.getMessage()`. What a row adds to the floor is taken round
by round (the row against the floor of the same round, so that a drift between rounds
falls on both) and given as the median of those differences with their range.
`--only floor,loglag` runs the rows whose names start so (the floor always runs). The files go to a temporary directory.
picologging and loguru rows run when they are installed (`pip install picologging
loguru`), and say so when not.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile

SETUP = {
    "floor (emit calls getMessage)": """
import logging
class Floor(logging.Handler):
    def emit(self, record):
        record.getMessage()
log = logging.getLogger("bench"); log.addHandler(Floor())
""",
    "FileHandler, JSON-ish format": """
import logging
h = logging.FileHandler(f"{DIR}/file.log")
h.setFormatter(logging.Formatter('{"ts":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","msg":"%(message)s"}'))
log = logging.getLogger("bench"); log.addHandler(h)
""",
    "QueueHandler + QueueListener(FileHandler)": """
import logging, logging.handlers, queue
q = queue.Queue()
target = logging.FileHandler(f"{DIR}/queue.log")
target.setFormatter(logging.Formatter('{"ts":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","msg":"%(message)s"}'))
listener = logging.handlers.QueueListener(q, target); listener.start()
log = logging.getLogger("bench"); log.addHandler(logging.handlers.QueueHandler(q))
""",
    "MemoryHandler(100) -> FileHandler": """
import logging, logging.handlers
target = logging.FileHandler(f"{DIR}/memory.log")
log = logging.getLogger("bench"); log.addHandler(logging.handlers.MemoryHandler(100, target=target))
""",
    "picologging FileHandler": """
import picologging as logging
h = logging.FileHandler(f"{DIR}/pico.log")
log = logging.getLogger("bench"); log.addHandler(h); log.setLevel(logging.INFO)
""",
    "loguru enqueue=True": """
from loguru import logger
logger.remove(); logger.add(f"{DIR}/loguru.log", enqueue=True, serialize=False)
class Log:
    def info(self, fmt, *args):
        logger.info(fmt % args)
log = Log()
""",
    "loglag.Handler (file, JSON)": """
import logging, loglag
log = logging.getLogger("bench"); log.addHandler(loglag.Handler(f"file://{DIR}/loglag.log"))
""",
}

RUN = """
import time, logging as _stdlib
try:
    log.setLevel(20)
except AttributeError:
    pass
_stdlib.getLogger("bench").setLevel(20)
for i in range(2000):
    log.info("request id=%d status=%d", i, 200)
t0 = time.perf_counter_ns()
for i in range(CALLS):
    log.info("request id=%d status=%d", i, 200)
print((time.perf_counter_ns() - t0) / CALLS / 1e3)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--only", default="", help="comma-separated row name prefixes")
    args = ap.parse_args()
    prefixes = [p.strip().lower() for p in args.only.split(",") if p.strip()]
    rows = {
        row: setup
        for row, setup in SETUP.items()
        if row.startswith("floor") or not prefixes or any(row.lower().startswith(p) for p in prefixes)
    }
    results = {row: [] for row in rows}
    missing = {}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.rounds):
            for row, setup in rows.items():
                if row in missing:
                    continue
                code = f"DIR = {d!r}\nCALLS = {args.calls}\n{setup}\n{RUN}"
                done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
                if done.returncode != 0:
                    if "ModuleNotFoundError" in done.stderr:
                        missing[row] = done.stderr.strip().splitlines()[-1]
                        continue
                    sys.exit(f"{row}: {done.stderr}")
                results[row].append(float(done.stdout.strip()))
    floors = results["floor (emit calls getMessage)"]
    floor = statistics.median(floors)
    print(f"| handler | µs per call (median of {args.rounds}) | × floor | − floor µs, round by round: median [range] |")
    print("|---|--:|--:|--:|")
    for row, values in results.items():
        if row in missing:
            print(f"| {row} | not installed ({missing[row]}) | | |")
            continue
        m = statistics.median(values)
        added = [v - f for v, f in zip(values, floors)]
        print(
            f"| {row} | {m:.2f} | {m / floor:.2f} | "
            f"{statistics.median(added):+.2f} [{min(added):+.2f}, {max(added):+.2f}] |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
