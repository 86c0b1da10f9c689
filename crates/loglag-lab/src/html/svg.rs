//! A small SVG chart: axes (linear, log, log of durations, or percentiles spaced by
//! nines), lines, points, bars and vertical markers.
//! Hand-built on purpose (see ARCHITECTURE.md): the output is deterministic text that
//! snapshot tests can pin, it needs no font files, and it stays a few hundred lines.

use std::fmt::Write as _;

/// Okabe–Ito (with its yellow darkened and moved last, for contrast on white), then
/// Paul Tol's muted scheme: colour-blind-safe, and distinct for the twelve conditions.
pub const PALETTE: [&str; 12] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#882255",
    "#44AA99", "#999933", "#AA4499", "#C8B400",
];

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
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

/// A percentile's position on a [`Scale::Nines`] axis.
fn nines(p: f64) -> f64 {
    if p >= 100.0 {
        f64::INFINITY
    } else {
        -(1.0 - p / 100.0).log10()
    }
}

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
            Scale::Linear => (0.0, if max > 0.0 { max * 1.05 } else { 1.0 }),
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
                    (
                        10f64.powf(min_pos.log10().floor()),
                        10f64.powf(max.log10().ceil()).max(min_pos * 10.0),
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
            Scale::Linear => (v - self.min) / (self.max - self.min),
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

    fn ticks(&self) -> Vec<f64> {
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
                let mut t = Vec::new();
                let mut v = self.min;
                while v <= self.max * 1.0001 {
                    t.push(v);
                    v *= 10.0;
                }
                t
            }
            Scale::Linear => {
                let span = self.max - self.min;
                let raw = span / 5.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| span / s <= 6.0)
                    .unwrap_or(mag * 10.0);
                (0..=((span / step).floor() as usize))
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
}

/// A named set of points in one colour.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub mark: Mark,
    pub points: Vec<(f64, f64)>,
    /// Measured under conditions that cannot carry a comparison (a late generator, a
    /// saturated API): drawn dashed or faded, and said so in the legend.
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
}

impl Bar {
    pub fn new(name: impl Into<String>, color: &'static str, value: f64) -> Bar {
        Bar {
            name: name.into(),
            color,
            value,
            interval: None,
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

const W: f64 = 640.0;
const H: f64 = 340.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 64.0;
/// The font size of tick labels (`.tick` in the report's CSS).
const TICK_PX: f64 = 10.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick label a reader reads at a glance: 0.001, 0.5, 20, 1k, 10k, 1M, 1G (never 1e3).
fn fmt_tick(v: f64) -> String {
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
fn round3(v: f64) -> f64 {
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
            v = if y.scale == Scale::LogMicros {
                fmt_micros(t)
            } else {
                fmt_tick(t)
            }
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

fn legend(out: &mut String, entries: &[(String, &'static str)]) {
    for (i, (name, color)) in entries.iter().enumerate() {
        let y = TOP + 8.0 + i as f64 * 16.0;
        let x = W - RIGHT + 12.0;
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{ry}" width="10" height="10" fill="{color}"/><text x="{tx}" y="{ty}" class="legend">{n}</text>"#,
            ry = y - 9.0,
            tx = x + 14.0,
            ty = y,
            n = esc(name)
        );
    }
}

/// A chart of lines and/or points.
pub fn xy(title: &str, x: &Axis, y: &Axis, series: &[Series], markers: &[Marker]) -> String {
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
                    r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.8"{}><title>{}</title></path>"#,
                    s.color,
                    if s.flagged {
                        r#" stroke-dasharray="6 4" stroke-opacity="0.6""#
                    } else {
                        ""
                    },
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
                let _ = write!(
                    out,
                    r#"<path d="{d}" fill="{}" fill-opacity="{}"><title>{}</title></path>"#,
                    s.color,
                    if s.flagged { "0.25" } else { "0.7" },
                    esc(&s.name)
                );
            }
        }
    }
    // Marker labels go on the first row where they do not touch an earlier label; one
    // that would run past the plot is drawn to the left of its line instead.
    let mut rows: Vec<f64> = Vec::new();
    let mut ordered: Vec<&Marker> = markers.iter().collect();
    ordered.sort_by(|a, b| a.x.total_cmp(&b.x));
    for m in ordered {
        let x = px(m.x);
        let width = estimated_text_width(&m.label, 10.0);
        let right_aligned = x + 3.0 + width > LEFT + pw;
        let (start, end) = if right_aligned {
            (x - 3.0 - width, x - 3.0)
        } else {
            (x + 3.0, x + 3.0 + width)
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
        let _ = write!(
            out,
            r#"<path d="M{x:.1},{TOP} L{x:.1},{y2}" stroke="{c}" stroke-dasharray="4 3" stroke-width="1.2"/><text x="{tx:.1}" y="{ty}" class="marker" fill="{c}" text-anchor="{anchor}">{l}</text>"#,
            y2 = TOP + ph,
            c = m.color,
            tx = if right_aligned { x - 3.0 } else { x + 3.0 },
            ty = TOP + 12.0 + 11.0 * row as f64,
            anchor = if right_aligned { "end" } else { "start" },
            l = esc(&m.label)
        );
    }
    legend(
        &mut out,
        &series
            .iter()
            .map(|s| {
                let name = if s.flagged {
                    format!("{} (flagged)", s.name)
                } else {
                    s.name.clone()
                };
                (name, s.color)
            })
            .collect::<Vec<_>>(),
    );
    out.push_str("</svg>");
    out
}

/// Grouped bars: one group per label, one bar per entry.
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
    let mut legend_entries: Vec<(String, &'static str)> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let gx = LEFT + gi as f64 * group_w;
        let bar_w = (group_w * 0.8) / g.bars.len().max(1) as f64;
        for (bi, bar) in g.bars.iter().enumerate() {
            let (name, color, v) = (&bar.name, bar.color, &bar.value);
            let h = ph * y.fraction(*v);
            let bx = gx + group_w * 0.1 + bi as f64 * bar_w;
            let by = TOP + ph - h;
            let _ = write!(
                out,
                r#"<path d="M{bx:.1},{b:.1} L{bx:.1},{by:.1} L{r:.1},{by:.1} L{r:.1},{b:.1} Z" fill="{color}"><title>{n}: {v:.2}</title></path>"#,
                b = TOP + ph,
                r = bx + bar_w * 0.9,
                n = esc(name)
            );
            // The interval as a whisker with caps, over the bar's middle.
            let top = match bar.interval {
                Some((lo, hi)) => {
                    let (ylo, yhi) = (
                        TOP + ph - ph * y.fraction(lo),
                        TOP + ph - ph * y.fraction(hi),
                    );
                    let (mx, cap) = (bx + bar_w * 0.45, (bar_w * 0.25).min(4.0));
                    let _ = write!(
                        out,
                        r##"<path d="M{mx:.1},{ylo:.1} L{mx:.1},{yhi:.1} M{a:.1},{ylo:.1} L{b:.1},{ylo:.1} M{a:.1},{yhi:.1} L{b:.1},{yhi:.1}" stroke="#222" stroke-width="1.2" fill="none"><title>{n}: 95% interval {lo:.2} to {hi:.2}</title></path>"##,
                        a = mx - cap,
                        b = mx + cap,
                        n = esc(name)
                    );
                    yhi.min(by)
                }
                None => by,
            };
            // The value, on the bar, read upward: a static export has no hover. Above
            // the bar (and its whisker), or inside its top when the bar nearly fills
            // the plot.
            let cx = bx + bar_w * 0.45 + 3.0;
            let inside = top - TOP < 40.0;
            let by = if inside { by } else { top };
            let _ = write!(
                out,
                r#"<text x="{cx:.1}" y="{ty:.1}" class="tick" text-anchor="{anchor}"{fill} transform="rotate(-90 {cx:.1} {ty:.1})">{l}</text>"#,
                ty = if inside { by + 4.0 } else { by - 4.0 },
                anchor = if inside { "end" } else { "start" },
                fill = if inside { " style=\"fill:#fff\"" } else { "" },
                // A duration axis labels its bars as durations (6.85 ms, not 6.85k).
                l = if scale == Scale::LogMicros {
                    fmt_micros(*v)
                } else {
                    fmt_tick(*v)
                }
            );
            if !legend_entries.iter().any(|(n, _)| n == name) {
                legend_entries.push((name.clone(), color));
            }
        }
        group_label(
            &mut out,
            &g.label,
            gx + group_w / 2.0,
            TOP + ph,
            group_w,
            vertical,
        );
    }
    legend(&mut out, &legend_entries);
    out.push_str("</svg>");
    if vertical {
        // Room below the plot for the longest label, read upward.
        let tall = H - BOTTOM + 14.0 + longest;
        out = out.replacen(
            &format!("viewBox=\"0 0 {W} {H}\""),
            &format!("viewBox=\"0 0 {W} {tall:.0}\""),
            1,
        );
    }
    out
}

/// A group's label under the plot: `condition / sink` on two centred lines when they
/// fit the group's width, else one line read upward (the chart grows to hold it).
/// Slanted labels were tried first: their boxes overlapped their neighbours' and the
/// axis's tick labels (the browser test measures them).
fn group_label(out: &mut String, label: &str, cx: f64, axis_y: f64, _group_w: f64, vertical: bool) {
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

/// A grid of values (rows × columns), each cell shaded by its value on a log scale
/// (light: small, dark: large) and labelled with it; a flagged cell is drawn with a
/// dashed border and its value marked `*`, explained under the grid.
pub fn heatmap(
    title: &str,
    row_title: &str,
    column_title: &str,
    rows: &[String],
    columns: &[String],
    cells: &[Vec<Option<f64>>],
    flagged: &[Vec<bool>],
) -> String {
    const CELL_W: f64 = 96.0;
    const CELL_H: f64 = 34.0;
    const LABEL_W: f64 = 90.0;
    let top = 58.0;
    let width = LABEL_W + CELL_W * columns.len() as f64 + 20.0;
    let height = top + CELL_H * rows.len() as f64 + 44.0;
    let values: Vec<f64> = cells
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let shade = |v: f64| -> f64 {
        if values.is_empty() || hi <= lo {
            0.5
        } else {
            ((v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln())).clamp(0.0, 1.0)
        }
    };
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{t}"><title>{t}</title><text x="{cx}" y="18" class="title">{t}</text><text x="{cx}" y="38" class="axis" text-anchor="middle">{ct}</text>"#,
        t = esc(title),
        cx = width / 2.0,
        ct = esc(column_title),
    );
    for (ci, c) in columns.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y:.1}" class="tick" text-anchor="middle">{l}</text>"#,
            x = LABEL_W + CELL_W * (ci as f64 + 0.5),
            y = top - 6.0,
            l = esc(c)
        );
    }
    let _ = write!(
        out,
        r#"<text x="4" y="{y:.1}" class="axis">{rt}</text>"#,
        y = top - 6.0,
        rt = esc(row_title)
    );
    let mut any_flagged = false;
    for (ri, r) in rows.iter().enumerate() {
        let y = top + CELL_H * ri as f64;
        let _ = write!(
            out,
            r#"<text x="{x}" y="{ty:.1}" class="tick" text-anchor="end">{l}</text>"#,
            x = LABEL_W - 6.0,
            ty = y + CELL_H / 2.0 + 4.0,
            l = esc(r)
        );
        for (ci, column) in columns.iter().enumerate() {
            let x = LABEL_W + CELL_W * ci as f64;
            let value = cells.get(ri).and_then(|row| row.get(ci)).copied().flatten();
            let flag = flagged
                .get(ri)
                .and_then(|row| row.get(ci))
                .copied()
                .unwrap_or(false);
            any_flagged |= flag;
            let (fill, ink) = match value {
                Some(v) => {
                    let t = shade(v);
                    // From #e8f1fa to #08306b: one hue, darker is larger.
                    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
                    (
                        format!(
                            "#{:02x}{:02x}{:02x}",
                            mix(232.0, 8.0),
                            mix(241.0, 48.0),
                            mix(250.0, 107.0)
                        ),
                        if t > 0.55 { "#fff" } else { "#111" },
                    )
                }
                None => ("#f4f4f4".to_owned(), "#777"),
            };
            let border = if flag {
                r##" stroke="#b60" stroke-width="2" stroke-dasharray="4 3""##
            } else {
                r##" stroke="#fff""##
            };
            let label = match value {
                // Three significant figures are what a cell can carry.
                Some(v) => format!("{}{}", fmt_tick(round3(v)), if flag { " *" } else { "" }),
                None => "–".to_owned(),
            };
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{CELL_W}" height="{CELL_H}" fill="{fill}"{border}><title>{r} × {c}: {label}</title></rect><text x="{tx:.1}" y="{ty:.1}" class="tick" text-anchor="middle" style="fill:{ink}">{label}</text>"#,
                r = esc(r),
                c = esc(column),
                tx = x + CELL_W / 2.0,
                ty = y + CELL_H / 2.0 + 4.0,
            );
        }
    }
    if any_flagged {
        let _ = write!(
            out,
            r#"<text x="4" y="{y:.1}" class="tick">* flagged (late generator or saturation): not a basis for comparison</text>"#,
            y = height - 14.0
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cell carries its value to three figures, a flagged one is marked and
    /// explained, a missing one is a dash, and larger values are darker.
    #[test]
    fn a_heatmap_labels_every_cell_and_marks_flagged_ones() {
        let rows = vec!["4 KiB".to_owned(), "1 MiB".to_owned()];
        let columns = vec!["10 ms".to_owned(), "2000 ms".to_owned()];
        let cells = vec![vec![Some(587.39), Some(0.2634)], vec![None, Some(5910.0)]];
        let flagged = vec![vec![false, true], vec![false, false]];
        let svg = heatmap(
            "t",
            "batch",
            "flush interval",
            &rows,
            &columns,
            &cells,
            &flagged,
        );
        for label in [">587<", ">0.26 *<", ">–<", ">5.91k<"] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
        assert!(svg.contains("* flagged"), "the mark is explained");
        let fill = |label: &str| {
            let at = svg.find(&format!("{label}</title></rect>")).unwrap();
            let rect = &svg[svg[..at].rfind("<rect").unwrap()..at];
            rect.split("fill=\"").nth(1).unwrap()[..7].to_owned()
        };
        assert!(
            fill("5.91k") < fill("0.26 *"),
            "the largest value is the darkest"
        );
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
        assert!(
            svg.contains("text-anchor=\"end\">drained<"),
            "kept inside the plot"
        );
    }
}
