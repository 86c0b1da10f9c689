//! What every column of the lab's tables means, defined once: the pairs and runs tables
//! (Markdown, HTML, CSV), the findings, the presets', and those of `loglag load`,
//! `loglag sink` and `loglag emit`. The report's pages, docs/lab.md's "Columns"
//! section and `loglag lab --help-all` all print this list; the tests below fail when a
//! table gains a column this list does not define, or when docs/lab.md's copy drifts.

/// One column, however many tables show it.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    /// Its titles in Markdown and HTML tables (a CSV-only column has none).
    pub titles: &'static [&'static str],
    /// Its CSV headers.
    pub keys: &'static [&'static str],
    pub definition: &'static str,
}

const fn term(
    titles: &'static [&'static str],
    keys: &'static [&'static str],
    definition: &'static str,
) -> Term {
    Term {
        titles,
        keys,
        definition,
    }
}

/// A cell where a figure does not apply (a closed loop has no send lateness, an
/// `--app` reports no logger drops, one round has no spread): never `0`. CSV leaves
/// the cell empty.
pub const NOT_APPLICABLE: &str = "–";

/// Under a table of runs stopped by a signal (`--stop-signal`, the buffers preset)
/// that shows `dropped` and `lost`: there they count different records.
pub const DROPPED_AND_LOST_AT_STOP: &str = "Dropped and lost count different records here, the API having been stopped by a signal. Dropped: records the logger discarded and counted itself (its queue full, or the shutdown deadline passed). Lost: records it logged and did not drop that were never read, which nobody counted (what a buffer held at the stop).";

/// Under a table of runs flushed before they ended that shows `dropped` and `lost`:
/// there the dropped records are among the lost.
pub const DROPPED_WITHIN_LOST: &str = "Lost counts every record the log lacks, the dropped ones among them: dropped are those the logger discarded and counted itself (its queue full, or the shutdown deadline passed), so lost minus dropped is what vanished uncounted. Over the network conditions a record counted as dropped may arrive anyway, so lost can be below dropped.";

/// Under a table with a SIGKILL step measured once.
pub const ONE_KILL_ROUND: &str = "One round: what a SIGKILL loses is what each buffer held at the instant it landed (a buffer of N records holds anywhere from 0 to N − 1), so each lost count at the kill is a single draw, not a rate. Run --rounds 3 or more to see its spread.";

/// The glossary, by the tables that first show each column.
pub const GLOSSARY: &[(&str, &[Term])] = &[
    (
        "lab: pairs (one row per condition and sink, pooled over rounds) and runs",
        &[
            term(&["condition"], &["condition"], "What the API logs for each request: one of the built-in conditions (none, short1, json-sync, json-queue, …) or an --app's condition name."),
            term(&["sink"], &["sink"], "Where the log goes. fast: the reader reads the FIFO as fast as it can; slow: the reader is capped at --slow-rate (256 KiB/s by default); slow-disk: every write waits --disk-delay first. In `loglag emit`: the sink URL."),
            term(&["runs"], &["runs"], "Runs pooled into the row: one per round, each with a fresh API and reader."),
            term(&[], &["run", "round"], "runs.csv: the run's number, in the order the runs were made, and its round (1 for the first)."),
            term(&["requests"], &["requests"], "Requests sent in the measured window (warm-up excluded)."),
            term(&[], &["completed"], "runs.csv: requests answered with a success status."),
            term(&["p50 ms", "p99 ms", "p90 ms", "p99.9 ms", "max ms", "mean ms"], &["p50_ms", "p99_ms", "p90_ms", "p999_ms", "max_ms"], "Latency percentiles (max: the slowest request), from each request's scheduled send (a closed loop: its actual send) to the last byte of the response body. A pair pools every request of every round."),
            term(&["p99 range ms"], &["p99_ms_range"], "The lowest and the highest p99 of a single round: the spread between rounds. – with one round."),
            term(&["p99 95% interval"], &[], "The p99's 95% bootstrap interval over the pooled requests."),
            term(&["errors"], &["http_errors"], "Requests answered with an HTTP error status or failed with an I/O error. In a preset's table, timeouts are counted here too."),
            term(&["timeouts"], &["timeouts"], "Requests with no complete answer within the request timeout."),
            term(&["gen µs"], &["gen_us"], "Average time per request the API spent building the log record (the JSON), measured inside the built-in API. – when the condition builds none, or for an --app, which cannot report it."),
            term(&["log call µs"], &["log_call_us"], "Average time per request spent inside the logger call, measured inside the built-in API: in a synchronous condition, waiting for room in a full pipe included. – when the condition logs nothing, or for an --app."),
            term(&["max backlog KiB"], &["max_backlog_kib"], "The largest gap between the bytes the API handed to its logger and the bytes the reader had read, sampled during the run (a pair: the largest of any round). – for an --app, which does not report what it produced."),
            term(&["drain s"], &["drain_s"], "From the last response until the reader read the last log byte: logging work left after the requests were answered (a pair: the mean over rounds)."),
            term(&["rps API", "req/s"], &["rps_api"], "Completed requests per second, over the time from the first scheduled send to the end of the load or the last response, whichever is later."),
            term(&["rps logs read"], &["rps_logs_read"], "The same completed requests per second, over the time until every log byte was read: what the service sustains when \"done\" includes its logs."),
            term(&["CPU cores"], &["cpu_cores"], "CPU time the API process used divided by the wall time of the load: 1.0 is one core busy (a pair: the mean over rounds)."),
            term(&[], &["reader_cpu_cores", "generator_cpu_cores"], "runs.csv: the same for the sink reader and for the lab's load generator."),
            term(&[], &["machine_busy"], "runs.csv: the share (0 to 1) of the machine's CPU time that was busy during the load, other tenants included; 0.9 or more flags the run as run on a busy machine."),
            term(&[], &["cpu_wait_api_ms", "cpu_wait_reader_ms", "cpu_wait_generator_ms"], "How long the API (an --app with everything it forked), the sink reader and the load generator were runnable but waiting for a CPU during the load, ms (the run-queue wait of /proc/PID/task/*/schedstat). A pair sums its runs. What the findings weigh against a difference on a busy machine."),
            term(&["dropped"], &["dropped"], "Records the logger discarded and counted itself (its queue full, or the shutdown deadline passed), as the built-in API reports them: never written, and the logger knows it. – for an --app, which reports nothing. In `loglag emit`: every drop, by reason."),
            term(&["queue full"], &["queue_full"], "Times the logger found its queue full (each may have dropped or blocked, by its policy)."),
            term(&["lost", "lost at stop"], &["lost_records"], "Records the log lacks: expected minus lines read (negative: extra lines). Expected is every record the API logged, the dropped ones included, so lost minus dropped is what vanished uncounted; after a stop by a signal (--stop-signal, the buffers preset's steps) it is what the API logged and did not drop, so lost is only what vanished uncounted (what a buffer held at a SIGKILL). An --app: --expect-lines × requests served, warm-up included. `(N twice)`: a spool's batch in flight at the stop, delivered again. – when nothing says what to expect."),
            term(&[], &["expected_records"], "runs.csv: the log lines the run should have produced (see lost)."),
            term(&["send late mean µs", "send late p99 µs", "send late max µs"], &["send_late_mean_us", "send_late_p99_us", "send_late_max_us"], "How late the load generator sent each request against its schedule (open loop only: – for a closed loop, which has no schedule). A p99 over --lateness-limit (100 µs by default) flags the row: its latencies include the generator's own delay."),
            term(&["verified"], &["verified"], "yes when the reader read exactly what the API wrote: bytes, lines and SHA-256 for the built-in API (stopped by a signal: every record logged and not dropped); lines, and bytes for a built-in condition, against --expect-lines for an --app. NO otherwise, with a note saying why."),
            term(&[], &["verify_note"], "runs.csv: what the verification was based on, or why it failed."),
            term(&[], &["produced_bytes", "read_bytes", "read_newlines", "read_sha256"], "runs.csv: log bytes the built-in API wrote (empty for an --app); bytes, lines and the SHA-256 the reader read."),
            term(&[], &["app_exit"], "runs.csv: how an --app (or a built-in API stopped by a signal) ended at the end of the run."),
        ],
    ),
    (
        "lab: findings (each condition against the baseline on the same sink)",
        &[
            term(&["comparison"], &[], "The condition against the baseline (--baseline; json-sync is also compared with json-queue)."),
            term(&["percentile"], &[], "The latency percentile compared: p50 or p99."),
            term(&["ms"], &[], "The condition's percentile against the baseline's, ms."),
            term(&["difference ms [95% interval]"], &[], "Condition minus baseline, ms, with its 95% bootstrap interval over the requests of every round."),
            term(&["ratio [95% interval]"], &[], "Condition over baseline, with its 95% bootstrap interval."),
            term(&["verdict"], &[], "holds, or inconclusive: the interval includes zero, a side was saturated or failed requests, the measured interference (CPU wait, the generator's lateness at that percentile) could explain the difference, or the rounds disagree."),
            term(&["why"], &[], "Why a finding is inconclusive, or what a reader must know about one that holds (a busy machine inflating the absolute values)."),
        ],
    ),
    (
        "presets (--preset buffers, blocking, sweep)",
        &[
            term(&["stop"], &[], "How the API was stopped at the end of each run: term (SIGTERM: it writes what it holds, then exits) or kill (SIGKILL: what a buffer holds is lost)."),
            term(&["clients"], &[], "Connections of the closed loop: each sends its next request when the last is answered."),
            term(&["log writes/min", "log writes/s"], &[], "write calls on the log sink, counted by the built-in API, per minute or per second of the load."),
            term(&["syscw/min", "syscw/s"], &[], "Write-family system calls of the whole API process (/proc/PID/io, responses included), per minute or per second."),
            term(&["log MiB"], &[], "Log bytes read, summed over rounds."),
            term(&["order"], &[], "Whether the sequence numbers read ever went backwards (in order, or how many lines did), and the ERROR lines read. – when not checked."),
            term(&["ctx vol/s", "ctx invol/s"], &[], "The API process's context switches per second, summed over its threads: voluntary (it blocked: a write waiting for a full pipe, a lock) and involuntary (preempted)."),
            term(&["batch KiB", "interval ms"], &[], "The sweep's point: loglag's batch size and flush interval."),
            term(&["RSS peak MiB"], &[], "The API process's peak resident memory."),
            term(&["oldest queued ms"], &[], "The longest a record waited in loglag's queue, sampled every 25 ms: about what a SIGKILL could lose, in time."),
        ],
    ),
    (
        "loglag load, loglag sink, loglag emit",
        &[
            term(&["target"], &["url"], "The URL loaded; `floor:` marks the calibration run against a null server (--calibrate)."),
            term(&[], &["mode"], "open (requests on a fixed schedule, --rate) or closed (--closed N connections)."),
            term(&["ok"], &["ok"], "Requests answered with a success status."),
            term(&["HTTP errors", "I/O errors"], &["io_errors"], "Requests answered with an HTTP error status; requests that failed on the connection."),
            term(&["rps"], &["achieved_rps"], "Successful requests per second achieved."),
            term(&[], &["lateness_warning"], "Set when the generator's p99 send lateness exceeded --lateness-limit."),
            term(&["index", "scheduled ms", "send lateness ms", "connect ms", "latency ms", "status", "outcome"], &["index", "scheduled_ms", "send_lateness_ms", "connect_ms", "latency_ms", "status", "outcome"], "--requests-csv, one row per request: its number, when it was due (ms after the first), how late it was sent, the time to connect and the latency (both from the due time), the HTTP status and how it ended (ok, http_error, io_error, timeout)."),
            term(&["source"], &["source"], "The FIFO or file `loglag sink` read."),
            term(&["bytes", "newlines", "reads", "sha256"], &["bytes", "newlines", "reads", "sha256"], "What `loglag sink` read: bytes, lines, read calls, and the SHA-256 of the bytes."),
            term(&["seconds", "last byte s"], &["seconds", "last_byte_s"], "How long `loglag sink` read, and when the last byte arrived, seconds from its start."),
            term(&["records"], &["records"], "Records `loglag emit` submitted."),
            term(&["written"], &["written"], "Records the pipeline wrote to the sink."),
            term(&["dropped (queue full / io / shutdown)"], &["dropped_queue_full", "dropped_io_error", "dropped_shutdown"], "Records the pipeline dropped and counted: all, then by reason (queue full, a sink I/O error, the shutdown deadline)."),
            term(&["write calls"], &["write_syscalls"], "write system calls on the sink."),
            term(&["elapsed s", "records/s", "MiB/s"], &["elapsed_s", "records_per_s", "mib_per_s"], "Until the pipeline had written every record; records and MiB written per second over it."),
            term(&["write p99 µs"], &["write_p99_us"], "The p99 time of one write to the sink."),
        ],
    ),
];

/// Every term, in glossary order.
pub fn terms() -> impl Iterator<Item = &'static Term> {
    GLOSSARY.iter().flat_map(|(_, terms)| terms.iter())
}

/// The term that defines a column title (as a Markdown or HTML table heads it).
pub fn lookup(title: &str) -> Option<&'static Term> {
    terms().find(|t| t.titles.contains(&title))
}

/// The term that defines a CSV header.
pub fn lookup_key(key: &str) -> Option<&'static Term> {
    terms().find(|t| t.keys.contains(&key))
}

/// The terms that define `titles` (a page's tables), each once, in glossary order.
pub fn terms_for<'a>(titles: impl IntoIterator<Item = &'a str>) -> Vec<&'static Term> {
    let titles: Vec<&str> = titles.into_iter().collect();
    terms()
        .filter(|t| t.titles.iter().any(|title| titles.contains(title)))
        .collect()
}

/// A term's column as a reader names it: titles, then CSV headers in brackets.
pub fn column_name(t: &Term) -> String {
    match (t.titles.is_empty(), t.keys.is_empty()) {
        (false, false) => format!("{} [{}]", t.titles.join(", "), t.keys.join(", ")),
        (false, true) => t.titles.join(", "),
        _ => format!("[{}]", t.keys.join(", ")),
    }
}

/// (column, definition) pairs, in glossary order: the column as [`column_name`] names it.
pub fn entries() -> Vec<(String, &'static str)> {
    terms().map(|t| (column_name(t), t.definition)).collect()
}

/// The glossary as plain text for a terminal (`loglag lab --help-all`): each column, its
/// CSV headers in brackets, and its definition on the lines below, wrapped to 80 columns.
pub fn glossary_text() -> String {
    let mut out = String::from(
        "Columns, as tables head them, CSV headers in brackets (– where a figure does\nnot apply; CSV leaves the cell empty):\n",
    );
    for (table, terms) in GLOSSARY {
        out.push('\n');
        for line in wrap(&format!("{table}:"), 80) {
            out.push_str(&format!("{line}\n"));
        }
        for t in terms.iter() {
            for (i, line) in wrap(&column_name(t), 78).iter().enumerate() {
                out.push_str(&format!("{}{line}\n", if i == 0 { "  " } else { "    " }));
            }
            for line in wrap(t.definition, 74) {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// The glossary as docs/lab.md's "Columns" section prints it: one Markdown table per
/// group of tables.
pub fn glossary_markdown() -> String {
    let mut out = String::new();
    for (table, terms) in GLOSSARY {
        out.push_str(&format!(
            "**{table}**\n\n| column | CSV | meaning |\n|---|---|---|\n"
        ));
        for t in terms.iter() {
            let code = |names: &[&str]| {
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                code(t.titles),
                code(t.keys),
                t.definition.replace('|', "\\|")
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column of every table the lab prints, by the title a reader sees and the
    /// header a CSV carries: a column added without a definition fails here.
    #[test]
    fn every_column_of_every_table_is_defined() {
        let mut missing = Vec::new();
        let mut check = |title: &str, key: Option<&str>, shown: bool| {
            if shown && lookup(title).is_none() {
                missing.push(format!("title {title:?}"));
            }
            if let Some(key) = key.filter(|k| lookup_key(k).is_none()) {
                missing.push(format!("CSV header {key:?}"));
            }
        };
        macro_rules! columns {
            ($($list:expr),*) => {$(
                for c in $list {
                    check(c.title, Some(c.key), !c.csv_only);
                }
            )*};
        }
        columns!(
            super::super::pairs::PAIR_COLUMNS,
            super::super::csv::RUN_COLUMNS,
            super::super::load::LOAD_COLUMNS,
            super::super::load::SINK_COLUMNS,
            super::super::load::EMIT_COLUMNS,
            super::super::load::REQUEST_COLUMNS
        );
        for (title, _) in super::super::findings::FINDING_COLUMNS {
            check(title, None, true);
        }
        for p in crate::lab::preset::Preset::ALL {
            for c in super::super::preset::columns(p.as_str()) {
                check(c.0, None, true);
            }
        }
        assert!(missing.is_empty(), "not in the glossary: {missing:?}");
    }

    /// A title or a header defined twice would give a reader two meanings.
    #[test]
    fn each_title_and_header_is_defined_once() {
        let mut seen = std::collections::BTreeSet::new();
        for t in terms() {
            for name in t
                .titles
                .iter()
                .map(|n| format!("title {n}"))
                .chain(t.keys.iter().map(|k| format!("key {k}")))
            {
                assert!(seen.insert(name.clone()), "{name} is defined twice");
            }
            assert!(!t.titles.is_empty() || !t.keys.is_empty());
        }
    }

    /// docs/lab.md's "Columns" section is this glossary, word for word: edit the
    /// glossary, then paste what this test prints into docs/lab.md.
    #[test]
    fn the_readme_carries_the_glossary() {
        let readme = include_str!("../../../../docs/lab.md");
        let section = glossary_markdown();
        assert!(
            readme.contains(&section),
            "docs/lab.md's \"Columns\" section differs from export/glossary.rs; it should read:\n\n{section}"
        );
        for t in terms() {
            assert!(readme.contains(t.definition), "{}", column_name(t));
        }
    }

    #[test]
    fn the_terminal_text_is_wrapped_and_names_every_column() {
        let text = glossary_text();
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        for t in terms() {
            for name in t.titles.iter().chain(t.keys) {
                assert!(text.contains(name), "{name}");
            }
            assert!(text.contains(&wrap(t.definition, 74)[0]));
        }
        assert!(text.contains("  gen µs [gen_us]\n      Average time per request"));
    }

    #[test]
    fn a_page_gets_the_terms_of_its_own_columns() {
        let got: Vec<String> = terms_for(["p99 ms", "lost at stop", "nothing"])
            .into_iter()
            .map(column_name)
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("p50 ms, p99 ms") && got[1].starts_with("lost, lost at stop"));
    }
}
