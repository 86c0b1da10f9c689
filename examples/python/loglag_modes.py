"""The loglag.Handler modes the example APIs share (crates/loglag-py), and the
recovery their spooled mode needs after a SIGKILL. Imported from the script's own
directory, so each example still runs as `python3 examples/python/NAME.py`.

    loglag-handler        loglag.Handler: each record encoded in Rust and queued,
                          bounded in bytes; a writer thread does the I/O
    loglag-handler-spool  the same with its queue in a spool file next to the log
                          (LOG.spool): a SIGKILL loses nothing, the next start
                          delivers it (`--recover`, the lab's --app-recover)
"""

import os
import stat

MODES = ("loglag-handler", "loglag-handler-spool")


def handler(log_path, spooled=False, format="text", **settings):
    """loglag.Handler on the lab's FIFO or a file; spooled, its queue is LOG.spool.
    Text lines by default, as the standard handlers beside it write them (about 90
    bytes a record against their 52: the time and the logger's name besides), so that
    a slow sink is about as slow for each; JSON lines are 150."""
    import loglag

    path = os.path.abspath(log_path)
    scheme = "fifo" if stat.S_ISFIFO(os.stat(path).st_mode) else "file"
    if spooled:
        settings["spool"] = path + ".spool"
    return loglag.Handler(f"{scheme}://{path}", format=format, **settings)


def recover(log_path, mode):
    """What the service's next start does for its log, alone: a spooled handler built
    on the spool the killed process left delivers it, then closes. Prints
    `recovered N`, which `loglag lab --app-recover` reports. Nothing outlives the
    process in the other modes."""
    delivered = 0
    if mode == "loglag-handler-spool":
        h = handler(log_path, spooled=True)
        h.close()
        delivered = h.metrics()["recovered"]
    print(f"recovered {delivered}", flush=True)
    return 0
