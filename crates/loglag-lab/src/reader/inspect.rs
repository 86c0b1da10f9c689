//! Reading the lines themselves, when a run asks for more than bytes and a hash: which
//! request ids appear (to place a loss in time), whether a sequence field ever goes
//! backwards (to prove a buffer writes in order), and how many ERROR lines arrived.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What to look for in each line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InspectConfig {
    /// Count the lines of each request id (`id=N`, `request_id=N`, `"request_id":"N"`).
    pub request_ids: bool,
    /// Check that `seq=N` / `"seq":N` never goes backwards, and count ERROR lines.
    pub order: bool,
}

impl InspectConfig {
    pub fn any(&self) -> bool {
        self.request_ids || self.order
    }
}

/// What the lines said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineFindings {
    /// Lines per request id, in id order.
    pub id_lines: BTreeMap<u64, u32>,
    /// Lines with no recognisable request id (only counted when ids are looked for).
    pub lines_without_id: u64,
    /// Lines carrying a sequence number, and how many of them had a smaller one than a
    /// line before them.
    pub sequenced_lines: u64,
    pub out_of_order: u64,
    /// Lines with the level ERROR.
    pub error_lines: u64,
}

/// Longest line kept whole; the rest of a longer line is skipped (its id, if any, is
/// near the start in every format the lab knows).
const MAX_LINE: usize = 64 << 10;

/// Splits a byte stream into lines across reads and inspects each.
#[derive(Debug, Default)]
pub struct LineInspector {
    config: InspectConfig,
    partial: Vec<u8>,
    overlong: bool,
    last_seq: Option<u64>,
    pub findings: LineFindings,
}

impl LineInspector {
    pub fn new(config: InspectConfig) -> LineInspector {
        LineInspector {
            config,
            ..LineInspector::default()
        }
    }

    /// Feeds the next bytes of the stream.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        while let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() && !self.overlong {
                self.line(&chunk[..end]);
            } else {
                self.keep(&chunk[..end]);
                let line = std::mem::take(&mut self.partial);
                self.line(&line);
                self.partial = line;
                self.partial.clear();
                self.overlong = false;
            }
            chunk = &chunk[end + 1..];
        }
        self.keep(chunk);
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        if bytes.len() > room {
            self.overlong = true;
        }
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn line(&mut self, line: &[u8]) {
        if self.config.request_ids {
            match field_number(line, b"id", true) {
                Some(id) => *self.findings.id_lines.entry(id).or_default() += 1,
                None => self.findings.lines_without_id += 1,
            }
        }
        if self.config.order {
            if let Some(seq) = field_number(line, b"seq", false) {
                self.findings.sequenced_lines += 1;
                if self.last_seq.is_some_and(|last| seq < last) {
                    self.findings.out_of_order += 1;
                }
                self.last_seq = Some(self.last_seq.map_or(seq, |last| last.max(seq)));
            }
            if contains(line, b"ERROR") {
                self.findings.error_lines += 1;
            }
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The number after the first `KEY=`, `"KEY":` or `"KEY": "` in `line`. With
/// `suffix`, the key may also end a longer name joined by `_` or `-` (`request_id`,
/// `x-request-id`), but not a word (`pid`, `uuid`).
fn field_number(line: &[u8], key: &[u8], suffix: bool) -> Option<u64> {
    let mut from = 0;
    while let Some(at) = line[from..]
        .windows(key.len())
        .position(|w| w == key)
        .map(|p| p + from)
    {
        from = at + 1;
        let before = at.checked_sub(1).map(|i| line[i]);
        let starts_name = match before {
            None => true,
            Some(b) if b.is_ascii_alphanumeric() => false,
            Some(b'_' | b'-') => suffix,
            Some(_) => true,
        };
        if !starts_name {
            continue;
        }
        let mut rest = &line[at + key.len()..];
        rest = match rest {
            [b'=', tail @ ..] => tail,
            [b'"', b':', tail @ ..] => tail,
            _ => continue,
        };
        while let [b' ' | b'"', tail @ ..] = rest {
            rest = tail;
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 19 {
            continue;
        }
        return std::str::from_utf8(&rest[..digits]).ok()?.parse().ok();
    }
    None
}

pub use crate::report::IdMatch;

/// [`IdMatch::placement`] where no line is expected per request, so no id is either.
pub const NO_LINE_EXPECTED: &str =
    "not applicable: the condition is expected to log no line per request";

/// [`IdMatch::placement`] where lines were read but none carries a request id (the
/// built-in conditions' fixed lines, or an app that does not log ids).
pub const NO_ID_LOGGED: &str = "not applicable: no line of the log carries a request id";

impl IdMatch {
    /// Matches the ids of `served` requests (ascending) against what the log held. A
    /// condition expected to log no line per request (`--expect-lines NAME=0`, the
    /// built-in `none`) has no ids to match, and neither has a log whose lines carry
    /// none (`short1`'s fixed line): nothing is missing, and the placement says the
    /// match does not apply. Their lines are verified by their count all the same, so
    /// a loss is still reported there.
    pub fn of(served: &[u64], findings: &LineFindings, expect: Option<u32>) -> IdMatch {
        let unknown_ids = findings
            .id_lines
            .iter()
            .filter(|(id, _)| served.binary_search(id).is_err())
            .map(|(_, &n)| u64::from(n))
            .sum();
        let not_applicable = if expect == Some(0) {
            Some(NO_LINE_EXPECTED)
        } else if findings.id_lines.is_empty() && findings.lines_without_id > 0 {
            Some(NO_ID_LOGGED)
        } else {
            None
        };
        if let Some(why) = not_applicable {
            return IdMatch {
                placement: why.to_owned(),
                unknown_ids,
                ..IdMatch::default()
            };
        }
        let mut short = Vec::new();
        let mut missing = 0;
        for id in served {
            let lines = findings.id_lines.get(id).copied().unwrap_or(0);
            if lines == 0 {
                missing += 1;
            }
            if lines == 0 || expect.is_some_and(|e| lines < e) {
                short.push(*id);
            }
        }
        // The loss is "at the end" when every served request after the first short one
        // is short too: what a buffer held when the process stopped.
        let placement = match short.first() {
            None => "none".to_owned(),
            Some(first) => {
                let after = served.len() - served.partition_point(|id| id < first);
                if after == short.len() {
                    format!("the last {} requests before the stop", short.len())
                } else {
                    format!(
                        "scattered: {} of the {after} requests from id {first} on",
                        short.len()
                    )
                }
            }
        };
        IdMatch {
            missing,
            incomplete: short.len() as u64 - missing,
            first: short.iter().take(10).copied().collect(),
            placement,
            unknown_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_ids_in_the_formats_apps_write() {
        for (line, id) in [
            (&b"INFO request done id=42 status=200"[..], Some(42)),
            (
                b"{\"ts\":1,\"request_id\":\"000000000007\",\"x\":1}",
                Some(7),
            ),
            (b"{\"request_id\": 9}", Some(9)),
            (b"x-request-id=12 pid=3", Some(12)),
            (b"pid=3 uuid=4", None),
            (b"id=abc", None),
            (b"no id here", None),
        ] {
            assert_eq!(
                field_number(line, b"id", true),
                id,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(field_number(b"a seq=5 b", b"seq", false), Some(5));
        assert_eq!(field_number(b"a subseq=5", b"seq", false), None);
    }

    #[test]
    fn splits_lines_across_reads_and_checks_order() {
        let text = b"seq=1 id=0 INFO\nseq=2 id=0 DEBUG\nseq=4 id=1 ERROR\nseq=3 id=1 INFO\n";
        for split in 1..text.len() {
            let mut i = LineInspector::new(InspectConfig {
                request_ids: true,
                order: true,
            });
            i.feed(&text[..split]);
            i.feed(&text[split..]);
            assert_eq!(i.findings.id_lines, BTreeMap::from([(0, 2), (1, 2)]));
            assert_eq!(i.findings.sequenced_lines, 4);
            assert_eq!(i.findings.out_of_order, 1, "seq 3 after 4");
            assert_eq!(i.findings.error_lines, 1);
        }
    }

    #[test]
    fn an_overlong_line_is_skipped_past_without_growing() {
        let mut i = LineInspector::new(InspectConfig {
            request_ids: true,
            order: false,
        });
        let mut long = b"id=5 ".to_vec();
        long.resize(3 * MAX_LINE, b'x');
        long.push(b'\n');
        for chunk in long.chunks(4096) {
            i.feed(chunk);
            assert!(i.partial.len() <= MAX_LINE);
        }
        i.feed(b"id=6\n");
        assert_eq!(i.findings.id_lines, BTreeMap::from([(5, 1), (6, 1)]));
    }

    #[test]
    fn places_a_loss_at_the_end_or_scattered() {
        let served: Vec<u64> = (0..10).collect();
        let mut f = LineFindings::default();
        for id in 0..7 {
            f.id_lines.insert(id, 3);
        }
        f.id_lines.insert(7, 1);
        f.id_lines.insert(99, 1);
        let m = IdMatch::of(&served, &f, Some(3));
        assert_eq!((m.missing, m.incomplete), (2, 1));
        assert_eq!(m.first, vec![7, 8, 9]);
        assert_eq!(m.placement, "the last 3 requests before the stop");
        assert_eq!(m.unknown_ids, 1);
        f.id_lines.remove(&2);
        let m = IdMatch::of(&served, &f, Some(3));
        assert!(
            m.placement.starts_with("scattered: 4 of the 8"),
            "{}",
            m.placement
        );
        f.id_lines.extend((0..10).map(|id| (id, 3)));
        assert_eq!(IdMatch::of(&served, &f, Some(3)).placement, "none");
    }

    /// `--expect-lines none=0`: a log with no lines is what was expected, so no id is
    /// missing (it said "82 ids missing, the last 82 requests before the stop").
    #[test]
    fn a_condition_expected_to_log_nothing_has_no_ids_to_match() {
        let served: Vec<u64> = (0..82).collect();
        let m = IdMatch::of(&served, &LineFindings::default(), Some(0));
        assert_eq!((m.missing, m.incomplete, m.first.len()), (0, 0, 0));
        assert_eq!(m.placement, NO_LINE_EXPECTED);
        // A stray line with an id nobody sent still counts as unknown.
        let mut f = LineFindings::default();
        f.id_lines.insert(999, 1);
        assert_eq!(IdMatch::of(&served, &f, Some(0)).unknown_ids, 1);
        // One line expected: the same empty log misses every id.
        let m = IdMatch::of(&served, &LineFindings::default(), Some(1));
        assert_eq!(m.missing, 82);
        assert_eq!(m.placement, "the last 82 requests before the stop");
        // Lines that carry no id at all (`short1`'s fixed line) have none to miss.
        let fixed = LineFindings {
            lines_without_id: 80,
            ..LineFindings::default()
        };
        let m = IdMatch::of(&served, &fixed, Some(1));
        assert_eq!((m.missing, m.placement.as_str()), (0, NO_ID_LOGGED));
    }
}
