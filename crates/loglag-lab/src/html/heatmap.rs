//! A grid of values as a heatmap (the sweep preset's batch size × flush interval):
//! the one chart that is not drawn on axes, so it lives beside `svg.rs` and shares its
//! text helpers and its code for "flagged" (a hollow ring).

use std::fmt::Write as _;

use super::svg::{esc, fmt_tick, ring, round3, FLAGGED_COLOR};

/// A grid of values (rows × columns), each cell shaded by its value on a log scale
/// (light: small, dark: large) and labelled with it; a flagged cell carries a hollow
/// ring in its corner, explained under the grid.
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
            let label = match value {
                // Three significant figures are what a cell can carry.
                Some(v) => fmt_tick(round3(v)),
                None => "–".to_owned(),
            };
            let flag_title = if flag { " (flagged)" } else { "" };
            let _ = write!(
                out,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{CELL_W}" height="{CELL_H}" fill="{fill}" stroke="#fff"><title>{r} × {c}: {label}{flag_title}</title></rect><text x="{tx:.1}" y="{ty:.1}" class="tick" text-anchor="middle" style="fill:{ink}">{label}</text>"##,
                r = esc(r),
                c = esc(column),
                tx = x + CELL_W / 2.0,
                ty = y + CELL_H / 2.0 + 4.0,
            );
            if flag {
                // On a white disc, so the ring reads on the darkest cell too.
                let (rx, ry) = (x + CELL_W - 9.0, y + 9.0);
                let _ = write!(
                    out,
                    r##"<circle cx="{rx:.1}" cy="{ry:.1}" r="5.5" fill="#fff"/>{}"##,
                    ring(rx, ry, FLAGGED_COLOR)
                );
            }
        }
    }
    if any_flagged {
        let y = height - 14.0;
        let _ = write!(
            out,
            r#"{}<text x="14" y="{ty:.1}" class="tick">flagged (late generator or saturation): not a basis for comparison</text>"#,
            ring(6.0, y - 3.5, FLAGGED_COLOR),
            ty = y
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cell carries its value to three figures, a flagged one its ring (explained
    /// under the grid, and never a dash), a missing one a dash, and larger values are
    /// darker.
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
        for label in [">587<", ">0.26<", ">–<", ">5.91k<"] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
        assert!(
            svg.contains(">flagged (late generator"),
            "the mark is explained"
        );
        assert!(svg.contains("0.26 (flagged)</title>"));
        assert_eq!(
            svg.matches("class=\"flagged\"").count(),
            2,
            "one ring in the flagged cell, one beside its explanation"
        );
        assert!(
            !svg.contains("dasharray"),
            "a dash means a marker, not a flag"
        );
        let fill = |label: &str| {
            let at = svg.find(&format!("{label}</title></rect>")).unwrap();
            let rect = &svg[svg[..at].rfind("<rect").unwrap()..at];
            rect.split("fill=\"").nth(1).unwrap()[..7].to_owned()
        };
        assert!(
            fill("5.91k") < fill("0.26 (flagged)"),
            "the largest value is the darkest"
        );
    }
}
