//! A small SVG chart: axes (linear, log, durations on either, or percentiles spaced by
//! nines), lines, points, bars (on a linear axis from zero) or dots (on a log axis,
//! which has no zero for a bar to start from), vertical markers and spans.
//! Hand-built on purpose (see ARCHITECTURE.md): the output is deterministic text that
//! snapshot tests can pin, it needs no font files, and it stays a few hundred lines.
//!
//! One visual code says "flagged" (measured under a warning: a late generator, a
//! saturated API or machine) everywhere: a hollow mark (ring, hollow dot, hollow bar,
//! hollow legend swatch), explained by a legend entry. Dashes mean markers only.

use std::fmt::Write as _;

/// Colours from Okabe–Ito's and Paul Tol's colour-blind-safe schemes, in the order
/// that keeps each prefix as far apart as it can be: each next colour is the one whose
/// nearest neighbour among those before it, in CIELAB and under simulated
/// protanopia, deuteranopia and tritanopia (Machado 2009), is farthest; none lighter
/// than L* 72, so a line shows on white. A run's conditions take them in its order: the
/// first seven (the lab's defaults) are at least ΔE 24 apart for each kind of vision
/// (Okabe–Ito's own order put its two blues and its orange and vermillion in one run,
/// ΔE 16). Tested below.
pub const PALETTE: [&str; 12] = [
    "#000000", "#E69F00", "#33BBEE", "#777777", "#332288", "#CC3311", "#0072B2", "#EE7733",
    "#882255", "#CC79A7", "#004488", "#009E73",
];

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    /// Linear, of microseconds, with ticks and values labelled as durations.
    LinearMicros,
    /// Log base 10; values ≤ 0 are clamped to the axis minimum.
    Log,
    /// Log base 10 of microseconds, with ticks labelled as durations (10 µs, 1 ms).
    LogMicros,
    /// Percentiles spaced by their nines, as HdrHistogram plots them: 0, 90, 99, 99.9
    /// are evenly spaced, so the tail is not squeezed into the last pixels. Values are
    /// percentiles (0–100); `max` is the axis end in nines (log10 of the sample count),
    /// where the 100th percentile, the maximum, sits.
    Nines,
}

impl Scale {
    pub fn is_log(self) -> bool {
        matches!(self, Scale::Log | Scale::LogMicros)
    }

    /// A value as this axis labels it: a duration on a µs axis (6.85 ms, not 6.85k).
    fn label(self, v: f64) -> String {
        match self {
            Scale::LinearMicros | Scale::LogMicros => fmt_micros(v),
            _ => fmt_tick(v),
        }
    }
}

/// A percentile's position on a [`Scale::Nines`] axis.
fn nines(p: f64) -> f64 {
    if p >= 100.0 {
        f64::INFINITY
    } else {
        -(1.0 - p / 100.0).log10()
    }
}

/// The most ticks an axis draws (a log axis over more decades than this ticks every
/// few).
const MAX_TICKS: usize = 12;

/// One axis.
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    pub min: f64,
    pub max: f64,
}

impl Axis {
    /// An axis covering `values` (with a little headroom), starting at zero when linear.
    pub fn fit(label: &str, scale: Scale, values: impl IntoIterator<Item = f64>) -> Axis {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let (min, max) = match scale {
            // Headroom short of overflow; a span too small to divide into ticks (a
            // subnormal maximum) is drawn as 0 to 1.
            Scale::Linear | Scale::LinearMicros => (
                0.0,
                if max > f64::MIN_POSITIVE * 1e3 {
                    (max * 1.05).min(f64::MAX)
                } else {
                    1.0
                },
            ),
            // Values are percentiles; the end is where 1/n resolves.
            Scale::Nines => (0.0, (values.len().max(10) as f64).log10()),
            Scale::Log | Scale::LogMicros => {
                let min_pos = values
                    .iter()
                    .copied()
                    .filter(|&v| v > 0.0)
                    .fold(f64::MAX, f64::min);
                if min_pos == f64::MAX {
                    (0.1, 10.0)
                } else {
                    // Decades that f64 holds: no zero (a subnormal's decade rounds
                    // to it), no infinity (the decade above 1.8e308).
                    let min = 10f64.powf(min_pos.log10().floor()).max(f64::MIN_POSITIVE);
                    (
                        min,
                        10f64.powf(max.log10().ceil()).max(min * 10.0).min(f64::MAX),
                    )
                }
            }
        };
        Axis {
            label: label.to_owned(),
            scale,
            min,
            max,
        }
    }

    fn fraction(&self, v: f64) -> f64 {
        let f = match self.scale {
            Scale::Linear | Scale::LinearMicros => (v - self.min) / (self.max - self.min),
            Scale::Log | Scale::LogMicros => {
                (v.max(self.min).log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
            }
            // The maximum (100th percentile) sits at the axis end.
            Scale::Nines if v >= 100.0 => 1.0,
            Scale::Nines => nines(v) / self.max,
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The ticks: at most [`MAX_TICKS`] (plus the ends of a nines axis) whatever the
    /// range, and none past the axis for one that is not finite.
    fn ticks(&self) -> Vec<f64> {
        if !(self.min.is_finite() && self.max.is_finite()) {
            return Vec::new();
        }
        match self.scale {
            Scale::Nines => {
                let mut t = vec![0.0, 50.0, 90.0];
                let mut p = 99.0;
                while nines(p) <= self.max {
                    t.push(p);
                    p = 100.0 - (100.0 - p) / 10.0;
                }
                t.push(100.0);
                t
            }
            Scale::Log | Scale::LogMicros => {
                if self.min <= 0.0 {
                    return Vec::new();
                }
                // Every decade, or every few when there are more than the ticks.
                let decades = (self.max / self.min).log10().round().max(1.0);
                let stride = (decades / MAX_TICKS as f64).ceil().max(1.0);
                let factor = 10f64.powf(stride);
                let mut t = Vec::new();
                let mut v = self.min;
                while v.is_finite() && v / 1.0001 <= self.max && t.len() <= MAX_TICKS {
                    t.push(v);
                    v *= factor;
                }
                t
            }
            Scale::Linear | Scale::LinearMicros => {
                let span = self.max - self.min;
                let raw = span / 5.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| span / s <= 6.0)
                    .unwrap_or(mag * 10.0);
                if !(step.is_normal() && step.is_finite()) {
                    // A span f64 cannot divide (subnormal, or beyond its range): the ends.
                    return vec![self.min, self.max];
                }
                (0..=((span / step).floor() as usize).min(MAX_TICKS))
                    .map(|i| self.min + i as f64 * step)
                    .collect()
            }
        }
    }
}

/// What a series draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark {
    Line,
    Points,
    /// A filled band: the points are its upper edge left to right, then its lower edge
    /// right to left (a closed outline), drawn translucent so bands that overlap both
    /// show; a flagged band is an outline only.
    Band,
}

/// A named set of points in one colour.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub mark: Mark,
    pub points: Vec<(f64, f64)>,
    /// Measured under conditions that cannot carry a comparison (a late generator, a
    /// saturated API): drawn with hollow marks (rings along a line), its legend swatch
    /// hollow.
    pub flagged: bool,
}

/// A labelled bar group: one bar per series value.
#[derive(Debug, Clone)]
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// One bar: its series' name and colour, its value, and its 95% interval, drawn as a
/// whisker when known.
#[derive(Debug, Clone)]
pub struct Bar {
    pub name: String,
    pub color: &'static str,
    pub value: f64,
    pub interval: Option<(f64, f64)>,
    /// Measured under a warning: drawn hollow.
    pub flagged: bool,
}

impl Bar {
    pub fn new(name: impl Into<String>, color: &'static str, value: f64) -> Bar {
        Bar {
            name: name.into(),
            color,
            value,
            interval: None,
            flagged: false,
        }
    }
}

/// A vertical marker line with a label.
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub label: String,
    pub color: &'static str,
}

/// A stretch of the x axis (a drain: from the last response to the last byte read):
/// a dashed line at each end and a bracket between them, labelled beside it.
#[derive(Debug, Clone)]
pub struct Span {
    pub from: f64,
    pub to: f64,
    pub label: String,
    pub color: &'static str,
}

/// A span with its label placed: the span, its ends' x, the label's x and anchor, and
/// the label's baseline.
type PlacedSpan<'a> = (&'a Span, f64, f64, f64, &'static str, f64);

/// Each label goes beside its span (right of it if it fits in the plot, else left), on
/// the first row where it and its bracket touch no earlier label or bracket. Returns
/// the placements and how many rows they take.
fn place_span_labels<'a>(x: &Axis, spans: &'a [Span]) -> (Vec<PlacedSpan<'a>>, usize) {
    let pw = W - LEFT - RIGHT;
    let px = |v: f64| LEFT + pw * x.fraction(v);
    let mut rows: Vec<f64> = Vec::new();
    let mut ordered: Vec<&Span> = spans.iter().collect();
    ordered.sort_by(|a, b| a.from.total_cmp(&b.from));
    let mut placed = Vec::new();
    for m in ordered {
        let (x0, x1) = (px(m.from), px(m.to));
        let width = estimated_text_width(&m.label, 10.0);
        let right = x1 + 3.0 + width <= LEFT + pw;
        let (tx, anchor) = if right {
            (x1 + 3.0, "start")
        } else {
            (x0 - 3.0, "end")
        };
        let (start, end) = if right {
            (x0, x1 + 3.0 + width)
        } else {
            (x0 - 3.0 - width, x1)
        };
        let row = match rows.iter().position(|&edge| start > edge + 4.0) {
            Some(r) => {
                rows[r] = end;
                r
            }
            None => {
                rows.push(end);
                rows.len() - 1
            }
        };
        placed.push((m, x0, x1, tx, anchor, TOP + 12.0 + 13.0 * row as f64));
    }
    (placed, rows.len())
}

/// The height of the labels' band at the top of a plot whose span labels take `rows`
/// rows (see `xy_with_spans`): row r's text sits on TOP + 12 + 13r, its bracket
/// above the baseline, its descenders 3 px below.
fn span_band(rows: usize) -> f64 {
    if rows == 0 {
        0.0
    } else {
        13.0 * rows as f64 + 4.0
    }
}

/// The value a linear axis from zero must reach so that data up to `max` stays below
/// the labels of `spans` on an `x` axis (in the rows `xy_with_spans` will place them
/// in): fit the axis to the data and this. The band is given at most 40% of the plot;
/// labels that need more rows than that (a dozen spans that all overlap) reach down
/// into the data.
pub fn clear_of_span_labels(max: f64, x: &Axis, spans: &[Span]) -> f64 {
    let ph = H - TOP - BOTTOM;
    let band = span_band(place_span_labels(x, spans).1).min(0.4 * ph);
    // A pixel of air between the highest point and the band.
    max * ph / (ph - band - 1.0)
}

/// The ink of "flagged" where no series colour applies (the legend's explanation, a
/// heatmap's cells).
pub const FLAGGED_COLOR: &str = "#555";

/// A hollow ring at (x, y): the mark of a flagged value.
pub(super) fn ring(x: f64, y: f64, color: &str) -> String {
    format!(
        r##"<path d="M{a:.1},{y:.1} a3.5,3.5 0 1,0 7,0 a3.5,3.5 0 1,0 -7,0" fill="#fff" stroke="{color}" stroke-width="1.5" class="flagged"/>"##,
        a = x - 3.5
    )
}

const W: f64 = 640.0;
const H: f64 = 340.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 64.0;
/// The font size of tick labels (`.tick` in the report's CSS).
const TICK_PX: f64 = 10.0;
/// The font size of legend entries (`.legend`).
const LEGEND_PX: f64 = 11.0;

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label a reader reads at a glance: 0.001, 0.5, 20, 1k, 10k, 1M, 1G (never 1e3).
pub(super) fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e9 {
        format!("{}G", fmt_tick(v / 1e9))
    } else if v.abs() >= 1e6 {
        format!("{}M", fmt_tick(v / 1e6))
    } else if v.abs() >= 1e3 {
        format!("{}k", fmt_tick(v / 1e3))
    } else if v.abs() < 0.01 {
        // Shortest round-trip form: 0.001, 0.0025.
        format!("{v}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

/// `v` to three significant figures (587.39 → 587, 0.2634 → 0.263).
pub(super) fn round3(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(2 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// A duration in µs as a tick label: 10 µs, 100 µs, 1 ms, 10 s.
fn fmt_micros(us: f64) -> String {
    let (v, unit) = if us >= 1e6 {
        (us / 1e6, "s")
    } else if us >= 1e3 {
        (us / 1e3, "ms")
    } else {
        (us, "µs")
    };
    format!("{} {unit}", fmt_tick(v))
}

/// A generous width estimate for text in the charts' sans-serif font: wide enough that
/// labels placed by it do not overlap, without measuring fonts.
fn estimated_text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * 0.62
}

fn frame(out: &mut String, title: &str, x: &Axis, y: &Axis, x_ticks: bool) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{t}"><title>{t}</title><text x="{cx}" y="18" class="title">{t}</text>"#,
        t = esc(title),
        cx = LEFT + pw / 2.0
    );
    for t in y.ticks() {
        let py = TOP + ph * (1.0 - y.fraction(t));
        let _ = write!(
            out,
            r#"<line x1="{LEFT}" x2="{x2}" y1="{py:.1}" y2="{py:.1}" class="grid"/><text x="{tx}" y="{ty:.1}" class="tick" text-anchor="end">{v}</text>"#,
            x2 = LEFT + pw,
            tx = LEFT - 6.0,
            ty = py + 4.0,
            v = y.scale.label(t)
        );
    }
    if x_ticks {
        // A label that would overlap the one before it is left out (its grid line
        // stays); the last one (the axis end, `max` on a nines axis) always shows.
        let ticks: Vec<(f64, String)> = x
            .ticks()
            .into_iter()
            .map(|t| {
                let label = if x.scale == Scale::Nines && t >= 100.0 {
                    "max".to_owned()
                } else {
                    fmt_tick(t)
                };
                (LEFT + pw * x.fraction(t), label)
            })
            .collect();
        let half = |label: &str| estimated_text_width(label, TICK_PX) / 2.0 + 2.0;
        let mut shown = vec![false; ticks.len()];
        let mut right_edge = f64::MIN;
        for (i, (px, label)) in ticks.iter().enumerate() {
            let last = i + 1 == ticks.len();
            let clear_of_last = ticks
                .last()
                .is_none_or(|(end, l)| last || px + half(label) <= end - half(l));
            if px - half(label) >= right_edge && clear_of_last {
                shown[i] = true;
                right_edge = px + half(label);
            }
        }
        for ((px, label), shown) in ticks.iter().zip(shown) {
            let _ = write!(
                out,
                r#"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{y2}" class="grid"/>"#,
                y2 = TOP + ph,
            );
            if shown {
                let _ = write!(
                    out,
                    r#"<text x="{px:.1}" y="{ty}" class="tick" text-anchor="middle">{v}</text>"#,
                    ty = TOP + ph + 16.0,
                    v = esc(label),
                );
            }
        }
    }
    let _ = write!(
        out,
        r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="plot"/><text x="{cx}" y="{ly}" class="axis" text-anchor="middle">{xl}</text><text x="16" y="{cy}" class="axis" text-anchor="middle" transform="rotate(-90 16 {cy})">{yl}</text>"#,
        cx = LEFT + pw / 2.0,
        ly = H - 10.0,
        xl = esc(&x.label),
        cy = TOP + ph / 2.0,
        yl = esc(&y.label)
    );
}

/// One legend entry: a swatch in the series' colour, hollow for a flagged series.
struct Entry {
    name: String,
    color: &'static str,
    hollow: bool,
}

/// The entry that explains hollow marks, last in a legend that has any.
fn flagged_entry() -> Entry {
    Entry {
        name: "hollow: flagged, see the warnings".into(),
        color: FLAGGED_COLOR,
        hollow: true,
    }
}

/// `text` in lines that fit `width` px: broken at spaces, then at hyphens, then
/// anywhere, so a long name wraps instead of running out of the chart.
fn fit_lines(text: &str, width: f64, font_px: f64) -> Vec<String> {
    let max = ((width / (font_px * 0.62)) as usize).max(4);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word = word.to_owned();
        loop {
            let joined = if line.is_empty() {
                word.clone()
            } else {
                format!("{line} {word}")
            };
            if joined.chars().count() <= max {
                line = joined;
                break;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than a line: after its last hyphen that fits, else cut.
            let head: String = word.chars().take(max).collect();
            let cut = head
                .rfind('-')
                .filter(|&i| i + 1 >= max / 2)
                .map_or(head.len(), |i| i + 1);
            lines.push(word[..cut].to_owned());
            word = word[cut..].to_owned();
        }
    }
    lines.push(line);
    lines
}

/// Draws the legend right of the plot; returns the y its last line ends at.
fn legend(out: &mut String, entries: &[Entry]) -> f64 {
    let x = W - RIGHT + 12.0;
    let mut y = TOP + 8.0;
    for e in entries {
        let swatch = if e.hollow {
            format!(r##"fill="#fff" stroke="{}" stroke-width="1.5""##, e.color)
        } else {
            format!(r#"fill="{}""#, e.color)
        };
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{ry}" width="9" height="9" {swatch}/>"#,
            ry = y - 8.5
        );
        for line in fit_lines(&e.name, RIGHT - 30.0, LEGEND_PX) {
            let _ = write!(
                out,
                r#"<text x="{tx}" y="{y}" class="legend">{n}</text>"#,
                tx = x + 14.0,
                n = esc(&line)
            );
            y += 13.0;
        }
        y += 3.0;
    }
    y
}

/// Grows a chart's height (its `viewBox`) to `height` when its content needs more.
fn grow_to(out: String, height: f64) -> String {
    if height <= H {
        return out;
    }
    out.replacen(
        &format!("viewBox=\"0 0 {W} {H}\""),
        &format!("viewBox=\"0 0 {W} {height:.0}\""),
        1,
    )
}

/// A chart of lines and/or points, with labelled vertical markers.
pub fn xy(title: &str, x: &Axis, y: &Axis, series: &[Series], markers: &[Marker]) -> String {
    let spans: Vec<Span> = markers
        .iter()
        .map(|m| Span {
            from: m.x,
            to: m.x,
            label: m.label.clone(),
            color: m.color,
        })
        .collect();
    xy_with_spans(title, x, y, series, &spans)
}

/// A chart of lines and/or points, with labelled spans of the x axis (a span from a
/// point to itself is a marker line).
pub fn xy_with_spans(title: &str, x: &Axis, y: &Axis, series: &[Series], spans: &[Span]) -> String {
    let mut out = String::new();
    frame(&mut out, title, x, y, true);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let px = |v: f64| LEFT + pw * x.fraction(v);
    let py = |v: f64| TOP + ph * (1.0 - y.fraction(v));
    for s in series {
        match s.mark {
            Mark::Line if s.points.len() > 1 => {
                let mut d = String::new();
                for (i, &(a, b)) in s.points.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1}",
                        if i == 0 { "M" } else { " L" },
                        px(a),
                        py(b)
                    );
                }
                let _ = write!(
                    out,
                    r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.8"><title>{}</title></path>"#,
                    s.color,
                    esc(&s.name)
                );
                if s.flagged {
                    // Rings along the line, about eight, none at its very ends.
                    let step = (s.points.len() / 8).max(1);
                    for &(a, b) in s.points.iter().skip(step / 2).step_by(step) {
                        out.push_str(&ring(px(a), py(b), s.color));
                    }
                }
            }
            Mark::Band if s.points.len() > 2 => {
                let mut d = String::new();
                for (i, &(a, b)) in s.points.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1}",
                        if i == 0 { "M" } else { " L" },
                        px(a),
                        py(b)
                    );
                }
                let paint = if s.flagged {
                    format!(r#"fill="none" stroke="{}" stroke-width="1.2""#, s.color)
                } else {
                    format!(
                        r#"fill="{c}" fill-opacity="0.22" stroke="{c}" stroke-width="1.2""#,
                        c = s.color
                    )
                };
                let _ = write!(
                    out,
                    r#"<path d="{d} Z" {paint}><title>{}</title></path>"#,
                    esc(&s.name)
                );
            }
            _ => {
                let mut d = String::new();
                for &(a, b) in &s.points {
                    // A tiny closed path per point keeps every mark a <path>.
                    let _ = write!(
                        d,
                        "M{:.1},{:.1} m-2,0 a2,2 0 1,0 4,0 a2,2 0 1,0 -4,0 ",
                        px(a),
                        py(b)
                    );
                }
                let paint = if s.flagged {
                    format!(r#"fill="none" stroke="{}" stroke-width="1""#, s.color)
                } else {
                    format!(r#"fill="{}" fill-opacity="0.7""#, s.color)
                };
                let _ = write!(
                    out,
                    r#"<path d="{d}" {paint}><title>{}</title></path>"#,
                    esc(&s.name)
                );
            }
        }
    }
    // The labels in their band at the top of the plot (see `place_span_labels`): the
    // dashed lines start below it, and an axis fitted with `clear_of_span_labels` keeps
    // the series below it, so no line crosses a label.
    let (placed, rows) = place_span_labels(x, spans);
    let band_bottom = TOP + span_band(rows);
    for (m, x0, x1, _, _, _) in &placed {
        for at in [x0, x1].iter().take(if x1 > x0 { 2 } else { 1 }) {
            let _ = write!(
                out,
                r#"<path d="M{at:.1},{band_bottom:.1} L{at:.1},{y2}" stroke="{c}" stroke-dasharray="4 3" stroke-width="1.2"/>"#,
                y2 = TOP + ph,
                c = m.color,
            );
        }
    }
    for &(m, x0, x1, tx, anchor, ty) in &placed {
        if x1 > x0 {
            let by = ty - 3.5;
            let _ = write!(
                out,
                r#"<path d="M{x0:.1},{a:.1} L{x0:.1},{b:.1} M{x0:.1},{by:.1} L{x1:.1},{by:.1} M{x1:.1},{a:.1} L{x1:.1},{b:.1}" stroke="{c}" stroke-width="1.5" fill="none"/>"#,
                a = by - 3.0,
                b = by + 3.0,
                c = m.color,
            );
        }
        let _ = write!(
            out,
            r##"<text x="{tx:.1}" y="{ty}" class="marker" fill="{c}" text-anchor="{anchor}" stroke="#fff" stroke-width="3" paint-order="stroke">{l}</text>"##,
            c = m.color,
            l = esc(&m.label)
        );
    }
    let mut entries: Vec<Entry> = series
        .iter()
        .map(|s| Entry {
            name: s.name.clone(),
            color: s.color,
            hollow: s.flagged,
        })
        .collect();
    if series.iter().any(|s| s.flagged) {
        entries.push(flagged_entry());
    }
    let legend_end = legend(&mut out, &entries);
    out.push_str("</svg>");
    grow_to(out, legend_end)
}

/// Grouped values: one group per label, one value per entry, each with its 95%
/// interval as a whisker and its value written beside it (a static page has no
/// hover). On a linear axis, bars from zero; on a log axis, dots (a log axis has no
/// zero, so a bar's length there would say nothing). A flagged value is hollow.
pub fn bars(title: &str, y_label: &str, scale: Scale, groups: &[BarGroup]) -> String {
    let mut out = String::new();
    let y = Axis::fit(
        y_label,
        scale,
        groups
            .iter()
            .flat_map(|g| &g.bars)
            .flat_map(|b| std::iter::once(b.value).chain(b.interval.map(|(_, hi)| hi))),
    );
    let x = Axis {
        label: String::new(),
        scale: Scale::Linear,
        min: 0.0,
        max: 1.0,
    };
    frame(&mut out, title, &x, &y, false);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let base = TOP + ph;
    let py = |v: f64| base - ph * y.fraction(v);
    let group_w = pw / groups.len().max(1) as f64;
    // Horizontal two-line labels if every line fits its group, with a little air.
    let widest = groups
        .iter()
        .flat_map(|g| label_lines(&g.label))
        .map(|l| estimated_text_width(l, TICK_PX))
        .fold(0.0, f64::max);
    let vertical = widest + 6.0 > group_w;
    let longest = groups
        .iter()
        .map(|g| estimated_text_width(&g.label, TICK_PX))
        .fold(0.0, f64::max);
    let mut entries: Vec<Entry> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let gx = LEFT + gi as f64 * group_w;
        let bar_w = (group_w * 0.8) / g.bars.len().max(1) as f64;
        for (bi, bar) in g.bars.iter().enumerate() {
            let (name, color, v) = (&bar.name, bar.color, bar.value);
            let bx = gx + group_w * 0.1 + bi as f64 * bar_w;
            let mx = bx + bar_w * 0.45;
            let vy = py(v);
            let paint = if bar.flagged {
                format!(r##"fill="#fff" stroke="{color}" stroke-width="1.5""##)
            } else {
                format!(r#"fill="{color}""#)
            };
            // The mark's extent: a bar from the axis, or a dot.
            // The mark: a dot, drawn over its whisker, or a bar from the axis, under it.
            let title = format!("<title>{}: {}</title>", esc(name), scale.label(v));
            let (mark, mark_top, mark_bottom) = if scale.is_log() {
                let d = format!("M{:.1},{vy:.1} a4,4 0 1,0 8,0 a4,4 0 1,0 -8,0", mx - 4.0);
                (
                    format!(r#"<path d="{d}" {paint}>{title}</path>"#),
                    vy - 4.0,
                    vy + 4.0,
                )
            } else {
                let r = bx + bar_w * 0.9;
                let d = format!(
                    "M{bx:.1},{base:.1} L{bx:.1},{vy:.1} L{r:.1},{vy:.1} L{r:.1},{base:.1} Z"
                );
                (format!(r#"<path d="{d}" {paint}>{title}</path>"#), vy, base)
            };
            if !scale.is_log() {
                out.push_str(&mark);
            }
            // The interval as a whisker with caps, over the mark's middle.
            let (top, bottom) = match bar.interval {
                Some((lo, hi)) => {
                    let (ylo, yhi) = (py(lo), py(hi));
                    let cap = (bar_w * 0.25).min(4.0);
                    let _ = write!(
                        out,
                        r##"<path d="M{mx:.1},{ylo:.1} L{mx:.1},{yhi:.1} M{a:.1},{ylo:.1} L{b:.1},{ylo:.1} M{a:.1},{yhi:.1} L{b:.1},{yhi:.1}" stroke="#222" stroke-width="1.2" fill="none"><title>{n}: 95% interval {lo:.2} to {hi:.2}</title></path>"##,
                        a = mx - cap,
                        b = mx + cap,
                        n = esc(name)
                    );
                    (yhi.min(mark_top), ylo.max(mark_bottom))
                }
                None => (mark_top, mark_bottom),
            };
            if scale.is_log() {
                out.push_str(&mark);
            }
            // The value to three figures, read upward: above the mark (and its
            // whisker), or when it would cross the plot's top, inside a bar's top or
            // below a dot.
            let value_label = scale.label(round3(v));
            let cx = mx + 3.0;
            let below = top - TOP < estimated_text_width(&value_label, TICK_PX) + 8.0;
            let (ty, anchor) = match (below, scale.is_log()) {
                (false, _) => (top - 4.0, "start"),
                (true, false) => (mark_top + 4.0, "end"),
                (true, true) => (bottom + 4.0, "end"),
            };
            let white = below && !scale.is_log() && !bar.flagged;
            let _ = write!(
                out,
                r#"<text x="{cx:.1}" y="{ty:.1}" class="tick" text-anchor="{anchor}"{fill} transform="rotate(-90 {cx:.1} {ty:.1})">{l}</text>"#,
                fill = if white { " style=\"fill:#fff\"" } else { "" },
                l = value_label
            );
            if !entries.iter().any(|e| &e.name == name) {
                entries.push(Entry {
                    name: name.clone(),
                    color,
                    hollow: false,
                });
            }
        }
        group_label(&mut out, &g.label, gx + group_w / 2.0, base, vertical);
    }
    if groups.iter().flat_map(|g| &g.bars).any(|b| b.flagged) {
        entries.push(flagged_entry());
    }
    let legend_end = legend(&mut out, &entries);
    out.push_str("</svg>");
    // Room below the plot for the longest label, read upward.
    let labels_end = if vertical {
        H - BOTTOM + 14.0 + longest
    } else {
        H
    };
    grow_to(out, labels_end.max(legend_end))
}

/// A group's label under the plot: `condition / sink` on two centred lines when they
/// fit the group's width, else one line read upward (the chart grows to hold it).
/// Slanted labels were tried first: their boxes overlapped their neighbours' and the
/// axis's tick labels (the browser test measures them).
fn group_label(out: &mut String, label: &str, cx: f64, axis_y: f64, vertical: bool) {
    if vertical {
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y:.1}" class="tick" text-anchor="end" transform="rotate(-90 {x:.1} {y:.1})">{l}</text>"#,
            x = cx + 3.0,
            y = axis_y + 8.0,
            l = esc(label)
        );
        return;
    }
    for (i, line) in label_lines(label).iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{cx:.1}" y="{y:.1}" class="tick" text-anchor="middle">{l}</text>"#,
            y = axis_y + 14.0 + i as f64 * 12.0,
            l = esc(line)
        );
    }
}

/// `condition / sink` as two lines; anything else as one.
fn label_lines(label: &str) -> Vec<&str> {
    match label.split_once(" / ") {
        Some((a, b)) => vec![a, b],
        None => vec![label],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value's label has three figures, and one whose mark sits too near the plot's
    /// top for the label to fit above it goes below the dot instead (end-anchored,
    /// reading upward from under it): it never crosses the top edge.
    #[test]
    fn value_labels_have_three_figures_and_stay_inside_the_plot() {
        let group = |value_us: f64| BarGroup {
            label: "slow sink / p50".into(),
            bars: vec![
                Bar::new("none", PALETTE[0], 364.45),
                Bar::new("json-sync", PALETTE[1], value_us),
            ],
        };
        let chart = bars("t", "latency", Scale::LogMicros, &[group(834_600.0)]);
        assert!(chart.contains(">835 ms</text>"), "{chart}");
        assert!(chart.contains(">364 µs</text>"), "{chart}");
        // The largest value tops the axis: its label goes below its dot.
        let top_label = chart
            .split("<text")
            .find(|t| t.contains(">835 ms<"))
            .unwrap();
        assert!(top_label.contains("text-anchor=\"end\""), "{top_label}");
        let low_label = chart
            .split("<text")
            .find(|t| t.contains(">364 µs<"))
            .unwrap();
        assert!(low_label.contains("text-anchor=\"start\""), "{low_label}");
    }

    /// CIELAB of an sRGB colour as seen with `deficiency` (Machado, Oliveira and
    /// Fernandes 2009, severity 1), or as it is.
    fn seen_lab(hex: &str, deficiency: Option<[[f64; 3]; 3]>) -> [f64; 3] {
        let channel = |i: usize| {
            let c = u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap() as f64 / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let mut rgb = [channel(0), channel(1), channel(2)];
        if let Some(m) = deficiency {
            rgb = [0, 1, 2].map(|i| {
                (0..3)
                    .map(|j| m[i][j] * rgb[j])
                    .sum::<f64>()
                    .clamp(0.0, 1.0)
            });
        }
        let [r, g, b] = rgb;
        let xyz = [
            (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
            0.2126 * r + 0.7152 * g + 0.0722 * b,
            (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
        ];
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        let [fx, fy, fz] = xyz.map(f);
        [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
    }

    /// The room the backlog chart keeps for its drain labels is the rows they are
    /// placed in, not one row a label: two spans far apart share a row; a crowd of
    /// overlapping ones is given at most 40% of the plot, never a negative height.
    #[test]
    fn span_labels_take_the_rows_they_are_placed_in_and_at_most_two_fifths() {
        let x = Axis {
            label: String::new(),
            scale: Scale::Linear,
            min: 0.0,
            max: 10.0,
        };
        let span = |from: f64, to: f64| Span {
            from,
            to,
            label: "x drain 0.5 s".into(),
            color: PALETTE[0],
        };
        let ph = H - TOP - BOTTOM;
        let apart = [span(0.5, 1.0), span(6.0, 6.5)];
        assert_eq!(place_span_labels(&x, &apart).1, 1);
        let one_row = 100.0 * ph / (ph - span_band(1) - 1.0);
        assert!((clear_of_span_labels(100.0, &x, &apart) - one_row).abs() < 1e-9);
        let crowd: Vec<Span> = (0..22).map(|i| span(5.0 + i as f64 * 0.01, 9.0)).collect();
        assert_eq!(place_span_labels(&x, &crowd).1, 22);
        let clear = clear_of_span_labels(100.0, &x, &crowd);
        assert!(clear.is_finite() && clear > 100.0, "{clear}");
        assert!(clear <= 100.0 * ph / (0.6 * ph - 1.0) + 1e-9, "{clear}");
    }

    /// The lab's seven default conditions get seven colours that no common colour
    /// vision confuses: every two at least ΔE 24 apart (CIE76), as seen with normal
    /// vision, protanopia, deuteranopia and tritanopia.
    #[test]
    fn a_default_runs_colours_are_told_apart_by_every_kind_of_vision() {
        const PROTAN: [[f64; 3]; 3] = [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ];
        const DEUTAN: [[f64; 3]; 3] = [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ];
        const TRITAN: [[f64; 3]; 3] = [
            [1.255528, -0.076749, -0.178779],
            [-0.078411, 0.930809, 0.147602],
            [0.004733, 0.691367, 0.303900],
        ];
        let defaults = 7;
        for (vision, m) in [
            ("normal", None),
            ("protanopia", Some(PROTAN)),
            ("deuteranopia", Some(DEUTAN)),
            ("tritanopia", Some(TRITAN)),
        ] {
            for (i, a) in PALETTE[..defaults].iter().enumerate() {
                for b in &PALETTE[i + 1..defaults] {
                    let (la, lb) = (seen_lab(a, m), seen_lab(b, m));
                    let de = (0..3).map(|k| (la[k] - lb[k]).powi(2)).sum::<f64>().sqrt();
                    assert!(de >= 24.0, "{a} and {b} are ΔE {de:.1} apart with {vision}");
                }
            }
        }
        for c in PALETTE {
            assert!(
                seen_lab(c, None)[0] <= 72.0,
                "{c} is too light for a line on white"
            );
        }
        let mut unique = PALETTE.to_vec();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), PALETTE.len(), "no colour twice");
    }

    #[test]
    fn tick_labels_read_at_a_glance() {
        let labels: Vec<String> = [0.001, 0.5, 20.0, 1e3, 2.5e4, 1e6, 1e9]
            .into_iter()
            .map(fmt_tick)
            .collect();
        assert_eq!(labels, ["0.001", "0.5", "20", "1k", "25k", "1M", "1G"]);
        let micros: Vec<String> = [10.0, 1e3, 1e4, 2e6].into_iter().map(fmt_micros).collect();
        assert_eq!(micros, ["10 µs", "1 ms", "10 ms", "2 s"]);
    }

    #[test]
    fn the_maximum_sits_at_the_end_of_a_nines_axis_and_labels_do_not_collide() {
        let x = Axis {
            label: "percentile".into(),
            scale: Scale::Nines,
            min: 0.0,
            max: 40f64.log10(),
        };
        assert_eq!(x.fraction(100.0), 1.0);
        assert_eq!(x.fraction(0.0), 0.0);
        assert!((x.fraction(90.0) - 1.0 / 40f64.log10()).abs() < 1e-9);
        let y = Axis::fit("latency", Scale::LogMicros, [100.0, 5e4]);
        let chart = xy("t", &x, &y, &[], &[]);
        // (x, label) of every x tick label drawn.
        let labels: Vec<(f64, &str)> = chart
            .split("<text x=\"")
            .skip(1)
            .filter(|t| t.contains(r#"class="tick" text-anchor="middle">"#))
            .map(|t| {
                let x: f64 = t.split('"').next().unwrap().parse().unwrap();
                let label = t.split('>').nth(1).unwrap().split('<').next().unwrap();
                (x, label)
            })
            .collect();
        for pair in labels.windows(2) {
            let gap = pair[1].0 - pair[0].0;
            let room = (estimated_text_width(pair[0].1, TICK_PX)
                + estimated_text_width(pair[1].1, TICK_PX))
                / 2.0;
            assert!(gap >= room, "{pair:?} overlap");
        }
        let names: Vec<&str> = labels.iter().map(|l| l.1).collect();
        assert_eq!(names, ["0", "50", "90", "max"]);
    }

    /// Whatever the values (1e308, subnormal, the ends of f64), an axis has a bounded
    /// number of ticks: a subnormal maximum once asked for usize::MAX of them (a
    /// `capacity overflow` panic), and a log axis at 1e-324 looped on zero forever.
    #[test]
    fn axes_have_bounded_ticks_whatever_the_values() {
        let extremes = [
            vec![1e308],
            vec![f64::MAX],
            vec![5e-324],
            vec![f64::MIN_POSITIVE],
            vec![5e-324, 1e308],
            vec![-f64::MAX, f64::MAX],
            vec![f64::INFINITY, f64::NAN],
            vec![0.0],
            vec![],
        ];
        for scale in [
            Scale::Linear,
            Scale::LinearMicros,
            Scale::Log,
            Scale::LogMicros,
        ] {
            for values in &extremes {
                let a = Axis::fit("v", scale, values.iter().copied());
                assert!(
                    a.min.is_finite() && a.max.is_finite(),
                    "{scale:?} {values:?}: {a:?}"
                );
                let ticks = a.ticks();
                assert!(
                    ticks.len() <= MAX_TICKS + 1,
                    "{scale:?} {values:?}: {ticks:?}"
                );
                assert!(
                    ticks.iter().all(|t| t.is_finite()),
                    "{scale:?} {values:?}: {ticks:?}"
                );
                // The chart around it is bounded too.
                let svg = xy(
                    "t",
                    &a,
                    &a,
                    &[Series {
                        name: "s".into(),
                        color: PALETTE[0],
                        mark: Mark::Line,
                        points: values.iter().map(|&v| (v, v)).collect(),
                        flagged: false,
                    }],
                    &[],
                );
                assert!(
                    svg.len() < 100_000,
                    "{scale:?} {values:?}: {} bytes",
                    svg.len()
                );
            }
        }
        for (min, max) in [
            (0.0, f64::INFINITY),
            (f64::NAN, 1.0),
            (1.0, 1.0),
            (0.0, 1e-320),
        ] {
            for scale in [Scale::Linear, Scale::Log, Scale::Nines] {
                let a = Axis {
                    label: "v".into(),
                    scale,
                    min,
                    max,
                };
                assert!(a.ticks().len() <= MAX_TICKS + 4, "{scale:?} {min} {max}");
            }
        }
    }

    #[test]
    fn log_axes_cover_decades_and_clamp() {
        let a = Axis::fit("ms", Scale::Log, [1.5, 2900.0]);
        assert_eq!((a.min, a.max), (1.0, 10_000.0));
        assert_eq!(a.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10_000.0]);
        assert_eq!(a.fraction(0.0), 0.0);
        assert_eq!(a.fraction(1e9), 1.0);
    }

    #[test]
    fn charts_escape_text_and_draw_paths() {
        let x = Axis::fit("t (s)", Scale::Linear, [0.0, 8.0]);
        let y = Axis::fit("KiB", Scale::Linear, [0.0, 540.0]);
        let svg = xy(
            "<b>",
            &x,
            &y,
            &[Series {
                name: "a&b".into(),
                color: PALETTE[0],
                mark: Mark::Line,
                points: vec![(0.0, 0.0), (8.0, 540.0)],
                flagged: false,
            }],
            &[],
        );
        assert!(svg.contains("&lt;b&gt;") && svg.contains("a&amp;b"));
        assert!(svg.contains("<path d=\"M"));
    }
    #[test]
    fn marker_labels_near_each_other_take_separate_rows() {
        let x = Axis {
            label: "t".into(),
            scale: Scale::Linear,
            min: 0.0,
            max: 10.0,
        };
        let y = Axis::fit("v", Scale::Linear, [1.0]);
        let marker = |at: f64, label: &str| Marker {
            x: at,
            label: label.into(),
            color: "#000",
        };
        let svg = xy(
            "markers",
            &x,
            &y,
            &[],
            &[
                marker(5.0, "first: last response"),
                marker(5.2, "second: last response"),
                marker(9.9, "drained"),
                marker(1.0, "early"),
            ],
        );
        let ys: Vec<f64> = svg
            .match_indices("\" class=\"marker\"")
            .map(|(i, _)| {
                let head = &svg[..i];
                let at = head.rfind("y=\"").unwrap() + 3;
                head[at..].parse().unwrap()
            })
            .collect();
        assert_eq!(ys.len(), 4);
        // "early" and the first label share the top row; the second, 0.2 further,
        // cannot; "drained" is drawn to the left of its line, and must not collide.
        assert_eq!(ys[0], ys[1], "{ys:?}");
        assert_ne!(ys[1], ys[2], "{ys:?}");
        let drained = &svg[..svg.find(">drained<").unwrap()];
        assert!(
            drained[drained.rfind("<text").unwrap()..].contains("text-anchor=\"end\""),
            "kept inside the plot"
        );
    }

    /// The (x, y, estimated width, anchor) of every text of `class`.
    fn texts(svg: &str, class: &str) -> Vec<(f64, f64, f64, String)> {
        svg.split("<text ")
            .skip(1)
            .filter(|t| t.contains(&format!("class=\"{class}\"")))
            .map(|t| {
                let attr = |name: &str| {
                    let at = t.find(&format!(" {name}=\"")).map_or(0, |i| i + 1) + name.len() + 2;
                    t[at..].split('"').next().unwrap().to_owned()
                };
                let text = t.split('>').nth(1).unwrap().split('<').next().unwrap();
                let px = if class == "legend" { LEGEND_PX } else { 10.0 };
                let x = if t.starts_with("x=") {
                    t[3..].split('"').next().unwrap().parse().unwrap()
                } else {
                    attr("x").parse().unwrap()
                };
                (
                    x,
                    attr("y").parse().unwrap(),
                    estimated_text_width(text, px),
                    attr("text-anchor"),
                )
            })
            .collect()
    }

    /// Two drains that end at the same instant (the slow-sink backlog chart: both
    /// queues empty at 2.5 s) get a bracket and a label each, on rows of their own,
    /// inside the plot; the ends are dashed, nothing else is.
    #[test]
    fn spans_that_end_together_do_not_collide() {
        let x = Axis::fit("t", Scale::Linear, [0.0, 2.6]);
        let y = Axis::fit("KiB", Scale::Linear, [150.0]);
        let span = |from: f64, label: &str| Span {
            from,
            to: 2.5,
            label: label.into(),
            color: PALETTE[0],
        };
        let svg = xy_with_spans(
            "t",
            &x,
            &y,
            &[],
            &[
                span(1.95, "json-queue drain 0.55 s"),
                span(2.25, "json-sync drain 0.25 s"),
            ],
        );
        let labels = texts(&svg, "marker");
        assert_eq!(labels.len(), 2);
        assert!((labels[0].1 - labels[1].1).abs() >= 13.0, "{labels:?}");
        for (x, _, width, anchor) in &labels {
            let (start, end) = if anchor == "end" {
                (x - width, *x)
            } else {
                (*x, x + width)
            };
            assert!(start >= LEFT && end <= W - RIGHT, "{labels:?}");
        }
        assert_eq!(
            svg.matches("stroke-dasharray").count(),
            4,
            "a dashed line at each end of each span"
        );
    }

    /// On a log axis a value is a dot (a bar there would start at an arbitrary
    /// baseline: 48.8 ms looked three times 67 µs); on a linear one, a bar from zero.
    /// A flagged value is hollow and the legend explains it; no dashes.
    #[test]
    fn log_scales_draw_dots_and_linear_ones_bars_from_zero() {
        let groups = vec![BarGroup {
            label: "a / slow".into(),
            bars: vec![
                Bar::new("build", PALETTE[0], 67.0),
                Bar {
                    flagged: true,
                    ..Bar::new("logger call", PALETTE[1], 48_800.0)
                },
            ],
        }];
        let log = bars("t", "time", Scale::LogMicros, &groups);
        assert!(!log.contains(" Z\""), "no bar on a log axis");
        assert_eq!(log.matches("a4,4 0 1,0 8,0").count(), 2, "two dots");
        assert!(log.contains(">48.8 ms<") && log.contains(">67 µs<"));
        let linear = bars("t", "time", Scale::LinearMicros, &groups);
        let base = TOP + (H - TOP - BOTTOM);
        assert_eq!(
            linear.matches(&format!(",{base:.1} L")).count(),
            2,
            "both bars start at zero"
        );
        for svg in [&log, &linear] {
            assert!(
                svg.contains("fill=\"#fff\" stroke=\"#E69F00\""),
                "the flagged one is hollow"
            );
            assert!(svg.contains(">hollow: flagged,<"), "and explained");
            assert!(!svg.contains("dasharray"));
        }
    }

    /// A long name wraps inside the legend instead of running out of the chart
    /// (`memory-buffer-50 (flagg` was cut off), and the chart grows to hold it.
    #[test]
    fn legend_names_wrap_inside_the_chart() {
        let series: Vec<Series> = (0..16)
            .map(|i| Series {
                name: format!("a-very-long-condition-name-{i} of an app"),
                color: PALETTE[i % 12],
                mark: Mark::Points,
                points: vec![(1.0, 1.0)],
                flagged: i % 2 == 0,
            })
            .collect();
        let x = Axis::fit("x", Scale::Linear, [1.0]);
        let svg = xy("t", &x, &x, &series, &[]);
        let legend = texts(&svg, "legend");
        assert!(legend.len() > 32, "wrapped: {}", legend.len());
        let height: f64 = svg
            .split("viewBox=\"0 0 640 ")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        for (x, y, width, _) in &legend {
            assert!(x + width <= W && *y <= height, "{x} {y} {width} {height}");
        }
        assert_eq!(
            fit_lines("memory-buffer-100", 130.0, LEGEND_PX),
            ["memory-buffer-100"]
        );
        assert_eq!(
            fit_lines("abcdefghij-klmnopqrstuvwxyz", 80.0, 10.0),
            ["abcdefghij-", "klmnopqrstuv", "wxyz"]
        );
    }
}
