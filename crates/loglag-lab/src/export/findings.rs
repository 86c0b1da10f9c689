//! The lab's findings as a table: cells and titles shared by Markdown and HTML.

use crate::report::Finding;

/// The findings as table cells, in the order of [`FINDING_COLUMNS`], for Markdown and HTML.
pub fn finding_cells(f: &Finding) -> [String; 8] {
    let signed = |v: f64| {
        let s = three_figures(v);
        if v >= 0.0 {
            format!("+{s}")
        } else {
            s
        }
    };
    let ratio = |v: f64| format!("{}×", three_figures(v));
    [
        format!("{} vs {}", f.condition, f.baseline),
        f.sink.clone(),
        f.percentile.as_str().to_owned(),
        format!(
            "{} vs {}",
            three_figures(f.value_ms),
            three_figures(f.baseline_ms)
        ),
        format!(
            "{} [{}, {}]",
            signed(f.difference_ms),
            signed(f.difference_interval_ms.0),
            signed(f.difference_interval_ms.1)
        ),
        format!(
            "{} [{}, {}]",
            ratio(f.ratio),
            ratio(f.ratio_interval.0),
            ratio(f.ratio_interval.1)
        ),
        if f.inconclusive.is_none() {
            "holds"
        } else {
            "inconclusive"
        }
        .to_owned(),
        match (&f.inconclusive, &f.note) {
            (Some(why), _) => why.clone(),
            (None, Some(note)) => note.clone(),
            (None, None) => String::new(),
        },
    ]
}

/// The findings table's columns: title, and whether it holds numbers (right-aligned).
pub const FINDING_COLUMNS: [(&str, bool); 8] = [
    ("comparison", false),
    ("sink", false),
    ("percentile", false),
    ("ms", true),
    ("difference ms [95% interval]", true),
    ("ratio [95% interval]", true),
    ("verdict", false),
    ("why", false),
];

/// The sentence above the findings table: what is compared, and when a difference is
/// called inconclusive (`lab::findings::judge` and `check_rounds` apply it).
pub fn findings_caption() -> String {
    format!(
        "Each condition against the baseline on the same sink (and json-sync against json-queue). Intervals: 95% bootstrap over the requests of every round, {} resamples. Inconclusive: the interval includes zero; the baseline was saturated or had failed requests; the machine could explain the difference: on a machine busy during either side's runs (its cores 90% used or more, other tenants included), the time that side's processes (API, reader, generator) waited for a CPU, shared among the requests at or beyond the percentile (at least one per run: 1% of them for p99, half for p50), is {share:.0}% of the difference or more, or on any machine the generator's lateness is, weighed at the same scale (the larger of its lateness at that percentile and its p99 lateness shared the same way); the condition looks faster while some of its requests failed; or the rounds disagree. A difference that holds on a busy machine says its absolute values are inflated, and by how much the API waited.",
        crate::stats::BOOTSTRAP_RESAMPLES,
        share = crate::stats::INTERFERENCE_SHARE * 100.0
    )
}

/// A number to three significant figures, for sentences.
pub fn three_figures(v: f64) -> String {
    let a = v.abs();
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}")
}
