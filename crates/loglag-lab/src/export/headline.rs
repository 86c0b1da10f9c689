//! The headline: the first lines `loglag lab` prints, the answer a run exists for, in
//! sentences with their numbers. Per sink: what logging costs at p99 and p50 against
//! the baseline (no logging), which condition takes it away and what that leaves
//! behind (backlog, drain, drops, lost), each statement with its finding's verdict and,
//! when inconclusive, its one reason. A pure function of the summary: every number is
//! a finding's or a pair's, nothing else.
//!
//! Which conditions speak for a sink: where a headline comparison ran
//! (`lab::findings`, json-sync against json-queue), its two sides; else the condition
//! that costs the most at p99 and the one that costs the least.

use crate::lab::findings::baseline_of;
use crate::report::{Finding, PairSummary, Percentile, Summary};

mod hops;
mod preset;

pub use hops::hops_headline;
pub use preset::preset_headline;

/// At most this many lines.
pub const MAX_LINES: usize = 12;
/// Each at most this many columns (characters: every one the headline writes is one
/// column wide).
pub const MAX_COLUMNS: usize = 80;

/// The headline of a lab's summary: at most [`MAX_LINES`] lines of at most
/// [`MAX_COLUMNS`] columns, without line breaks. Empty only for a summary with no run.
pub fn headline(s: &Summary) -> Vec<String> {
    if s.pairs.is_empty() {
        return Vec::new();
    }
    let base = baseline_of(s.params.plan.baseline.as_deref(), &s.params.plan.conditions);
    let mut sinks: Vec<&str> = Vec::new();
    for p in &s.pairs {
        if !sinks.contains(&p.sink.as_str()) {
            sinks.push(&p.sink);
        }
    }
    let statements: Vec<Statement> = sinks
        .iter()
        .flat_map(|sink| sink_statements(s, base.as_deref(), sink))
        .collect();
    let stops = stop_lines(s, &sinks);
    if statements.is_empty() {
        let mut lines = stops;
        lines.push(fit(match &base {
            Some(b) => {
                format!("nothing to compare: no condition ran beside the baseline ({b}) on a sink")
            }
            None => "nothing to compare: no baseline (none, or --baseline) ran".to_owned(),
        }));
        lines.truncate(MAX_LINES);
        return lines;
    }
    // Reasons on their own lines while the lines fit, in order; the rest beside
    // their verdicts, cut to the width.
    let inconclusive = |st: &Statement| matches!(st.verdict, Some(Verdict::Inconclusive(_)));
    let mut room = MAX_LINES.saturating_sub(statements.len());
    let mut lines: Vec<String> = Vec::new();
    for st in &statements {
        let below = inconclusive(st) && room > 0;
        if below {
            room -= 1;
        }
        lines.extend(st.lines(below));
    }
    lines.extend(stops);
    if lines.len() > MAX_LINES {
        lines.truncate(MAX_LINES - 1);
        lines.push("… the rest is in the findings below".to_owned());
    }
    lines
}

/// Where the API was stopped by a signal and its losses counted (an `--app`, or the
/// built-in API when asked): per sink, who lost records at the stop and who lost none.
fn stop_lines(s: &Summary, sinks: &[&str]) -> Vec<String> {
    let Some(signal) = &s.params.plan.stop_signal else {
        return Vec::new();
    };
    if s.pairs.iter().all(|p| p.metrics.lost_records.is_none()) {
        return Vec::new();
    }
    let rounds = if s.params.plan.rounds > 1 {
        format!(" ({} rounds, summed)", s.params.plan.rounds)
    } else {
        " (one round: each count is one draw)".to_owned()
    };
    let mut lines = Vec::new();
    for sink in sinks {
        let pairs: Vec<&PairSummary> = s.pairs.iter().filter(|p| p.sink == *sink).collect();
        let text = losses_at_stop(&signal.to_uppercase(), &pairs);
        lines.extend(wrapped(&format!("{sink} sink{rounds}, {text}"), "  "));
    }
    lines
}

/// One sentence: at the stop signal, who lost records (most first, with what each
/// dropped besides), who lost none, and how many were not counted.
pub(crate) fn losses_at_stop(signal: &str, pairs: &[&PairSummary]) -> String {
    let mut lost: Vec<(&PairSummary, i64)> = pairs
        .iter()
        .filter_map(|p| Some((*p, p.metrics.lost_records?)))
        .filter(|(_, n)| *n > 0)
        .collect();
    lost.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let none: Vec<&str> = pairs
        .iter()
        .filter(|p| p.metrics.lost_records == Some(0))
        .map(|p| p.condition.as_str())
        .collect();
    let unmeasured = pairs
        .iter()
        .filter(|p| p.metrics.lost_records.is_none())
        .count();
    let mut text = format!("at SIG{signal}: ");
    if lost.is_empty() {
        text.push_str("no condition lost a record");
    } else {
        let each: Vec<String> = lost
            .iter()
            .enumerate()
            .map(|(i, (p, n))| {
                let dropped = p
                    .metrics
                    .dropped
                    .filter(|&d| d > 0)
                    .map_or(String::new(), |d| {
                        format!(" (and dropped {})", thousands(d as i64))
                    });
                let records = if i == 0 { " records" } else { "" };
                format!("{} lost {}{records}{dropped}", p.condition, thousands(*n))
            })
            .collect();
        text.push_str(&each.join(", "));
        if !none.is_empty() {
            text.push_str(&format!("; {} lost none", and_list(&none)));
        }
    }
    if unmeasured > 0 {
        text.push_str(&format!("; {unmeasured} not counted"));
    }
    text
}

/// "a", "a and b", "a, b and c".
pub(crate) fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// One sentence of the headline and the verdict of the finding behind it.
struct Statement {
    text: String,
    verdict: Option<Verdict>,
}

enum Verdict {
    Holds,
    Inconclusive(String),
}

impl Statement {
    fn plain(text: String) -> Statement {
        Statement {
            text,
            verdict: None,
        }
    }

    fn judged(text: String, f: &Finding) -> Statement {
        Statement {
            text,
            verdict: Some(match &f.inconclusive {
                None => Verdict::Holds,
                Some(why) => Verdict::Inconclusive(short_reason(why)),
            }),
        }
    }

    /// Its lines: the reason of an inconclusive verdict below it (`reason_below`), or
    /// beside it.
    fn lines(&self, reason_below: bool) -> Vec<String> {
        match &self.verdict {
            None => vec![fit(self.text.clone())],
            Some(Verdict::Holds) => vec![fit(format!("{} — holds", self.text))],
            Some(Verdict::Inconclusive(why)) if reason_below => {
                let indent = self.text.len() - self.text.trim_start().len();
                vec![
                    fit(format!("{} — inconclusive", self.text)),
                    fit(format!("{:indent$}  ({why})", "")),
                ]
            }
            Some(Verdict::Inconclusive(why)) => {
                vec![fit(format!("{} — inconclusive: {why}", self.text))]
            }
        }
    }
}

/// A finding's reason, its first clause: up to the first ": " or ", " (the rest says
/// why that matters, which the findings table below keeps whole).
pub(crate) fn short_reason(why: &str) -> String {
    let cut = [": ", ", "]
        .iter()
        .filter_map(|sep| why.find(sep))
        .min()
        .unwrap_or(why.len());
    why[..cut].to_owned()
}

/// `text` in lines of at most [`MAX_COLUMNS`], broken between words, every line after
/// the first starting with `indent`. A word wider than a line is cut ([`fit`]).
fn wrapped(text: &str, indent: &str) -> Vec<String> {
    let body = text.trim_start();
    let mut lines = Vec::new();
    let mut line = text[..text.len() - body.len()].to_owned();
    // Nothing but indentation on the line yet.
    let mut fresh = true;
    for word in body.split(' ').filter(|w| !w.is_empty()) {
        if !fresh && line.chars().count() + 1 + word.chars().count() > MAX_COLUMNS {
            lines.push(fit(std::mem::replace(&mut line, indent.to_owned())));
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    if !fresh {
        lines.push(fit(line));
    }
    lines
}

/// `line`, cut to [`MAX_COLUMNS`] with an ellipsis when longer.
fn fit(line: String) -> String {
    if line.chars().count() <= MAX_COLUMNS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_COLUMNS - 1).collect();
    cut.push('…');
    cut
}

fn finding<'a>(
    s: &'a Summary,
    sink: &str,
    condition: &str,
    baseline: &str,
    percentile: Percentile,
) -> Option<&'a Finding> {
    s.findings.iter().find(|f| {
        f.sink == sink
            && f.condition == condition
            && f.baseline == baseline
            && f.percentile == percentile
    })
}

/// The conditions the headline speaks of on one sink: the chart under it draws them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speakers {
    pub sink: String,
    /// No logging (or `--baseline`), when it ran.
    pub baseline: Option<String>,
    /// The condition whose cost the headline states.
    pub costly: String,
    /// The one that takes it away (or costs the least).
    pub remedy: Option<String>,
}

/// Per sink, in the order they ran, the conditions [`headline`] speaks of.
pub fn speakers(s: &Summary) -> Vec<Speakers> {
    let base = baseline_of(s.params.plan.baseline.as_deref(), &s.params.plan.conditions);
    let mut sinks: Vec<&str> = Vec::new();
    for p in &s.pairs {
        if !sinks.contains(&p.sink.as_str()) {
            sinks.push(&p.sink);
        }
    }
    sinks
        .into_iter()
        .filter_map(|sink| {
            let (costly, remedy, _) = sides(s, base.as_deref(), sink)?;
            Some(Speakers {
                sink: sink.to_owned(),
                baseline: base.clone(),
                costly,
                remedy,
            })
        })
        .collect()
}

/// The costly condition of a sink, the one that takes its cost away (or costs the
/// least), and the finding that compares them directly when one ran.
fn sides<'a>(
    s: &'a Summary,
    base: Option<&str>,
    sink: &str,
) -> Option<(String, Option<String>, Option<&'a Finding>)> {
    let on_sink = |f: &&Finding| f.sink == sink && f.percentile == Percentile::P99;
    let against_base: Vec<&Finding> = s
        .findings
        .iter()
        .filter(on_sink)
        .filter(|f| Some(f.baseline.as_str()) == base)
        .collect();
    let direct = s
        .findings
        .iter()
        .filter(on_sink)
        .find(|f| Some(f.baseline.as_str()) != base);
    let by_cost = |a: &&&Finding, b: &&&Finding| a.difference_ms.total_cmp(&b.difference_ms);
    match direct {
        Some(d) => Some((d.condition.clone(), Some(d.baseline.clone()), Some(d))),
        None => {
            let most = against_base.iter().max_by(by_cost)?;
            let least = against_base
                .iter()
                .filter(|f| f.condition != most.condition)
                .min_by(by_cost);
            Some((
                most.condition.clone(),
                least.map(|f| f.condition.clone()),
                None,
            ))
        }
    }
}

/// The statements of one sink: its baseline's figures, the cost at p99 and p50, the
/// condition that takes it away, and what that leaves behind.
fn sink_statements(s: &Summary, base: Option<&str>, sink: &str) -> Vec<Statement> {
    let Some((costly, cheap, direct)) = sides(s, base, sink) else {
        return Vec::new();
    };
    let pair = |condition: &str| {
        s.pairs
            .iter()
            .find(|p| p.condition == condition && p.sink == sink)
    };
    let mut out = Vec::new();
    let base_figures = base.and_then(pair).and_then(|p| {
        let m = &p.metrics;
        Some(format!(
            "p50 {}, p99 {}",
            duration(m.p50_ms?),
            duration(m.p99_ms?)
        ))
    });
    out.push(Statement::plain(match (base, base_figures) {
        (Some("none"), Some(figures)) => format!("{sink} sink (without logging: {figures}):"),
        (Some(b), Some(figures)) => format!("{sink} sink (with {b}: {figures}):"),
        _ => format!("{sink} sink:"),
    }));
    let base_name = base.unwrap_or_default();
    let cost_99 = finding(s, sink, &costly, base_name, Percentile::P99);
    let cost_50 = finding(s, sink, &costly, base_name, Percentile::P50);
    match (cost_99, cost_50) {
        // One verdict for both: one line.
        (Some(f99), Some(f50))
            if f99.inconclusive.as_deref().map(short_reason)
                == f50.inconclusive.as_deref().map(short_reason) =>
        {
            out.push(Statement::judged(
                format!(
                    "  {costly} {} at p99, {} at p50",
                    costs(f99.difference_ms),
                    costs_again(f99.difference_ms, f50.difference_ms)
                ),
                f99,
            ));
        }
        (f99, f50) => {
            let mut first = true;
            for (f, at) in [(f99, "p99"), (f50, "p50")] {
                let Some(f) = f else { continue };
                let who = if first { costly.as_str() } else { "and" };
                first = false;
                out.push(Statement::judged(
                    format!("  {who} {} at {at}", costs(f.difference_ms)),
                    f,
                ));
            }
        }
    }
    let Some(cheap) = cheap else {
        return out;
    };
    match direct {
        Some(d) => {
            // `d` is costly against cheap: its difference is what cheap takes away.
            let takes_away = d.difference_ms > 0.0
                && d.inconclusive.is_none()
                && cost_99.is_some_and(|f| f.inconclusive.is_none() && f.difference_ms > 0.0);
            let text = if takes_away {
                format!(
                    "  {cheap} takes it away: p99 {} ({} less)",
                    duration(d.baseline_ms),
                    duration(d.difference_ms)
                )
            } else {
                format!(
                    "  {cheap}: p99 {} against {costly}'s {}",
                    duration(d.baseline_ms),
                    duration(d.value_ms)
                )
            };
            out.push(Statement::judged(text, d));
        }
        None => {
            if let Some(f) = finding(s, sink, &cheap, base_name, Percentile::P99) {
                out.push(Statement::judged(
                    format!("  least costly, {cheap}: {} at p99", costs(f.difference_ms)),
                    f,
                ));
            }
        }
    }
    if let Some(p) = pair(&cheap) {
        out.push(Statement::plain(format!(
            "    and leaves {}",
            left_behind(p)
        )));
    }
    out
}

/// The p50's cost after the p99's: "44.4 ms", or "is 0.2 ms faster" when they differ
/// in sign.
fn costs_again(first_ms: f64, difference_ms: f64) -> String {
    if (first_ms >= 0.0) == (difference_ms >= 0.0) {
        duration(difference_ms.abs())
    } else {
        costs(difference_ms)
    }
}

/// "costs 1.87 s" or "is 0.12 ms faster".
fn costs(difference_ms: f64) -> String {
    if difference_ms >= 0.0 {
        format!("costs {}", duration(difference_ms))
    } else {
        format!("is {} faster", duration(-difference_ms))
    }
}

/// What a pair leaves after its last response: backlog, drain, drops, losses, as far
/// as they were measured.
fn left_behind(p: &PairSummary) -> String {
    let m = &p.metrics;
    let mut parts = Vec::new();
    if let Some(kib) = m.max_backlog_kib {
        parts.push(format!("{} of backlog", size_kib(kib)));
    }
    parts.push(format!("{} of drain", duration(m.drain_s * 1e3)));
    if let Some(d) = m.dropped {
        parts.push(format!("{} dropped", thousands(d as i64)));
    }
    if let Some(l) = m.lost_records {
        parts.push(format!("{} lost", thousands(l)));
    }
    parts.join(", ")
}

/// A duration given in ms, three figures in a unit that suits it: µs under 0.1 ms, ms
/// under a second, s above (with thousands separators past 1,000 s).
pub(crate) fn duration(ms: f64) -> String {
    let a = ms.abs();
    if a == 0.0 {
        "0 s".to_owned()
    } else if a < 0.1 {
        format!("{} µs", figures(ms * 1e3))
    } else if a < 1000.0 {
        format!("{} ms", figures(ms))
    } else {
        format!("{} s", figures(ms / 1e3))
    }
}

/// A size in KiB: KiB under 1 MiB, else MiB or GiB to three figures.
pub(crate) fn size_kib(kib: f64) -> String {
    if kib < 1024.0 {
        format!("{} KiB", thousands(kib.round() as i64))
    } else if kib < 1024.0 * 1024.0 {
        format!("{} MiB", figures(kib / 1024.0))
    } else {
        format!("{} GiB", figures(kib / (1024.0 * 1024.0)))
    }
}

/// Three significant figures (whole numbers past 100, with thousands separators).
fn figures(v: f64) -> String {
    if v.abs() >= 100.0 {
        thousands(v.round() as i64)
    } else {
        crate::export::findings::three_figures(v)
    }
}

/// An integer with thousands separators: 13,679.
pub(crate) fn thousands(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real run's summary (none, json-sync and json-queue on both sinks, 40
    /// requests each), read back with its requests as `loglag report` reads it, its
    /// findings computed from them.
    fn fixture() -> Summary {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lab");
        let s = crate::html::load_dir(&dir).unwrap();
        assert!(!s.findings.is_empty());
        s
    }

    /// A run that stopped its API by a signal says per sink who lost records at the
    /// stop, most first, and who lost none; without a stop signal, nothing of the kind.
    #[test]
    fn a_stopped_run_states_its_losses_per_sink() {
        let mut s = fixture();
        assert!(!headline(&s).iter().any(|l| l.contains("at SIG")));
        s.params.plan.stop_signal = Some("kill".into());
        s.params.plan.rounds = 3;
        for p in &mut s.pairs {
            p.metrics.lost_records = Some(match (p.condition.as_str(), p.sink.as_str()) {
                ("json-queue", "slow") => 63,
                ("json-sync", "slow") => 1_200,
                _ => 0,
            });
        }
        let lines = headline(&s);
        // Wrapped lines read as one text.
        let text = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("slow sink (3 rounds, summed), at SIGKILL: json-sync lost 1,200 records, json-queue lost 63; none lost none"),
            "{text}"
        );
        assert!(
            text.contains("fast sink (3 rounds, summed), at SIGKILL: no condition lost a record"),
            "{text}"
        );
        assert!(lines.len() <= MAX_LINES);
        assert!(
            lines.iter().all(|l| l.chars().count() <= MAX_COLUMNS),
            "{text}"
        );
    }

    /// Wrapping breaks between words, keeps the first line's indentation and
    /// indents the rest; a word wider than the line is cut.
    #[test]
    fn wrapped_lines_break_between_words_within_the_width() {
        let text = format!("  {}", "abcde ".repeat(30));
        let lines = wrapped(&text, "    ");
        assert!(lines.len() > 1);
        assert!(lines[0].starts_with("  abcde"), "{lines:?}");
        for l in &lines[1..] {
            assert!(l.starts_with("    abcde"), "{l:?}");
        }
        for l in &lines {
            assert!(
                l.chars().count() <= MAX_COLUMNS && !l.ends_with(' '),
                "{l:?}"
            );
        }
        let words: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
        assert_eq!(words, 30, "no word lost");
        let long = wrapped(&"x".repeat(200), "  ");
        assert_eq!(long.len(), 1);
        assert!(long[0].ends_with('…'));
    }

    fn assert_fits(lines: &[String]) {
        assert!(lines.len() <= MAX_LINES, "{lines:#?}");
        for l in lines {
            assert!(l.chars().count() <= MAX_COLUMNS, "{l:?} is too wide");
            assert!(!l.contains('\n'), "{l:?}");
        }
    }

    #[test]
    fn the_headline_states_each_sinks_cost_remedy_and_leftovers_with_verdicts() {
        let s = fixture();
        let lines = headline(&s);
        assert_fits(&lines);
        insta::assert_snapshot!(lines.join("\n"));
    }

    /// The chart under the headline draws the conditions its sentences name: per sink
    /// the baseline, json-sync (the cost) and json-queue (its remedy); and names
    /// follow the findings when another pair is compared.
    #[test]
    fn the_chart_draws_the_conditions_the_sentences_name() {
        let mut s = fixture();
        let named = speakers(&s);
        assert_eq!(named.len(), 2, "{named:?}");
        for sp in &named {
            assert_eq!(sp.baseline.as_deref(), Some("none"));
            assert_eq!(sp.costly, "json-sync");
            assert_eq!(sp.remedy.as_deref(), Some("json-queue"));
            let lines = headline(&s).join("\n");
            assert!(lines.contains(&format!("{} sink", sp.sink)), "{lines}");
        }
        // Without the direct comparison, the costliest and the cheapest against the
        // baseline speak.
        s.findings.retain(|f| f.baseline == "none");
        for sp in speakers(&s) {
            let cost = |c: &str| {
                s.findings
                    .iter()
                    .find(|f| {
                        f.sink == sp.sink && f.condition == c && f.percentile == Percentile::P99
                    })
                    .unwrap()
                    .difference_ms
            };
            assert!(
                cost(&sp.costly) >= cost(sp.remedy.as_deref().unwrap()),
                "{sp:?}"
            );
        }
    }

    /// Every number comes from the summary: change a finding and its line changes.
    #[test]
    fn the_headline_takes_its_numbers_and_verdicts_from_the_findings() {
        let mut s = fixture();
        let f = s
            .findings
            .iter_mut()
            .find(|f| {
                f.condition == "json-sync"
                    && f.baseline == "none"
                    && f.sink == "slow"
                    && f.percentile == Percentile::P99
            })
            .unwrap();
        f.difference_ms = 1874.0;
        f.inconclusive =
            Some("the rounds disagree: their own differences run from 1 to 2 ms".into());
        let q = s
            .pairs
            .iter_mut()
            .find(|p| p.condition == "json-queue" && p.sink == "slow")
            .unwrap();
        q.metrics.max_backlog_kib = Some(2048.0);
        q.metrics.dropped = Some(13_679);
        let lines = headline(&s);
        assert_fits(&lines);
        let text = lines.join("\n");
        assert!(
            text.contains(
                "slow sink (without logging: p50 1.12 ms, p99 1.73 ms):\n  json-sync costs 1.87 s at p99 — inconclusive\n    (the rounds disagree)\n  and costs 44.4 ms at p50 — holds"
            ),
            "{text}"
        );
        assert!(text.contains("and leaves 2.00 MiB of backlog"), "{text}");
        assert!(text.contains("13,679 dropped"), "{text}");
        // The cost did not hold, so the queue does not "take it away": it is compared.
        assert!(
            text.contains("  json-queue: p99 2.70 ms against json-sync's"),
            "{text}"
        );
    }

    /// Many sinks and long names still fit: reasons move beside their verdicts, then
    /// lines are cut, and the headline says the rest is below.
    #[test]
    fn the_headline_never_exceeds_twelve_lines_of_eighty_columns() {
        let mut s = fixture();
        let long = "the machine was busy and the runs waited 123 ms for a CPU at p99's scale, half the difference (4.00 ms) or more: that could account for it";
        for f in &mut s.findings {
            f.inconclusive = Some(long.into());
        }
        for extra in ["slow-disk", "fourth", "fifth"] {
            let more: Vec<Finding> = s
                .findings
                .iter()
                .filter(|f| f.sink == "slow")
                .map(|f| Finding {
                    sink: extra.into(),
                    condition: format!("{}-with-a-rather-long-application-name", f.condition),
                    ..f.clone()
                })
                .collect();
            s.findings.extend(more);
            let pairs: Vec<PairSummary> = s
                .pairs
                .iter()
                .filter(|p| p.sink == "slow")
                .map(|p| PairSummary {
                    sink: extra.into(),
                    ..p.clone()
                })
                .collect();
            s.pairs.extend(pairs);
        }
        let lines = headline(&s);
        assert_fits(&lines);
        assert_eq!(lines.len(), MAX_LINES, "{lines:#?}");
        assert_eq!(lines.last().unwrap(), "… the rest is in the findings below");
        // No room for the reasons' own lines: each beside its verdict, cut to fit.
        assert!(
            lines[1].starts_with("  json-sync costs 46.1 µs at p99") && lines[1].ends_with('…'),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_run_with_nothing_to_compare_says_so_in_one_line() {
        let mut s = fixture();
        s.findings.clear();
        assert_eq!(
            headline(&s),
            ["nothing to compare: no condition ran beside the baseline (none) on a sink"]
        );
    }

    #[test]
    fn numbers_carry_thousands_separators_and_units_that_suit_them() {
        assert_eq!(thousands(1_874_000), "1,874,000");
        assert_eq!(thousands(-13_679), "-13,679");
        assert_eq!(thousands(544), "544");
        assert_eq!(duration(0.501), "0.501 ms");
        assert_eq!(duration(4.69), "4.69 ms");
        assert_eq!(duration(831.0), "831 ms");
        assert_eq!(duration(1874.0), "1.87 s");
        assert_eq!(duration(2_140_000.0), "2,140 s");
        assert_eq!(duration(0.045), "45.0 µs");
        assert_eq!(size_kib(544.0), "544 KiB");
        assert_eq!(size_kib(1584.0), "1.55 MiB");
        assert_eq!(
            short_reason("the generator was 23.5 ms late at p99 in json-queue: 0.470 ms at p50's scale, half the difference (0.266 ms) or more"),
            "the generator was 23.5 ms late at p99 in json-queue"
        );
    }
}
