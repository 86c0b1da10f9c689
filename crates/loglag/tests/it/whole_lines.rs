//! Records are lines: `write!` and `writeln!` through `NonBlocking` gather into one
//! record per line, and under drops and size rotation every line on disk is whole and
//! written once or counted as dropped.
//! Every wait is bounded by `support::within`.

use crate::support;

use std::io::Write;
use std::time::Duration;

use loglag::{Mode, NonBlockingBuilder, Overflow};
use support::{within, Behaviour, TestSink};

const LIMIT: Duration = Duration::from_secs(120);

/// `writeln!` with several arguments is several `write` calls: they make one record.
#[test]
fn writeln_makes_one_record_per_line() {
    within(LIMIT, "writeln", || {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (mut writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .build(sink)
            .unwrap();
        let n = 10_000u64;
        for seq in 0..n {
            let part = "part";
            writeln!(writer, "seq={seq} {part} {}", seq * 3).unwrap();
        }
        // `write!` then a plain write of the newline: one record too.
        write!(writer, "seq={n} part").unwrap();
        writer
            .write_all(format!(" {}\n", n * 3).as_bytes())
            .unwrap();
        // A plain write is a record of its own, newline or not (tracing-appender's).
        writer.write_all(b"plain").unwrap();
        // A line without its newline goes out on flush.
        write!(writer, "no newline").unwrap();
        std::io::Write::flush(&mut writer).unwrap();
        let m = guard.shutdown();
        assert_eq!(m.accepted, n + 3, "one record per line");
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(lines.len() as u64, n + 2);
        for (seq, line) in lines.iter().take(n as usize + 1).enumerate() {
            assert_eq!(*line, format!("seq={seq} part {}\n", seq * 3));
        }
        assert_eq!(
            lines[n as usize + 1],
            "plainno newline",
            "two records, no newline in either"
        );
    });
}

/// Under drops and size rotation, every line on disk is whole, rotated files begin
/// with a line, and each line is written exactly once or counted as dropped.
#[cfg(feature = "rolling")]
#[test]
fn lines_stay_whole_under_drops_and_rotation() {
    within(LIMIT, "whole lines", || {
        let dir = tempfile::tempdir().unwrap();
        let appender = loglag::rolling::Builder::new()
            .filename_prefix("app.log")
            .max_file_size(1 << 10)
            .build(dir.path())
            .unwrap();
        let (mut writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::DropNewest)
            .capacity_bytes(8 << 10)
            // Batches smaller than a file: whatever the timing, the 8 KiB accepted
            // before the first drop are written in several batches, so files rotate.
            .batch_bytes(512)
            .build(appender)
            .unwrap();
        let n = 40_000u64;
        for seq in 0..n {
            // Three writes per line, as `writeln!` does with arguments.
            write!(writer, "seq={seq} ").unwrap();
            write!(writer, "{}", "y".repeat(30)).unwrap();
            writeln!(writer).unwrap();
        }
        let m = guard.shutdown();
        assert_eq!(m.accepted, n);
        assert_eq!(m.written_records + m.dropped_records(), n, "{m:?}");
        let mut seen = vec![false; n as usize];
        let mut files = 0;
        for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
            files += 1;
            let text = String::from_utf8(std::fs::read(e.path()).unwrap()).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{:?} ends mid-line",
                e.path()
            );
            for line in text.lines() {
                if line.contains(" WARN loglag: dropped ") {
                    continue; // the in-band report, between whole lines
                }
                let (head, tail) = line.split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
                assert_eq!(tail, "y".repeat(30), "a whole line: {line:?}");
                let seq: usize = head.strip_prefix("seq=").unwrap().parse().unwrap();
                assert!(!seen[seq], "seq {seq} twice");
                seen[seq] = true;
            }
        }
        assert!(files > 1, "it rotated");
        let written = seen.iter().filter(|s| **s).count() as u64;
        assert_eq!(written, m.written_records, "every written line is on disk");
    });
}
