//! One function per chart section. Each condition keeps its colour everywhere.

use super::svg::{self, Axis, Bar, BarGroup, Mark, Scale, Series, Span, PALETTE};
use super::Section;
use crate::report::Summary;
use crate::stats::{quantile, quantile_select};

/// The condition's colour in this run: its position among the run's conditions, so
/// that one run's conditions are as far apart as the palette allows (its first seven
/// are told apart under each common colour-vision deficiency: see `svg::PALETTE`) and
/// each keeps its colour in every chart of the page. A name the plan does not list
/// hashes into the palette.
pub fn color(s: &Summary, condition: &str) -> &'static str {
    let index = s
        .params
        .plan
        .conditions
        .iter()
        .position(|c| c == condition)
        .unwrap_or_else(|| condition.bytes().map(usize::from).sum::<usize>());
    PALETTE[index % PALETTE.len()]
}

/// What a caption says of a chart whose marks may be hollow.
pub(super) const FLAGGED_CAPTION: &str = "A hollow mark (a ring, a hollow dot or bar, rings along a line) is a pair measured under a warning (a late generator, a saturated API or machine): not a basis for comparison.";

/// What a caption says of a chart whose axis [`duration_scale`] chose.
pub(super) const DURATION_SCALE_CAPTION: &str = "Durations within a factor of ten of each other are bars on a linear axis from zero, so their lengths compare; wider apart, they are dots on a log axis, where a bar's length would mean nothing.";

/// The axis for durations (µs): linear from zero, where bars' lengths compare, unless
/// they span more than a factor of ten, where only a log axis shows the small ones
/// (and [`svg::bars`] draws dots on it).
pub(super) fn duration_scale(values: impl IntoIterator<Item = f64>) -> Scale {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi > 10.0 * lo {
        Scale::LogMicros
    } else {
        Scale::LinearMicros
    }
}

fn sinks(s: &Summary) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &s.pairs {
        if !out.contains(&p.sink) {
            out.push(p.sink.clone());
        }
    }
    out
}

fn conditions(s: &Summary, sink: &str) -> Vec<String> {
    s.pairs
        .iter()
        .filter(|p| p.sink == sink)
        .map(|p| p.condition.clone())
        .collect()
}

fn latencies(s: &Summary, condition: &str, sink: &str) -> Vec<u64> {
    s.requests
        .iter()
        .filter(|r| r.condition == condition && r.sink == sink)
        .filter_map(|r| r.latency_ms.map(|ms| (ms * 1000.0).round() as u64))
        .collect()
}

fn no_data(id: &'static str, title: &str, why: &str) -> Section {
    Section {
        id,
        title: title.into(),
        caption: format!("No chart: {why}."),
        charts: Vec::new(),
    }
}

/// The percentiles a latency line is drawn through: dense where the nines axis spreads
/// them out, up to what `n` samples can resolve, then the maximum.
fn percentile_points(n: usize) -> Vec<f64> {
    let mut ps: Vec<f64> = (0..=18).map(|i| i as f64 * 5.0).collect();
    ps.extend((91..=99).map(f64::from));
    let mut step = 0.1;
    let mut from = 99.0;
    while 1.0 / (n as f64) < (100.0 - from) / 100.0 / 10.0 {
        ps.extend((1..=9).map(|k| from + k as f64 * step));
        from += 9.0 * step;
        step /= 10.0;
    }
    ps.push(100.0);
    ps
}

/// Whether a pair is drawn hollow: measured under a warning, where that tells it apart
/// from others. When every pair was (a busy machine flags them all), no mark is hollow
/// and the caption says so once ([`flagged_caption`]).
fn flagged(s: &Summary, condition: &str, sink: &str) -> bool {
    flag_distinguishes(s)
        && s.pairs
            .iter()
            .any(|p| p.condition == condition && p.sink == sink && p.metrics.flagged())
}

/// Some pairs were measured under a warning and some were not.
pub(super) fn flag_distinguishes(s: &Summary) -> bool {
    s.pairs.iter().any(|p| p.metrics.flagged()) && s.pairs.iter().any(|p| !p.metrics.flagged())
}

/// What a caption says of flagged marks in this run: what a hollow mark means when
/// some are, that every pair was flagged when all were, nothing when none was.
pub(super) fn flagged_caption(s: &Summary) -> &'static str {
    if flag_distinguishes(s) {
        FLAGGED_CAPTION
    } else if s.pairs.iter().any(|p| p.metrics.flagged()) {
        ALL_FLAGGED_CAPTION
    } else {
        ""
    }
}

/// When every pair was measured under a warning, said once instead of a hollow mark
/// on everything.
pub(super) const ALL_FLAGGED_CAPTION: &str = "Every pair was measured under a warning (a late generator, a saturated API or machine: see the warnings), so no mark is hollow: read the differences with the findings' verdicts, which weigh that interference.";

pub fn latency_percentiles(s: &Summary) -> Section {
    let title = "Latency percentiles";
    if s.requests.is_empty() {
        return no_data("latency", title, "requests.csv is missing or empty");
    }
    let mut panels = Vec::new();
    let mut fewest = usize::MAX;
    for sink in sinks(s) {
        let series: Vec<Series> = conditions(s, &sink)
            .into_iter()
            .map(|c| {
                let mut v = latencies(s, &c, &sink);
                fewest = fewest.min(v.len());
                let points = percentile_points(v.len())
                    .into_iter()
                    .filter_map(|p| quantile(&mut v, p / 100.0).map(|us| (p, us as f64)))
                    .collect();
                Series {
                    color: color(s, &c),
                    flagged: flagged(s, &c, &sink),
                    name: c,
                    mark: Mark::Line,
                    points,
                }
            })
            .collect();
        panels.push((sink, series));
    }
    // One y range for every panel, so fast and slow compare at a glance.
    let y = Axis::fit(
        "latency (log scale)",
        Scale::LogMicros,
        panels
            .iter()
            .flat_map(|(_, series)| series.iter().flat_map(|s| s.points.iter().map(|p| p.1))),
    );
    let most = s
        .pairs
        .iter()
        .map(|p| p.requests)
        .max()
        .unwrap_or(1)
        .max(10);
    let x = Axis {
        label: "percentile (spaced by nines)".into(),
        scale: Scale::Nines,
        min: 0.0,
        max: (most as f64).log10(),
    };
    let charts = panels
        .iter()
        .map(|(sink, series)| {
            svg::xy(
                &format!("{sink} sink: latency from the scheduled send"),
                &x,
                &y,
                series,
                &[],
            )
        })
        .collect();
    let mut caption = format!("Each line is one condition: the latency below which p% of its requests finished (all rounds pooled). The axis spaces 50, 90, 99 and 99.9 evenly, so the tail has room; the right edge is the slowest request. Lines that rise to seconds are requests that queued behind a blocked event loop. {}", flagged_caption(s));
    if fewest < 100 {
        caption.push_str(&format!(
            " <b>Few samples:</b> a pair has only {fewest} requests, so its p99 is one of its slowest few and reads as indicative, not as a tail estimate."
        ));
    }
    Section {
        id: "latency",
        title: title.into(),
        caption,
        charts,
    }
}

/// A timeline is cut into slices of send time holding about this many requests each
/// (on the lab's defaults, 20 requests/s: a second a slice), so that a slice's p99 is
/// more than its one slowest request wherever there are requests enough...
const REQUESTS_PER_SLICE: usize = 20;
/// ...and into no more slices than this (a closed loop's hundreds of thousands of
/// requests: about five pixels a slice on a 600-pixel plot).
const MAX_SLICES: usize = 120;

/// A condition's requests (send time, latency) as a band over time: per slice of send
/// time, from its median (the lower edge) to its p99 (the upper edge), as
/// [`svg::Mark::Band`] takes it. A slice with no request has no point: the band goes
/// straight across it.
fn percentile_band(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let Some(lo) = points.iter().map(|p| p.0).min_by(f64::total_cmp) else {
        return Vec::new();
    };
    let hi = points.iter().map(|p| p.0).fold(lo, f64::max);
    // A short run still gets a shape over time: up to 8 slices of at least 5.
    let slices = (points.len() / REQUESTS_PER_SLICE)
        .max((points.len() / 5).min(8))
        .clamp(1, MAX_SLICES);
    let width = ((hi - lo) / slices as f64).max(f64::MIN_POSITIVE);
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); slices];
    for &(x, y) in points {
        latencies[(((x - lo) / width) as usize).min(slices - 1)].push(y);
    }
    let mut upper = Vec::new();
    let mut lower = Vec::new();
    for (i, slice) in latencies.iter_mut().enumerate() {
        if slice.is_empty() {
            continue;
        }
        let x = lo + (i as f64 + 0.5) * width;
        upper.push((x, quantile_select(slice, 0.99)));
        lower.push((x, quantile_select(slice, 0.5)));
    }
    upper.extend(lower.into_iter().rev());
    upper
}

pub fn request_timeline(s: &Summary) -> Section {
    let title = "Request timeline";
    if s.requests.is_empty() {
        return no_data("timeline", title, "requests.csv is missing or empty");
    }
    let panels: Vec<(String, Vec<Series>)> = sinks(s)
        .into_iter()
        .map(|sink| {
            let series = conditions(s, &sink)
                .into_iter()
                .map(|c| {
                    let points: Vec<(f64, f64)> = s
                        .requests
                        .iter()
                        .filter(|r| r.condition == c && r.sink == sink)
                        .filter_map(|r| r.latency_ms.map(|l| (r.scheduled_ms / 1000.0, l * 1000.0)))
                        .collect();
                    Series {
                        color: color(s, &c),
                        flagged: flagged(s, &c, &sink),
                        name: c,
                        mark: Mark::Band,
                        points: percentile_band(&points),
                    }
                })
                .collect();
            (sink, series)
        })
        .collect();
    // The panels sit side by side: one x and one y range for all, so a staircase in
    // one reads against the other at a glance.
    let all = || {
        panels
            .iter()
            .flat_map(|(_, series)| series.iter().flat_map(|s| s.points.iter().copied()))
    };
    let x = Axis::fit("scheduled send (s)", Scale::Linear, all().map(|p| p.0));
    let y = Axis::fit("latency (log scale)", Scale::LogMicros, all().map(|p| p.1));
    let charts = panels
        .iter()
        .map(|(sink, series)| {
            svg::xy(
                &format!("{sink} sink: latency by scheduled send time"),
                &x,
                &y,
                series,
                &[],
            )
        })
        .collect();
    Section {
        id: "timeline",
        title: title.into(),
        caption: format!("Each band is one condition's requests by scheduled send time: cut into slices of about {REQUESTS_PER_SLICE} requests (at most {MAX_SLICES} slices), it spans each slice's median (its lower edge) to its p99 (its upper edge), so a typical request and the slow tail both show without a cloud of points. A band that keeps climbing is a backlog the API never catches up with; a band that widens is a tail that grows. {}", flagged_caption(s)),
        charts,
    }
}

pub fn backlog(s: &Summary) -> Section {
    let title = "Backlog over time";
    if !s.timeseries.iter().any(|r| r.produced_bytes.is_some()) {
        return no_data("backlog", title, "the API did not report the bytes it produced (an --app cannot), or timeseries.csv is missing");
    }
    let mut panels = Vec::new();
    for sink in sinks(s) {
        let mut series = Vec::new();
        let mut spans = Vec::new();
        for c in conditions(s, &sink) {
            // The first round's run of this pair.
            let Some(run) = s.runs.iter().find(|r| r.condition == c && r.sink == sink) else {
                continue;
            };
            let points: Vec<(f64, f64)> = s
                .timeseries
                .iter()
                .filter(|r| r.run == run.run)
                .filter_map(|r| {
                    r.produced_bytes
                        .map(|p| (r.t_s, p.saturating_sub(r.read_bytes) as f64 / 1024.0))
                })
                .collect();
            if run.metrics.drain_s > 0.05 {
                if let Some(last) = run.last_response_s {
                    spans.push(Span {
                        from: last,
                        to: last + run.metrics.drain_s,
                        label: format!("{c} drain {:.2} s", run.metrics.drain_s),
                        color: color(s, &c),
                    });
                }
            }
            series.push(Series {
                color: color(s, &c),
                flagged: flagged(s, &c, &sink),
                name: c,
                mark: Mark::Line,
                points,
            });
        }
        panels.push((sink, series, spans));
    }
    // Side by side, on the same axes: a sink that keeps up reads as flat next to one
    // that does not.
    let all = || {
        panels
            .iter()
            .flat_map(|(_, series, _)| series.iter().flat_map(|s| s.points.iter().copied()))
    };
    let x = Axis::fit(
        "time since first scheduled send (s)",
        Scale::Linear,
        all().map(|p| p.0),
    );
    // Room at the top for the drain labels (in the rows the panel with the most needs),
    // above every line.
    let highest = all().map(|p| p.1).fold(0.0, f64::max);
    let clear = panels
        .iter()
        .map(|(_, _, spans)| svg::clear_of_span_labels(highest, &x, spans))
        .fold(highest, f64::max);
    let y = Axis::fit(
        "produced − read (KiB)",
        Scale::Linear,
        all().map(|p| p.1).chain([clear]),
    );
    let charts = panels
        .iter()
        .map(|(sink, series, spans)| {
            svg::xy_with_spans(
                &format!("{sink} sink: log bytes not yet read"),
                &x,
                &y,
                series,
                spans,
            )
        })
        .collect();
    Section {
        id: "backlog",
        title: title.into(),
        caption: format!("Bytes the API handed to its logger minus bytes the reader has read (first round). A bracket at the top spans each condition's drain, between two dashed lines: from its last response to the moment its last log byte was read. {}", flagged_caption(s)),
        charts,
    }
}

pub fn gen_vs_log_call(s: &Summary) -> Section {
    let title = "Building the record vs. the logger call";
    // A time that was not measured (a condition that builds no record) is no mark,
    // not a zero.
    let groups: Vec<BarGroup> = s
        .pairs
        .iter()
        .filter(|p| p.metrics.gen_us.is_some() || p.metrics.log_call_us.is_some())
        .map(|p| BarGroup {
            label: format!("{} / {}", p.condition, p.sink),
            bars: [
                ("build", PALETTE[5], p.metrics.gen_us),
                ("logger call", PALETTE[3], p.metrics.log_call_us),
            ]
            .into_iter()
            .filter_map(|(name, color, v)| {
                Some(Bar {
                    flagged: flag_distinguishes(s) && p.metrics.flagged(),
                    ..Bar::new(name, color, v?)
                })
            })
            .collect(),
        })
        .collect();
    if groups.is_empty() {
        return no_data(
            "sections",
            title,
            "the API did not report in-API timings (an --app cannot)",
        );
    }
    let scale = duration_scale(groups.iter().flat_map(|g| &g.bars).map(|b| b.value));
    Section {
        id: "sections",
        title: title.into(),
        caption: format!("Average time per request spent building the log record and inside the logger call, measured in the API; each mark carries its value, and a condition that does either not at all has no mark for it. {DURATION_SCALE_CAPTION} {}", flagged_caption(s)),
        charts: vec![svg::bars(
            "Average time per request inside the API",
            if scale.is_log() {
                "time (log scale)"
            } else {
                "time"
            },
            scale,
            &groups,
        )],
    }
}

/// The chart under the headline: per sink, the p99 and p50 of the conditions its
/// sentences speak of (the baseline, the costly one, the one that takes the cost away),
/// each bar with the p99's 95% interval. `None` when the headline states no cost.
pub fn headline(s: &Summary) -> Option<String> {
    let mut groups = Vec::new();
    for speakers in crate::export::headline::speakers(s) {
        let mut names: Vec<&str> = Vec::new();
        for name in speakers
            .baseline
            .iter()
            .map(String::as_str)
            .chain([speakers.costly.as_str()])
            .chain(speakers.remedy.as_deref())
        {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let pairs: Vec<_> = names
            .iter()
            .filter_map(|c| {
                s.pairs
                    .iter()
                    .find(|p| p.condition == *c && p.sink == speakers.sink)
            })
            .collect();
        for percentile in ["p99", "p50"] {
            let bars: Vec<Bar> = pairs
                .iter()
                .filter_map(|p| {
                    let (value, interval) = match percentile {
                        "p99" => (p.metrics.p99_ms?, p.p99_ms_interval),
                        _ => (p.metrics.p50_ms?, None),
                    };
                    Some(Bar {
                        name: p.condition.clone(),
                        color: color(s, &p.condition),
                        value: value * 1e3,
                        interval: interval.map(|(lo, hi)| (lo * 1e3, hi * 1e3)),
                        flagged: flag_distinguishes(s) && p.metrics.flagged(),
                    })
                })
                .collect();
            if !bars.is_empty() {
                groups.push(BarGroup {
                    label: format!("{} sink / {percentile}", speakers.sink),
                    bars,
                });
            }
        }
    }
    if groups.is_empty() {
        return None;
    }
    let scale = duration_scale(groups.iter().flat_map(|g| &g.bars).map(|b| b.value));
    let label = if scale.is_log() {
        "latency (log scale)"
    } else {
        "latency"
    };
    Some(svg::bars(
        "The headline's conditions: latency",
        label,
        scale,
        &groups,
    ))
}

pub fn throughput(s: &Summary) -> Section {
    let groups: Vec<BarGroup> = s
        .pairs
        .iter()
        .map(|p| BarGroup {
            label: format!("{} / {}", p.condition, p.sink),
            bars: vec![
                // Short names: the legend has 130 px; the caption says what each
                // counts until.
                Bar::new("API", PALETTE[0], p.metrics.rps_api),
                Bar::new("logs read", PALETTE[1], p.metrics.rps_logs_read),
            ]
            .into_iter()
            .map(|b| Bar {
                flagged: flag_distinguishes(s) && p.metrics.flagged(),
                ..b
            })
            .collect(),
        })
        .collect();
    Section {
        id: "throughput",
        title: "Throughput: API and logs read".into(),
        caption: format!("Completed requests per second, counting time until the last response (API) or until every log byte was read (logs read). A gap between the bars is logging work left after the responses. {}", flagged_caption(s)),
        charts: vec![svg::bars(
            "Completed requests per second",
            "requests/s",
            Scale::Linear,
            &groups,
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A band's upper edge is each slice's p99 and its lower edge its median; a closed
    /// loop's hundreds of thousands of requests become at most MAX_SLICES slices.
    #[test]
    fn a_timeline_band_spans_each_slices_median_to_its_p99() {
        // 200 requests over 2 s: ten slices of 20, the last five slow.
        let points: Vec<(f64, f64)> = (0..200)
            .map(|i| {
                let slow = if i < 100 { 1_000.0 } else { 50_000.0 };
                (i as f64 * 0.01, slow + i as f64)
            })
            .collect();
        let band = percentile_band(&points);
        assert_eq!(band.len(), 20, "ten slices, upper then lower: {band:?}");
        assert_eq!(band[0].1, 1_019.0, "slice 1's p99");
        assert_eq!(band[9].1, 50_199.0, "slice 10's p99");
        assert_eq!(
            band[10].1, 50_189.0,
            "slice 10's median, the lower edge back"
        );
        assert_eq!(band[19].1, 1_009.0, "slice 1's median");
        assert!(band[0].0 < band[9].0 && band[10].0 > band[19].0, "{band:?}");
        // A short run (40 requests) still has a shape: 8 slices of 5.
        assert_eq!(percentile_band(&points[..40]).len(), 16);
        let dense: Vec<(f64, f64)> = (0..450_000)
            .map(|i| (i as f64 / 45_000.0, (i % 7) as f64))
            .collect();
        assert_eq!(percentile_band(&dense).len(), 2 * MAX_SLICES);
        assert!(percentile_band(&[]).is_empty());
    }
}
