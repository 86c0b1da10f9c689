//! The headline of `lab hops`: what one service boundary costs a request at p50 and
//! p99 (the tax, services − monolith), each with its verdict and its one reason when
//! inconclusive; what tracing cost; and, with `--sweep`, where each topology stopped
//! keeping up.

use super::{duration, fit, short_reason, thousands, wrapped, MAX_LINES};
use crate::report::{HopsSummary, TaxRow};

/// At most [`MAX_LINES`] lines of at most [`super::MAX_COLUMNS`] columns. Empty when
/// nothing finished.
pub fn hops_headline(s: &HopsSummary) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(interrupted) = &s.interrupted {
        lines.push(fit(format!("incomplete: {interrupted}")));
    }
    let row = |at: &str| s.tax.iter().find(|t| t.at == at);
    let taxes: Vec<&TaxRow> = ["p50", "p99"].into_iter().filter_map(row).collect();
    if !taxes.is_empty() {
        lines.push("the hop (three services against one process, same work):".to_owned());
        for t in taxes {
            lines.extend(wrapped(&tax_line(t), "    "));
        }
    }
    for c in &s.tracing_cost {
        let judged = |ms: f64, ci: (f64, f64)| {
            let verdict = if ci.0 <= 0.0 && ci.1 >= 0.0 {
                "inconclusive: within the noise"
            } else if ci.1 < 0.0 {
                "inconclusive: the runs drifted apart"
            } else {
                "holds"
            };
            format!("{} ({verdict})", signed(ms))
        };
        lines.extend(wrapped(
            &format!(
                "tracing ({}): p50 {}, p99 {}",
                c.topology,
                judged(c.p50_ms, c.p50_ci_ms),
                judged(c.p99_ms, c.p99_ci_ms)
            ),
            "  ",
        ));
    }
    if let Some(sweep) = &s.sweep {
        for k in &sweep.knees {
            let text = match (k.knee_rps, &k.inconclusive) {
                (Some(r), None) => format!(
                    "{} stops keeping up at {} req/s offered (serves at most {})",
                    k.topology,
                    thousands(r.round() as i64),
                    thousands(k.capacity_rps.round() as i64)
                ),
                (Some(r), Some(why)) => format!(
                    "{} stops keeping up at {} req/s offered — inconclusive: {}",
                    k.topology,
                    thousands(r.round() as i64),
                    short_reason(why)
                ),
                (None, _) => format!(
                    "{} kept up at every rate offered (up to {} req/s)",
                    k.topology,
                    thousands(k.capacity_rps.round() as i64)
                ),
            };
            lines.extend(wrapped(&text, "  "));
        }
    }
    if lines.len() > MAX_LINES {
        lines.truncate(MAX_LINES - 1);
        lines.push("… the rest is in the tables below".to_owned());
    }
    lines
}

/// "  p99: 1.23 ms (4.56 against 3.33 ms) — holds".
fn tax_line(t: &TaxRow) -> String {
    let figures = match (t.tax_ms, t.monolith_ms, t.services_ms) {
        (Some(tax), Some(m), Some(s)) => {
            format!("{} ({} against {})", signed(tax), duration(s), duration(m))
        }
        _ => "not measured".to_owned(),
    };
    let verdict = match &t.verdict {
        Some(v) if v.holds => " — holds".to_owned(),
        Some(v) => format!(
            " — inconclusive: {}",
            v.inconclusive
                .as_deref()
                .map_or_else(String::new, short_reason)
        ),
        None => String::new(),
    };
    format!("  {}: {figures}{verdict}", t.at)
}

/// "+1.23 ms", "−45.6 µs".
fn signed(ms: f64) -> String {
    if ms < 0.0 {
        format!("−{}", duration(-ms))
    } else {
        format!("+{}", duration(ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> HopsSummary {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hops");
        let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        serde_json::from_value(doc["hops"].clone()).unwrap()
    }

    /// The headline states the hop's tax at p50 and p99 with each row's verdict, in
    /// the row's own figures, and what tracing cost.
    #[test]
    fn the_hops_headline_states_the_tax_and_its_verdicts() {
        let s = fixture();
        let lines = hops_headline(&s);
        assert!(lines.len() <= MAX_LINES && !lines.is_empty(), "{lines:#?}");
        for l in &lines {
            assert!(l.chars().count() <= super::super::MAX_COLUMNS, "{l:?}");
        }
        let p99 = s.tax.iter().find(|t| t.at == "p99").unwrap();
        let line = lines.iter().find(|l| l.starts_with("  p99: ")).unwrap();
        assert!(line.contains(&signed(p99.tax_ms.unwrap())), "{line}");
        match &p99.verdict {
            Some(v) if v.holds => assert!(line.ends_with("— holds"), "{line}"),
            Some(_) => assert!(line.contains("— inconclusive:"), "{line}"),
            None => {}
        }
        insta::assert_snapshot!(lines.join("\n"));
    }

    /// The lines as one text, so that a sentence can be found across its wraps.
    fn joined(lines: &[String]) -> String {
        lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
    }

    /// A knee the machine could account for is said inconclusive with its reason's
    /// first clause; one that holds gives the capacity.
    #[test]
    fn a_sweeps_knees_are_stated_with_their_verdicts() {
        let mut s = fixture();
        s.sweep = Some(crate::report::HopsSweep {
            duration_s: 10.0,
            points: Vec::new(),
            knees: vec![
                crate::report::Knee {
                    topology: "monolith".into(),
                    knee_rps: Some(5000.0),
                    capacity_rps: 4321.4,
                    inconclusive: None,
                },
                crate::report::Knee {
                    topology: "services".into(),
                    knee_rps: Some(1000.0),
                    capacity_rps: 990.0,
                    inconclusive: Some("the machine was busy and the runs waited 15.1 ms for a CPU at p99's scale, half the rise".into()),
                },
            ],
        });
        let text = joined(&hops_headline(&s));
        assert!(
            text.contains(
                "monolith stops keeping up at 5,000 req/s offered (serves at most 4,321)"
            ),
            "{text}"
        );
        assert!(
            text.contains("services stops keeping up at 1,000 req/s offered — inconclusive: the machine was busy and the runs waited 15.1 ms for a CPU at p99's scale"),
            "{text}"
        );
    }
}
