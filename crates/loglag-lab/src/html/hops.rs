//! `lab hops`'s page: the two topologies' percentiles, the tax, where a hop's time goes
//! (a stacked bar per hop), and the median and p99 request of each topology as
//! waterfalls drawn from their spans.

use std::fmt::Write as _;

use super::svg::{self, Axis, Mark, Scale, Series, PALETTE};
use super::{esc, CSS};
use crate::report::{HopsSummary, Waterfall};

/// The parts of a hop, in the order they happen, with their colours.
const PARTS: [(&str, &str); 4] = [
    ("connect", "#D55E00"),
    ("request (write, transfer, queueing)", "#E69F00"),
    ("handler", "#009E73"),
    ("response (write, transfer, read)", "#0072B2"),
];

fn stacked_bars(s: &HopsSummary) -> String {
    let width = 900.0;
    let label_w = 110.0;
    let row_h = 34.0;
    let total = s
        .breakdown
        .iter()
        .map(|b| (b.connect_ms + b.request_ms + b.handler_ms + b.response_ms).max(b.call_ms))
        .fold(0.0, f64::max)
        .max(1e-6);
    // Room after the longest bar for its total ("12.34 ms" at 12 px, with margin):
    // the browser test found it clipped when the bars took the whole width.
    let scale = (width - label_w - 80.0) / total;
    let height = 40.0 + row_h * s.breakdown.len() as f64 + 30.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" role=\"img\"><title>Where each hop's time goes (its median call, ms)</title>"
    );
    for (i, b) in s.breakdown.iter().enumerate() {
        let y = 20.0 + row_h * i as f64;
        let _ = write!(
            out,
            "<text x=\"0\" y=\"{:.1}\" font-size=\"13\">{}</text>",
            y + 17.0,
            esc(&b.hop)
        );
        let mut x = label_w;
        for (value, (name, color)) in [b.connect_ms, b.request_ms, b.handler_ms, b.response_ms]
            .into_iter()
            .zip(PARTS)
        {
            let w = value * scale;
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"24\" fill=\"{color}\"><title>{}: {value:.3} ms</title></rect>",
                esc(name)
            );
            x += w;
        }
        // The call time the table shows: the median call's, whose parts these are.
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{:.3} ms</text>",
            x + 4.0,
            y + 17.0,
            b.call_ms
        );
    }
    let mut x = label_w;
    let y = height - 14.0;
    for (name, color) in PARTS {
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{y:.1}\" font-size=\"12\">{}</text>",
            y - 10.0,
            x + 16.0,
            esc(name)
        );
        x += 16.0 + 7.0 * name.len() as f64 + 14.0;
    }
    out.push_str("</svg>");
    out
}

fn waterfall(w: &Waterfall) -> String {
    let width = 900.0;
    let label_w = 260.0;
    let row_h = 22.0;
    let end = w
        .spans
        .iter()
        .map(|s| s.start_ms + s.duration_ms)
        .fold(w.latency_ms, f64::max)
        .clamp(1e-6, f64::MAX);
    let scale = (width - label_w - 70.0) / end;
    let rows_end = 10.0 + row_h * w.spans.len() as f64;
    // Room under the rows for the time axis.
    let height = rows_end + 34.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" role=\"img\"><title>{} {}: request {}, {:.2} ms</title>",
        esc(&w.topology),
        esc(&w.which),
        w.request_id,
        w.latency_ms
    );
    let services = ["monolith", "order", "payment", "inventory"];
    for (i, s) in w.spans.iter().enumerate() {
        let y = 10.0 + row_h * i as f64;
        let color = PALETTE[services.iter().position(|&x| x == s.service).unwrap_or(4)];
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{} {}</text>",
            4.0 + 12.0 * s.depth as f64,
            y + 14.0,
            esc(&s.service),
            esc(&s.name)
        );
        let x = label_w + s.start_ms * scale;
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{color}\"><title>{} {}: starts at {:.3} ms, lasts {:.3} ms</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{:.2} ms</text>",
            (s.duration_ms * scale).max(1.0),
            esc(&s.service),
            esc(&s.name),
            s.start_ms,
            s.duration_ms,
            x + (s.duration_ms * scale).max(1.0) + 4.0,
            y + 13.0,
            s.duration_ms
        );
        for (at, name) in &s.events {
            let _ = write!(
                out,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#000\"><title>{3} at {4:.3} ms</title></line>",
                label_w + at * scale,
                y - 2.0,
                y + 18.0,
                esc(name),
                at
            );
        }
    }
    time_axis(&mut out, label_w, scale, end, rows_end);
    out.push_str("</svg>");
    out
}

/// A time axis under a waterfall: ticks at a round step (1, 2 or 5 × a power of ten
/// ms) from 0 to the request's end, each labelled. At most a dozen ticks whatever
/// `end_ms` is; an end that is not a positive finite number gets the line alone.
fn time_axis(out: &mut String, left: f64, scale: f64, end_ms: f64, y: f64) {
    let _ = write!(
        out,
        "<line x1=\"{left:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#555\"/>",
        left + end_ms * scale
    );
    let raw = end_ms / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    if !(end_ms.is_finite() && end_ms > 0.0 && step.is_normal() && step.is_finite()) {
        return;
    }
    // `raw` ≤ step, so 5 steps reach the end; the bound holds should rounding not.
    let ticks = ((end_ms / step + 1e-9).floor() as usize).min(12);
    for i in 0..=ticks {
        let t = i as f64 * step;
        let x = left + t * scale;
        let label = if step >= 1.0 {
            format!("{t:.0} ms")
        } else {
            let digits = ((-step.log10()).ceil() as usize).min(17);
            format!("{t:.digits$} ms")
        };
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y:.1}\" y2=\"{:.1}\" stroke=\"#555\"/><text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{label}</text>",
            y + 5.0,
            y + 18.0
        );
    }
}

/// The whole page.
pub fn render_hops(s: &HopsSummary) -> String {
    let mut h = String::new();
    let p = &s.params;
    let load = match (p.users, p.rate) {
        (Some(u), _) => format!("closed loop, {u} users"),
        (None, Some(r)) => format!("open loop, {r} requests/s"),
        _ => String::new(),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>loglag lab hops</title><style>{CSS}</style></head><body><h1>loglag lab hops: the cost of a service boundary</h1>{answer}<p>{load} for {} s; calls {}, connections {}, work {} ({} ms per step), bodies of {} bytes, {} threads per process; one request in {} traced. {}, {} cores.</p>",
        p.duration_s,
        esc(&p.calls),
        esc(&p.connection),
        esc(&p.work),
        p.work_ms,
        p.body_bytes,
        p.threads,
        p.trace_every,
        esc(&s.machine.cpu),
        s.machine.cores,
        answer = super::headline_section(&crate::export::headline::hops_headline(s), None),
    );
    if let Some(interrupted) = &s.interrupted {
        let _ = write!(
            h,
            "<p class=\"inconclusive\">Incomplete: {}. What finished is reported.</p>",
            esc(interrupted)
        );
    }
    if let Some(saturation) = &s.saturation {
        let _ = write!(
            h,
            "<p class=\"inconclusive\">Inconclusive for the hop: {}</p>",
            esc(saturation)
        );
    }
    h.push_str("<h2>Latency</h2>");
    h.push_str(&super::column_table(
        &crate::export::hops::topology_columns(s),
        &s.topologies,
    ));
    let _ = write!(
        h,
        "<h2>The hop tax (services − monolith, traced)</h2><p class=\"caption\">The interval is a 95% bootstrap over the two runs' requests. {}</p>",
        esc(s.tax_rule.as_deref().unwrap_or(""))
    );
    h.push_str(&super::marked_column_table(
        &crate::export::hops::tax_columns(s),
        &s.tax,
        |c, row| c.key == "verdict" && row.verdict.as_ref().is_some_and(|v| !v.holds),
    ));
    let series: Vec<Series> = s
        .topologies
        .iter()
        .enumerate()
        .map(|(i, t)| Series {
            name: format!(
                "{}{}",
                t.topology,
                if t.traced { "" } else { " (tracing off)" }
            ),
            color: PALETTE[i % PALETTE.len()],
            mark: Mark::Line,
            flagged: false,
            points: t
                .percentiles_ms
                .iter()
                .map(|&(p, ms)| (p, ms * 1000.0))
                .collect(),
        })
        .collect();
    let n = s.topologies.iter().map(|t| t.requests).max().unwrap_or(10);
    let x = Axis {
        label: "percentile".into(),
        scale: Scale::Nines,
        min: 0.0,
        max: (n.max(10) as f64).log10(),
    };
    let y = Axis::fit(
        "latency",
        Scale::LogMicros,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
    );
    h.push_str("<h2>Percentiles</h2>");
    h.push_str(&svg::xy("Latency by percentile", &x, &y, &series, &[]));
    if s.tax_rule.is_none() {
        if let Some(line) = crate::export::hops::tax_noise_line(s) {
            let _ = write!(h, "<p class=\"inconclusive\">{}</p>", esc(&line));
        }
    }
    let costs = crate::export::hops::tracing_cost_lines(s);
    if !costs.is_empty() {
        h.push_str("<h2>What tracing cost</h2>");
        for line in costs {
            let _ = write!(h, "<p>{}</p>", esc(&line));
        }
    }
    if let Some(sweep) = &s.sweep {
        h.push_str(&sweep_section(sweep));
    }
    let _ = write!(
        h,
        "<h2>Where a hop's time goes</h2><p>{} The parts: connect (0 on a pooled connection), the request until the callee's span starts (writing, transfer, waiting to be scheduled), the callee's handler, and the response until the caller has it all. The figure after each bar is the call time in the table.</p>",
        esc(crate::export::hops::breakdown_caption(s))
    );
    if s.breakdown.is_empty() {
        h.push_str("<p>No hop was traced.</p>");
    } else {
        h.push_str(&stacked_bars(s));
    }
    h.push_str("<h2>Waterfalls</h2><p>The traced request nearest each percentile; ticks mark span events. A request's latency runs from its scheduled send, so time before its first span (the generator's lateness, connecting, queueing to be accepted) and after its last is in it, and said above its spans.</p>");
    for w in &s.waterfalls {
        let _ = write!(
            h,
            "<h3>{} {}: request {} ({:.2} ms), trace {}</h3>",
            esc(&w.topology),
            esc(&w.which),
            w.request_id,
            w.latency_ms,
            esc(&w.trace_id)
        );
        if let Some(line) = crate::export::hops::uncovered_words(w) {
            let _ = write!(h, "<p>{}</p>", esc(&line));
        }
        h.push_str(&waterfall(w));
    }
    if let Some(f) = &s.spans_file {
        // A link only to a relative path inside the directory; anything else is text.
        let parts: Vec<&str> = f.split('/').collect();
        let shown = match super::untrusted::href(&parts) {
            Some(href) => format!("<a href=\"{href}\">{}</a>", esc(f)),
            None => format!("<code>{}</code>", esc(f)),
        };
        let _ = write!(
            h,
            "<p>Every span: {shown} (OTLP/JSON; Jaeger 1.55+ imports it through the UI's upload).</p>"
        );
    }
    h.push_str("</body></html>\n");
    h
}

/// `--sweep`: p50 and p99 of each topology against the offered rate, the knees marked.
fn sweep_section(sweep: &crate::report::HopsSweep) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<h2>Latency against load</h2><p class=\"caption\">Both topologies untraced, open loop, {} s per offered rate. A knee is the lowest rate a topology did not keep up with (served under 90% of the offer, or its p99 over 5× its unloaded p99). Lines are p99, dots p50.</p>",
        sweep.duration_s
    );
    let mut series = Vec::new();
    for (i, topology) in ["monolith", "services"].into_iter().enumerate() {
        for (which, pick) in [
            (
                "p50",
                (|p: &crate::report::SweepPoint| p.p50_ms)
                    as fn(&crate::report::SweepPoint) -> Option<f64>,
            ),
            ("p99", |p: &crate::report::SweepPoint| p.p99_ms),
        ] {
            // One colour per topology, as on the rest of the page: p99 the line,
            // p50 the points.
            series.push(Series {
                name: format!("{topology} {which}"),
                color: PALETTE[i],
                mark: if which == "p99" {
                    Mark::Line
                } else {
                    Mark::Points
                },
                flagged: false,
                points: sweep
                    .points
                    .iter()
                    .filter(|p| p.topology == topology)
                    .filter_map(|p| pick(p).map(|ms| (p.offered_rps, ms * 1000.0)))
                    .collect(),
            });
        }
    }
    let x = Axis::fit(
        "offered requests/s",
        Scale::Log,
        sweep.points.iter().map(|p| p.offered_rps),
    );
    let y = Axis::fit(
        "latency",
        Scale::LogMicros,
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
    );
    let markers: Vec<svg::Marker> = sweep
        .knees
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            k.knee_rps.map(|r| svg::Marker {
                x: r,
                label: format!("{} knee", k.topology),
                color: PALETTE[i],
            })
        })
        .collect();
    h.push_str(&svg::xy(
        "p50 and p99 against offered load",
        &x,
        &y,
        &series,
        &markers,
    ));
    h.push_str("<ul>");
    for k in &sweep.knees {
        let _ = write!(h, "<li>{}</li>", esc(&crate::export::hops::knee_line(k)));
    }
    if let Some(line) = crate::export::hops::throughput_lost(sweep) {
        let _ = write!(h, "<li>{}</li>", esc(&line));
    }
    h.push_str("</ul>");
    h
}

#[cfg(test)]
mod tests {
    /// A waterfall's time axis ticks at 1, 2 or 5 × a power of ten ms, every tick
    /// labelled, from 0 to the request's end.
    #[test]
    fn waterfall_time_axes_tick_at_round_steps() {
        let labels = |end_ms: f64| {
            let mut out = String::new();
            super::time_axis(&mut out, 0.0, 100.0, end_ms, 0.0);
            out.split("middle\">")
                .skip(1)
                .map(|t| t.split('<').next().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(labels(3.27), ["0 ms", "1 ms", "2 ms", "3 ms"]);
        assert_eq!(labels(0.35), ["0.0 ms", "0.1 ms", "0.2 ms", "0.3 ms"]);
        assert_eq!(labels(42.0), ["0 ms", "10 ms", "20 ms", "30 ms", "40 ms"]);
    }

    /// An end no request has (1e308 ms, infinite, subnormal, NaN) draws a bounded
    /// axis: it once looped forever at an infinite end, growing the page without limit.
    #[test]
    fn a_waterfall_time_axis_stays_bounded_whatever_its_end() {
        for end_ms in [1e308, f64::MAX, f64::INFINITY, f64::NAN, 5e-324, 0.0, -1.0] {
            let mut out = String::new();
            super::time_axis(&mut out, 0.0, 1.0, end_ms, 0.0);
            assert!(
                out.matches("<text").count() <= 13 && out.len() < 20_000,
                "{end_ms}: {} bytes",
                out.len()
            );
        }
    }
}
