//! The page of a result that has tables and no charts (`loglag load`, `sink`, `emit`,
//! `torture`): its Markdown, as the command printed it, drawn as HTML. Pipe tables
//! become tables; other lines, paragraphs.

use std::fmt::Write as _;

use super::{esc, CSS};

/// The cells of one Markdown table row (`| a | b |`), or `None` for another line.
fn cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(str::trim).collect())
}

/// A Markdown table's alignment row (`|---|--:|`).
fn is_rule(row: &[&str]) -> bool {
    row.iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
}

/// One self-contained page: `title`, then `markdown` drawn as HTML.
pub fn render_tables(title: &str, markdown: &str) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1>",
        t = esc(title)
    );
    let mut lines = markdown.lines().peekable();
    while let Some(line) = lines.next() {
        match cells(line) {
            Some(head) => {
                h.push_str("<table><thead><tr>");
                for c in &head {
                    let _ = write!(h, "<th>{}</th>", esc(c));
                }
                h.push_str("</tr></thead><tbody>");
                while let Some(row) = lines.peek().and_then(|l| cells(l)) {
                    lines.next();
                    if is_rule(&row) {
                        continue;
                    }
                    h.push_str("<tr>");
                    for c in &row {
                        let _ = write!(h, "<td>{}</td>", esc(c));
                    }
                    h.push_str("</tr>");
                }
                h.push_str("</tbody></table>");
            }
            None if line.trim().is_empty() => {}
            None => {
                let _ = write!(h, "<p>{}</p>", esc(line.trim_start_matches('#').trim()));
            }
        }
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_tables_become_tables_and_text_is_escaped() {
        let page = render_tables(
            "loglag load",
            "| url | p99 ms |\n|---|--:|\n| http://a/<x> | 1.5 |\n\nwarning: late & slow\n",
        );
        assert!(page.contains("<th>url</th><th>p99 ms</th>"), "{page}");
        assert!(
            page.contains("<td>http://a/&lt;x&gt;</td><td>1.5</td>"),
            "{page}"
        );
        assert!(!page.contains("--:"), "the rule row is not a row: {page}");
        assert!(page.contains("<p>warning: late &amp; slow</p>"), "{page}");
    }
}
