//! The headline of a preset: what its steps show, in sentences with their numbers,
//! before its table. Buffers: what each condition lost at each stop signal, and which
//! lost nothing; blocking: at each concurrency, the condition that served the most and
//! the one that served the least; sweep: the grid point its verdict favours, or why
//! it favours none.

use super::{duration, losses_at_stop, thousands, wrapped, MAX_LINES};
use crate::report::{PairSummary, PresetRow, PresetSummary};

/// At most [`MAX_LINES`] lines of at most [`super::MAX_COLUMNS`] columns. Empty for a
/// preset with no row.
pub fn preset_headline(s: &PresetSummary) -> Vec<String> {
    if s.rows.is_empty() {
        return Vec::new();
    }
    let mut lines = match s.preset.as_str() {
        "buffers" => buffers(s),
        "blocking" => blocking(s),
        _ => s
            .verdict
            .as_deref()
            .map_or_else(Vec::new, |v| wrapped(&format!("{}: {v}", s.preset), "  ")),
    };
    let flagged: Vec<&PresetRow> = s
        .rows
        .iter()
        .filter(|r| crate::lab::preset::flagged(r).is_some())
        .collect();
    if s.preset != "sweep" && !flagged.is_empty() {
        // The sweep's verdict names its flagged points itself.
        lines.extend(wrapped(
            &format!(
                "  {} of {} rows were measured under conditions that cannot carry a comparison: see the notes",
                flagged.len(),
                s.rows.len()
            ),
            "    ",
        ));
    }
    if lines.len() > MAX_LINES {
        lines.truncate(MAX_LINES - 1);
        lines.push("… the rest is in the table below".to_owned());
    }
    lines
}

/// The steps' labels in the order they ran, each with its rows.
fn steps(s: &PresetSummary) -> Vec<(&str, Vec<&PresetRow>)> {
    s.steps
        .iter()
        .map(|step| {
            (
                step.as_str(),
                s.rows.iter().filter(|r| &r.step == step).collect(),
            )
        })
        .filter(|(_, rows): &(&str, Vec<&PresetRow>)| !rows.is_empty())
        .collect()
}

/// Per stop signal: who lost records at the stop (most first, with what each dropped
/// besides), and who lost none.
fn buffers(s: &PresetSummary) -> Vec<String> {
    let mut lines = wrapped(
        &format!(
            "buffers: records lost when the API is stopped{}",
            if s.rows.iter().all(|r| r.pair.runs <= 1) {
                " (one round: each count is one draw)"
            } else {
                ""
            }
        ),
        "  ",
    );
    for (_, rows) in steps(s) {
        let signal = rows[0].stop_signal.to_uppercase();
        let pairs: Vec<&PairSummary> = rows.iter().map(|r| &r.pair).collect();
        let text = losses_at_stop(&signal, &pairs);
        lines.extend(wrapped(&format!("  {text}"), "    "));
    }
    lines
}

/// Per concurrency: the condition that served the most requests per second and the
/// one that served the least, each with its p99.
fn blocking(s: &PresetSummary) -> Vec<String> {
    let mut lines =
        vec!["blocking: what each way of writing the log lets a server serve".to_owned()];
    for (step, rows) in steps(s) {
        let by_rps = |a: &&&PresetRow, b: &&&PresetRow| {
            a.pair.metrics.rps_api.total_cmp(&b.pair.metrics.rps_api)
        };
        let (Some(most), Some(least)) = (rows.iter().max_by(by_rps), rows.iter().min_by(by_rps))
        else {
            continue;
        };
        let served = |r: &PresetRow| {
            format!(
                "{} {} req/s{}",
                r.pair.condition,
                thousands(r.pair.metrics.rps_api.round() as i64),
                r.pair
                    .metrics
                    .p99_ms
                    .map_or(String::new(), |p| format!(" (p99 {})", duration(p)))
            )
        };
        let clients = rows[0].closed.map_or_else(
            || step.to_owned(),
            |n| format!("{} clients", thousands(n as i64)),
        );
        let text = if most.pair.condition == least.pair.condition {
            format!("at {clients}: {}", served(most))
        } else {
            format!(
                "at {clients}: most, {}; least, {}",
                served(most),
                served(least)
            )
        };
        lines.extend(wrapped(&format!("  {text}"), "    "));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PresetSummary {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn assert_fits(lines: &[String]) {
        assert!(!lines.is_empty());
        assert!(lines.len() <= MAX_LINES, "{lines:#?}");
        for l in lines {
            assert!(
                l.chars().count() <= super::super::MAX_COLUMNS,
                "{l:?} is too wide"
            );
        }
    }

    /// The lines as one text, so that a sentence can be found across its wraps.
    fn joined(lines: &[String]) -> String {
        lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
    }

    /// The buffers preset's headline says, per stop signal, who lost how many
    /// records (most first) and who lost none; every count is the row's own.
    #[test]
    fn the_buffers_headline_counts_each_conditions_loss_per_signal() {
        let s = fixture("buffers-preset.json");
        let lines = preset_headline(&s);
        assert_fits(&lines);
        let text = joined(&lines);
        assert!(
            text.contains("at SIGTERM: no condition lost a record"),
            "{text}"
        );
        assert!(
            text.contains("at SIGKILL: memory-buffer-200 lost 146 records"),
            "{text}"
        );
        assert!(
            text.contains("queue-memory-100 lost 66 (and dropped 416)"),
            "{text}"
        );
        assert!(
            text.contains("file-sync, loglag and loglag-spool lost none"),
            "{text}"
        );
        insta::assert_snapshot!(lines.join("\n"));
    }

    /// The blocking preset's headline names, per concurrency, the condition that
    /// served the most and the least.
    #[test]
    fn the_blocking_headline_names_the_most_and_least_served_per_concurrency() {
        let s = fixture("blocking-preset.json");
        let lines = preset_headline(&s);
        assert_fits(&lines);
        let text = joined(&lines);
        assert!(
            text.contains("at 500 clients: most, loglag 50,418 req/s (p99 21.3 ms); least,"),
            "{text}"
        );
        assert!(text.contains("tokio-fs 13,423 req/s"), "{text}");
        insta::assert_snapshot!(lines.join("\n"));
    }

    /// The sweep's headline is its verdict, wrapped to the width; a verdict too long
    /// for twelve lines says where the rest is.
    #[test]
    fn the_sweep_headline_is_its_verdict_wrapped() {
        let mut s = fixture("sweep-preset.json");
        let lines = preset_headline(&s);
        assert_fits(&lines);
        assert!(
            lines[0].starts_with("sweep: Inconclusive: 2 of 16 points"),
            "{lines:#?}"
        );
        s.verdict = Some("word ".repeat(400));
        let lines = preset_headline(&s);
        assert_fits(&lines);
        assert_eq!(lines.last().unwrap(), "… the rest is in the table below");
    }
}
