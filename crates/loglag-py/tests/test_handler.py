"""The loglag Handler on real sinks, real processes and real signals.

Run with: pytest crates/loglag-py/tests (after `pip install ./crates/loglag-py`).
Nothing here waits on a clock to decide: children say "ready" on a pipe, readers
read until they have what was written, and every assertion is about accounting.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

import loglag


def logger_with(handler: logging.Handler, name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.setLevel(logging.DEBUG)
    log.propagate = False
    return log


def lines_of(path) -> list:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def accounted(m: dict) -> bool:
    return m["written"] + m["dropped"] + m["in_flight"] == m["accepted"]


def test_a_file_gets_one_json_object_per_record_with_extra_fields_and_the_traceback(tmp_path):
    h = loglag.Handler(f"file://{tmp_path}/app.log")
    log = logger_with(h, "app.file")
    log.info("order %d paid", 7, extra={"user": 42, "ok": True, "ratio": 0.5, "none": None})
    try:
        raise KeyError("missing")
    except KeyError:
        log.exception("lookup failed")
    m = h.flush()
    assert (m["accepted"], m["written"], m["dropped"]) == (2, 2, 0)
    first, second = lines_of(tmp_path / "app.log")
    assert first["message"] == "order 7 paid"
    assert (first["level"], first["logger"], first["thread"]) == ("INFO", "app.file", "MainThread")
    assert (first["user"], first["ok"], first["ratio"], first["none"]) == (42, True, 0.5, None)
    assert first["timestamp"].endswith("Z") and len(first["timestamp"]) == 27
    assert second["level"] == "ERROR"
    assert "KeyError: 'missing'" in second["exc"] and "Traceback" in second["exc"]
    h.close()


def test_text_lines_escape_what_would_forge_another_record(tmp_path):
    h = loglag.Handler(f"file://{tmp_path}/app.log", format="text")
    log = logger_with(h, "app.text")
    log.warning("user said: hi\nINFO app: forged\r\x1b[2J", extra={"path": "a b=c"})
    h.flush()
    text = (tmp_path / "app.log").read_text(encoding="utf-8")
    assert text.count("\n") == 1, text
    assert "hi\\nINFO app: forged\\r\\u{1b}[2J" in text
    assert 'path="a b=c"' in text
    assert " WARNING app.text: " in text
    # A message that holds `=` is quoted: it cannot pass for a field.
    log.info("user=admin", extra={"odd key=": 1})
    h.close()
    second = (tmp_path / "app.log").read_text(encoding="utf-8").splitlines()[1]
    assert second.endswith(' app.text: "user=admin" odd_key_=1'), second


def test_json_lines_stay_one_line_whatever_a_field_holds(tmp_path):
    h = loglag.Handler(f"file://{tmp_path}/app.log")
    log = logger_with(h, "app.json")
    hostile = "a\nb\r\"c\"\\\x00\x1b\u2028"
    log.info(hostile, extra={"field": hostile, "nan": float("nan"), "big": 10**30})
    # An extra field named like the line's own keys cannot replace them.
    log.error("real", extra={"level": "DEBUG", "timestamp": "1970-01-01T00:00:00Z"})
    # A lone surrogate (from a surrogateescape-decoded path) is written, replaced.
    log.info("path \udcff end", extra={"p": "x\udcff"})
    m = h.flush()
    record, forged, surrogate = lines_of(tmp_path / "app.log")
    assert record["message"] == hostile and record["field"] == hostile
    assert record["nan"] == "NaN" and record["big"] == str(10**30)
    assert (forged["level"], forged["message"]) == ("ERROR", "real")
    assert (forged["extra.level"], forged["extra.timestamp"]) == ("DEBUG", "1970-01-01T00:00:00Z")
    assert forged["timestamp"].startswith("20")
    assert surrogate["message"].startswith("path \ufffd") and surrogate["message"].endswith(" end")
    assert surrogate["p"].startswith("x\ufffd")
    assert (m["accepted"], m["written"]) == (3, 3)
    h.close()


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_standard_streams(stream):
    code = textwrap.dedent(
        f"""
        import logging, loglag
        h = loglag.Handler({stream!r})
        log = logging.getLogger("s"); log.addHandler(h); log.setLevel(logging.INFO)
        for i in range(100):
            log.info("line %d", i)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = getattr(done, stream)
    got = [json.loads(l)["message"] for l in out.splitlines()]
    # logging.shutdown() at exit closes the handler: everything is written.
    assert got == [f"line {i}" for i in range(100)]


def test_a_fifo_and_its_reader(tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    received = []
    # The reader's end is open before the handler opens the writer's, so neither
    # waits for the other; it reads (blocking) once there is a writer, until the
    # handler closes its end.
    read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    h = loglag.Handler(f"fifo://{fifo}")
    os.set_blocking(read_fd, True)

    def read():
        with open(read_fd, encoding="utf-8") as f:
            for line in f:
                received.append(json.loads(line)["message"])

    reader = threading.Thread(target=read)
    reader.start()
    log = logger_with(h, "app.fifo")
    for i in range(500):
        log.info("r%d", i)
    h.close()
    m = h.metrics()
    reader.join(timeout=60)
    assert not reader.is_alive()
    assert m["written"] + m["dropped"] == 500 and accounted(m)
    assert received == [f"r{i}" for i in range(500)][: len(received)]
    assert len(received) == m["written"]


def test_a_rotating_file_keeps_every_record_across_its_files(tmp_path):
    # The file rotates before a batch would take it past its size: a flush every 40
    # records makes a batch of them.
    h = loglag.Handler(f"file://{tmp_path}/app.log?max_file_size=4KiB&keep=50")
    log = logger_with(h, "app.rotate")
    for i in range(400):
        log.info("record %d", i)
        if i % 40 == 39:
            h.flush()
    h.close()
    m = h.metrics()
    files = sorted(p for p in tmp_path.iterdir() if p.name.startswith("app.log"))
    assert len(files) > 2, files
    msgs = [r["message"] for p in files for r in lines_of(p)]
    assert m["written"] == 400 and sorted(msgs) == sorted(f"record {i}" for i in range(400))


def test_syslog_over_udp_gets_one_datagram_per_record():
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.settimeout(30)
    port = server.getsockname()[1]
    h = loglag.Handler(f"syslog+udp://127.0.0.1:{port}")
    log = logger_with(h, "app.syslog")
    for i in range(20):
        log.warning("datagram %d", i)
    m = h.flush()
    got = [server.recv(65536).decode() for _ in range(m["written"])]
    assert m["written"] == 20
    assert [json.loads(g[g.index("{"):])["message"] for g in got] == [f"datagram {i}" for i in range(20)], got
    h.close()
    server.close()


def test_accounting_holds_at_every_read_under_threads_and_a_flood(tmp_path):
    # A small queue and eight threads logging as fast as they can: records may be
    # dropped (queue full), never lost; every read of the metrics balances.
    h = loglag.Handler(f"file://{tmp_path}/app.log", capacity_bytes="64KiB")
    log = logger_with(h, "app.flood")
    start = threading.Barrier(9)
    stop = threading.Event()
    reads = []

    def sample():
        start.wait()
        while not stop.is_set():
            reads.append(h.metrics())

    def flood(t):
        start.wait()
        for i in range(5000):
            log.info("thread %d record %d %s", t, i, "x" * 100)

    sampler = threading.Thread(target=sample)
    threads = [threading.Thread(target=flood, args=(t,)) for t in range(8)]
    sampler.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    sampler.join()
    m = h.flush()
    assert reads and all(accounted(r) for r in reads)
    assert m["accepted"] == 40000 and m["in_flight"] == 0 and accounted(m)
    assert m["dropped"] == m["dropped_by_reason"]["queue_full"]
    # The last drops are announced when the pipeline closes.
    h.close()
    lines = lines_of(tmp_path / "app.log")
    records = [r for r in lines if r.get("logger") == "app.flood"]
    assert len(records) == m["written"]
    # Each drop is announced in the log itself, with its reason and level.
    announced = sum(r["fields"]["dropped"] for r in lines if r.get("target") == "loglag")
    assert announced == m["dropped"]


@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"capacity_bytes": "lots"}, "capacity_bytes"),
        ({"overflow": "sometimes"}, "overflow"),
        ({"flush_interval": "-1s"}, "flush_interval"),
        ({"capacity_byts": "8MiB"}, "capacity_byts"),
    ],
)
def test_a_bad_setting_raises_value_error_naming_its_key(kwargs, key, tmp_path):
    with pytest.raises(ValueError, match=key):
        loglag.Handler(f"file://{tmp_path}/app.log", **kwargs)


def test_logging_shutdown_spends_one_shutdown_budget_on_its_flush_and_close(tmp_path):
    # logging.shutdown() calls flush() and then close(). Into a sink that has stopped
    # reading, the flush waits the whole shutdown_timeout; the close then has nothing
    # left to wait for and counts what is still queued as dropped at shutdown, so a
    # deployment's grace period sees one budget spent, not two.
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # opened, never read
    try:
        handler = loglag.Handler(f"fifo://{fifo}", capacity_bytes="1MiB", shutdown_timeout="200ms")
        log = logger_with(handler, "shutdown-budget")
        for i in range(2_000):
            log.info("record %d %s", i, "x" * 400)
        closes = []
        pipeline = handler._pipeline

        class Watched:
            """The real pipeline, its close() arguments noted (the seam)."""

            def __getattr__(self, name):
                return getattr(pipeline, name)

            def close(self, *args):
                closes.append(args)
                return pipeline.close(*args)

        handler._pipeline = Watched()
        handler.flush()  # as logging.shutdown calls them: no timeout, then close
        handler.close()
        # The close got what was left of the flush's budget, not a budget of its own.
        assert len(closes) == 1 and len(closes[0]) == 1 and closes[0][0] < 0.2, closes
        m = handler.metrics()
        assert m["in_flight"] == 0 and accounted(m), m
        assert m["dropped_by_reason"]["shutdown"] > 0, m
    finally:
        os.close(reader)


def test_filters_added_later_and_a_record_that_cannot_be_formatted_are_handled_as_logging_does(tmp_path):
    # The handler answers logging's handle() from Rust while it has no filters; a
    # filter added later is honoured, and removed, no longer; a record whose message
    # cannot be formatted goes to handleError, never into the caller.
    errors = []

    class Noted(loglag.Handler):
        def handleError(self, record):  # noqa: N802 (logging's name)
            errors.append((record.msg, sys.exc_info()[0]))

    handler = Noted(f"file://{tmp_path}/app.log")
    log = logger_with(handler, "filters-and-errors")
    log.info("kept %d", 1)
    only_even = lambda record: record.args[0] % 2 == 0  # noqa: E731
    handler.addFilter(only_even)
    for i in range(2, 6):
        log.info("kept %d", i)
    handler.removeFilter(only_even)
    log.info("kept %d", 7)
    log.info("%d items", "not a number")
    handler.close()
    assert [r["message"] for r in lines_of(tmp_path / "app.log")] == [
        "kept 1", "kept 2", "kept 4", "kept 7",
    ]
    assert errors == [("%d items", TypeError)]


def test_a_subclass_that_overrides_handle_or_emit_is_called(tmp_path):
    # The fast path is for the handler as it is; a subclass's own handle() or emit()
    # runs, as logging would call it.
    class Tagging(loglag.Handler):
        def handle(self, record):
            record.req_id = 7
            return super().handle(record)

    class Counting(loglag.Handler):
        seen = 0

        def emit(self, record):
            Counting.seen += 1
            super().emit(record)

    tagging = Tagging(f"file://{tmp_path}/tagged.log")
    logger_with(tagging, "subclass-handle").info("tagged")
    tagging.close()
    assert [r.get("req_id") for r in lines_of(tmp_path / "tagged.log")] == [7]
    counting = Counting(f"file://{tmp_path}/counted.log")
    logger_with(counting, "subclass-emit").info("counted")
    counting.close()
    assert Counting.seen == 1
    assert [r["message"] for r in lines_of(tmp_path / "counted.log")] == ["counted"]


def test_a_bad_sink_url_or_format_raises_value_error():
    with pytest.raises(ValueError, match="sink"):
        loglag.Handler("gopher://example")
    with pytest.raises(ValueError, match="format"):
        loglag.Handler("stdout", format="xml")
    with pytest.raises(ValueError, match="capacity_bytes"):
        loglag.Handler("stdout?capacity_bytes=1")


def test_settings_from_a_toml_file(tmp_path):
    config = tmp_path / "loglag.toml"
    config.write_text(f'sink = "file://{tmp_path}/from-toml.log"\ncapacity_bytes = "1MiB"\n')
    h = loglag.Handler(config_file=str(config))
    logger_with(h, "app.toml").info("from toml")
    h.close()
    assert lines_of(tmp_path / "from-toml.log")[0]["message"] == "from toml"
    config.write_text('capacity_bytes = "lots"\n')
    with pytest.raises(ValueError, match="capacity_bytes"):
        loglag.Handler(config_file=str(config))


def test_a_handler_used_after_close_starts_afresh_as_a_file_handler_reopens(tmp_path):
    h = loglag.Handler(f"file://{tmp_path}/app.log")
    log = logger_with(h, "app.closed")
    log.info("before")
    h.close()
    closed = h.metrics()
    assert (closed["accepted"], closed["written"]) == (1, 1)
    log.info("after")
    m = h.flush()
    # Counted across both pipelines.
    assert (m["accepted"], m["written"], m["dropped"]) == (2, 2, 0)
    assert [r["message"] for r in lines_of(tmp_path / "app.log")] == ["before", "after"]
    h.close()
    h.close()  # a second close is harmless


def test_dict_config_closing_every_handler_does_not_silence_this_one(tmp_path):
    # logging.config.dictConfig closes every existing handler, even on loggers it
    # does not configure (uvicorn and Django call it at start).
    import logging.config

    h = loglag.Handler(f"file://{tmp_path}/app.log")
    log = logger_with(h, "app.dictconfig")
    log.info("before dictConfig")
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    log.info("after dictConfig")
    h.close()
    assert [r["message"] for r in lines_of(tmp_path / "app.log")] == ["before dictConfig", "after dictConfig"]


CHILD = textwrap.dedent(
    """
    import logging, os, sys, loglag
    sink, n = sys.argv[1], int(sys.argv[2])
    settings = dict(a.split("=", 1) for a in sys.argv[3:])
    h = loglag.Handler(sink, **settings)
    log = logging.getLogger("child"); log.addHandler(h); log.setLevel(logging.INFO)
    for i in range(n):
        log.info("record %d", i)
    print("ready", flush=True)
    sys.stdin.read()  # until the parent signals us
    """
)


def child(sink, n, *settings):
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, sink, str(n), *settings],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


# A flush interval of an hour and a large batch: every record is still queued when
# the signal comes.
QUEUED = ("flush_interval=1h", "batch_bytes=16MiB", "capacity_bytes=64MiB")


def test_sigterm_writes_what_is_queued_then_ends_the_process_by_the_signal(tmp_path):
    p = child(f"file://{tmp_path}/app.log", 2000, *QUEUED)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == -signal.SIGTERM
    msgs = [r["message"] for r in lines_of(tmp_path / "app.log")]
    assert msgs == [f"record {i}" for i in range(2000)]


def test_sigint_writes_what_is_queued_and_still_raises_keyboard_interrupt(tmp_path):
    code = textwrap.dedent(
        f"""
        import logging, sys, loglag
        h = loglag.Handler("file://{tmp_path}/app.log", flush_interval="1h", batch_bytes="16MiB")
        log = logging.getLogger("c"); log.addHandler(h); log.setLevel(logging.INFO)
        for i in range(500):
            log.info("record %d", i)
        try:
            print("ready", flush=True)
            sys.stdin.read()
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(3)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGINT)
    assert p.stdout.readline().strip() == "KeyboardInterrupt"
    assert p.wait(timeout=60) == 3
    msgs = [r["message"] for r in lines_of(tmp_path / "app.log")]
    assert msgs == [f"record {i}" for i in range(500)]


def test_an_applications_own_sigterm_handler_still_runs_after_the_flush(tmp_path):
    code = textwrap.dedent(
        f"""
        import logging, os, signal, sys, loglag
        def own(num, frame):
            # What it sees: the records already written.
            with open("{tmp_path}/app.log") as f:
                print("own handler saw", sum(1 for _ in f), flush=True)
            os._exit(7)
        signal.signal(signal.SIGTERM, own)
        h = loglag.Handler("file://{tmp_path}/app.log", flush_interval="1h", batch_bytes="16MiB")
        log = logging.getLogger("c"); log.addHandler(h); log.setLevel(logging.INFO)
        for i in range(300):
            log.info("record %d", i)
        print("ready", flush=True)
        sys.stdin.read()
        """
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    assert p.stdout.readline().strip() == "own handler saw 300"
    assert p.wait(timeout=60) == 7


def test_kill_9_with_a_spool_loses_nothing_and_writes_nothing_twice(tmp_path):
    sink, spool = f"file://{tmp_path}/app.log", f"{tmp_path}/app.spool"
    p = child(sink, 3000, "spool=" + spool, *QUEUED)
    assert p.stdout.readline().strip() == "ready"
    p.kill()
    assert p.wait(timeout=60) == -signal.SIGKILL
    # The next start delivers what the killed process had queued.
    again = loglag.Handler(sink, spool=spool)
    again.close()
    m = again.metrics()
    msgs = [r["message"] for r in lines_of(tmp_path / "app.log")]
    # Queued for an hour, nothing was written before the kill: the spool held it all.
    assert m["recovered"] == 3000, m
    assert sorted(msgs) == sorted(f"record {i}" for i in range(3000))


def test_a_pre_fork_master_and_four_workers_each_write_their_records_once(tmp_path):
    # As gunicorn does: the master builds its logging, then forks its workers; each
    # worker logs and exits through logging.shutdown().
    code = textwrap.dedent(
        f"""
        import logging, os, loglag
        h = loglag.Handler("file://{tmp_path}/app.log")
        log = logging.getLogger("master"); log.addHandler(h); log.setLevel(logging.INFO)
        for i in range(500):
            log.info("master before %d", i)
        pids = []
        for w in range(4):
            pid = os.fork()
            if pid == 0:
                for i in range(1000):
                    log.info("worker %d record %d", w, i)
                # As gunicorn's workers end: their own exit, atexit included.
                raise SystemExit(0)
            pids.append(pid)
        for i in range(500):
            log.info("master after %d", i)
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    msgs = [r["message"] for r in lines_of(tmp_path / "app.log")]
    expected = (
        [f"master before {i}" for i in range(500)]
        + [f"master after {i}" for i in range(500)]
        + [f"worker {w} record {i}" for w in range(4) for i in range(1000)]
    )
    assert sorted(msgs) == sorted(expected), (len(msgs), len(expected))


def test_multiprocessing_children_write_what_they_queued_before_os_exit(tmp_path):
    # multiprocessing's forked children end with os._exit after its finalizers: no
    # atexit, no logging.shutdown.
    code = textwrap.dedent(
        f"""
        import logging, multiprocessing, loglag
        h = loglag.Handler("file://{tmp_path}/app.log", flush_interval="1h", batch_bytes="16MiB")
        log = logging.getLogger("mp"); log.addHandler(h); log.setLevel(logging.INFO)
        def work(w):
            for i in range(500):
                log.info("child %d record %d", w, i)
        if __name__ == "__main__":
            ctx = multiprocessing.get_context("fork")
            ps = [ctx.Process(target=work, args=(w,)) for w in range(3)]
            for p in ps: p.start()
            for p in ps: p.join(); assert p.exitcode == 0
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    msgs = [r["message"] for r in lines_of(tmp_path / "app.log")]
    assert sorted(msgs) == sorted(f"child {w} record {i}" for w in range(3) for i in range(500))


@pytest.mark.parametrize("kind", ["rotating", "spool"])
def test_forked_workers_of_a_rotating_or_spooled_pipeline_write_through_the_parents(tmp_path, kind):
    # A spool's or a rotating file's lock is the parent's: a worker writes through the
    # inherited pipeline (on its own thread, at once), and nothing waits for the lock.
    sink = f"file://{tmp_path}/app.log" + ("?rotate=daily&keep=3" if kind == "rotating" else "")
    extra = f", spool={str(tmp_path / 'app.spool')!r}" if kind == "spool" else ""
    code = textwrap.dedent(
        f"""
        import logging, os, loglag
        h = loglag.Handler({sink!r}{extra})
        log = logging.getLogger("m"); log.addHandler(h); log.setLevel(logging.INFO)
        pids = []
        for w in range(2):
            pid = os.fork()
            if pid == 0:
                for i in range(300):
                    log.info("worker %d record %d", w, i)
                os._exit(0)
            pids.append(pid)
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        log.info("master done")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused" not in done.stderr and "could not" not in done.stderr, done.stderr
    msgs = [r["message"] for p in tmp_path.iterdir() if p.name.startswith("app.log") for r in lines_of(p)]
    expected = [f"worker {w} record {i}" for w in range(2) for i in range(300)] + ["master done"]
    assert sorted(msgs) == sorted(expected)


def test_a_spooled_handler_reopened_after_dict_config_keeps_its_spool(tmp_path):
    import logging.config

    h = loglag.Handler(f"file://{tmp_path}/app.log", spool=str(tmp_path / "app.spool"))
    log = logger_with(h, "app.spool.dictconfig")
    log.info("before")
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    log.info("after")
    m = h.flush()
    assert m["spool_refused"] is False, m
    h.close()
    assert [r["message"] for r in lines_of(tmp_path / "app.log")] == ["before", "after"]
