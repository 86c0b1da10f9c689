//! A result directory is untrusted input: it is shared as a CI artefact or attached to
//! a bug, and `loglag report` must be safe to run on one from anybody. What it trusts
//! of the directory's contents is checked here, in one place:
//!
//! - a name that becomes a path (a preset's step, the manifest's summary file) is one
//!   plain component: [`component`];
//! - every URL the pages hold (`href`, `src`) is a relative path inside the directory,
//!   built by [`href`] from such components and percent-encoded, or there is no link;
//! - every figure read is a finite number in a sane range before it reaches a chart:
//!   [`check_figures`] (JSON) and [`figure`] (a CSV's columns).

use std::fmt::Write as _;
use std::path::Path;

use super::LoadError;

/// The largest magnitude a figure read from a result may have. Real figures are far
/// below it (the largest in the fixtures is 8e6 writes a minute); far beyond it, a
/// chart's arithmetic loses all precision or overflows.
pub const MAX_FIGURE: f64 = 1e15;

/// `name` if it is one plain path component: not empty, not `.` or `..`, no `/`,
/// `\` or `:` (no scheme, no drive), no control character, at most 255 bytes. Else
/// why not, in words.
pub fn component(name: &str) -> Result<&str, String> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name == "." || name == ".." {
        "it names a directory by `.` or `..`"
    } else if name.starts_with(['/', '\\']) {
        "it is an absolute path"
    } else if name.split(['/', '\\']).any(|part| part == "..") {
        "it climbs out of the directory (`..`)"
    } else if name.contains(['/', '\\']) {
        "it holds a path separator (a name must be one directory, inside this one)"
    } else if name.contains(':') {
        "it holds a `:` (a URL scheme or a drive)"
    } else if name.chars().any(char::is_control) {
        "it holds a control character"
    } else if name.len() > 255 {
        "it is longer than 255 bytes"
    } else {
        return Ok(name);
    };
    Err(why.to_owned())
}

/// The value of an `href` (or `src`) attribute for the file at `parts`, relative to the
/// page's directory: each part a [`component`], percent-encoded (only `A-Z a-z 0-9 - .
/// _ ~` stay as they are), joined by `/`. `None` when any part is not a plain
/// component: the caller shows the name as escaped text, without a link.
///
/// Every URL a page holds is built here: the value is then a relative path inside the
/// directory (no scheme, no `..`, not absolute) and needs no further escaping in a
/// double-quoted attribute.
pub fn href(parts: &[&str]) -> Option<String> {
    if parts.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        component(part).ok()?;
        if i > 0 {
            out.push('/');
        }
        for &b in part.as_bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    Some(out)
}

/// `v` if it is a figure a chart can draw: finite, not subnormal, at most
/// [`MAX_FIGURE`] in magnitude. Else why not, naming `field`.
pub fn figure(field: &str, v: f64) -> Result<f64, String> {
    if v.is_finite() && (v == 0.0 || v.is_normal()) && v.abs() <= MAX_FIGURE {
        Ok(v)
    } else {
        Err(format!(
            "{field} is {v:e}: a figure must be finite, at most {MAX_FIGURE:e} in magnitude, and not subnormal"
        ))
    }
}

/// Every fractional number in `value` (a result's JSON, read from `file`) checked by
/// [`figure`]; the error names the field by its path (`hops.waterfalls[0].spans[1].
/// start_ms`). Integers are whole counts and always finite: they pass.
pub fn check_figures(file: &Path, value: &serde_json::Value) -> Result<(), LoadError> {
    fn walk(at: &mut String, v: &serde_json::Value) -> Result<(), String> {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                figure(at, n.as_f64().unwrap_or(f64::NAN)).map(|_| ())
            }
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = at.len();
                    let _ = write!(at, "[{i}]");
                    walk(at, item)?;
                    at.truncate(len);
                }
                Ok(())
            }
            serde_json::Value::Object(fields) => {
                for (key, item) in fields {
                    let len = at.len();
                    if !at.is_empty() {
                        at.push('.');
                    }
                    at.push_str(key);
                    walk(at, item)?;
                    at.truncate(len);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    walk(&mut String::new(), value).map_err(|why| LoadError::Corrupt(file.to_owned(), why))
}

/// The values of every URL attribute (`href`, `src`, `action`, `formaction`, `data`,
/// `poster`) in `page` that is not a relative path inside the page's directory as
/// [`href`] builds them: what a test or a fuzz target asserts is empty.
pub fn links_outside(page: &str) -> Vec<String> {
    let lower = page.to_ascii_lowercase();
    let mut bad = Vec::new();
    for attr in ["href=", "src=", "action=", "data=", "poster="] {
        let mut from = 0;
        while let Some(at) = lower[from..].find(attr) {
            let start = from + at + attr.len();
            from = start;
            // Only an attribute: preceded by a space inside a tag (not text that says
            // "href=", whose `<` is escaped).
            let head = &lower[..start - attr.len()];
            let in_tag = head.rfind('<') > head.rfind('>');
            if !in_tag || !head.chars().next_back().is_some_and(char::is_whitespace) {
                continue;
            }
            let value = match page[start..].chars().next() {
                Some(q @ ('"' | '\'')) => page[start + 1..]
                    .split(q)
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                _ => {
                    bad.push(format!(
                        "unquoted {attr}{}",
                        &page[start..].chars().take(40).collect::<String>()
                    ));
                    continue;
                }
            };
            let inside = !value.is_empty()
                && value.split('/').all(|part| {
                    !part.is_empty()
                        && part != "."
                        && part != ".."
                        && part
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b))
                });
            if !inside {
                bad.push(value);
            }
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_is_one_plain_name_and_nothing_else() {
        for ok in [
            "term",
            "64k-10ms",
            "500",
            "spans.otlp.json",
            "été ☃",
            ".hidden",
        ] {
            assert_eq!(component(ok), Ok(ok));
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/etc",
            "a/b",
            "a\\b",
            "javascript:alert(1)",
            "C:",
            "a\nb",
            "a\0b",
            "\u{7f}",
            "\u{85}",
        ] {
            assert!(component(bad).is_err(), "{bad:?} is refused");
        }
        assert!(component(&"x".repeat(256)).is_err());
    }

    #[test]
    fn an_href_is_a_relative_percent_encoded_path_or_none() {
        assert_eq!(
            href(&["term", "report.html"]).as_deref(),
            Some("term/report.html")
        );
        assert_eq!(
            href(&["a b?#%\"<'>&", "x"]).as_deref(),
            Some("a%20b%3F%23%25%22%3C%27%3E%26/x")
        );
        assert_eq!(href(&["é"]).as_deref(), Some("%C3%A9"));
        for bad in [
            &["javascript:alert(1)", "report.html"][..],
            &["..", "report.html"],
            &["", "report.html"],
            &["/etc/passwd"],
            &["a\\b"],
            &["data:text/html,<script>"],
            &[],
        ] {
            assert_eq!(href(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn figures_out_of_range_are_refused_naming_the_field() {
        assert_eq!(figure("x", 0.0), Ok(0.0));
        assert_eq!(figure("x", -1.5e-5), Ok(-1.5e-5));
        assert_eq!(figure("x", 8e6), Ok(8e6));
        for bad in [1e308, -1e16, f64::INFINITY, f64::NAN, 5e-324, 1e-310] {
            let why = figure("spans[0].start_ms", bad).unwrap_err();
            assert!(why.starts_with("spans[0].start_ms is "), "{why}");
        }
        let doc: serde_json::Value = serde_json::from_str(
            r#"{"schema": 2, "hops": {"waterfalls": [{"spans": [{"start_ms": 1.0}, {"start_ms": 1e308}]}]}}"#,
        )
        .unwrap();
        let err = check_figures(Path::new("summary.json"), &doc)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("summary.json")
                && err.contains("hops.waterfalls[0].spans[1].start_ms is 1e308"),
            "{err}"
        );
        let fine: serde_json::Value =
            serde_json::from_str(r#"{"a": [1, 2.5, {"b": 18446744073709551615}]}"#).unwrap();
        assert!(check_figures(Path::new("summary.json"), &fine).is_ok());
    }

    #[test]
    fn links_outside_finds_every_link_that_leaves_the_directory() {
        let page = r#"<a href="term/report.html">x</a><img src='a%20b.png'><p>say href="x" &lt;img src=x&gt;</p>"#;
        assert!(links_outside(page).is_empty(), "{:?}", links_outside(page));
        for bad in [
            r#"<a href="javascript:alert(1)">"#,
            r#"<a HREF="../x/report.html">"#,
            r#"<img src="/etc/passwd">"#,
            r#"<a href=javascript:x>"#,
            r#"<a href="">"#,
            r#"<a href="https://example.com/">"#,
            r#"<form action="x y">"#,
        ] {
            assert_eq!(links_outside(bad).len(), 1, "{bad}");
        }
    }

    /// Hostile result directories, made from the fixtures with strings and numbers
    /// swapped for hostile ones (or from arbitrary bytes), are rendered as `loglag
    /// report` renders them: never a panic, never a page without bound, never a
    /// `<script`, never a link out of the directory. (`fuzz/fuzz_targets/report.rs`
    /// runs the same without a bound on cases.)
    mod hostile {
        use super::super::*;
        use crate::report::{HopsSummary, PresetSummary};
        use proptest::prelude::*;
        use proptest::sample::Index;

        #[derive(Debug, Clone)]
        enum Swap {
            Text(String),
            Number(serde_json::Value),
        }

        fn hostile_text() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("javascript:document.title='pwned'".to_owned()),
                Just("</title><script>document.title='pwned'</script>".to_owned()),
                Just("\" onmouseover=\"document.title='pwned'".to_owned()),
                Just("' onload='x".to_owned()),
                Just("../../outside".to_owned()),
                Just("/etc/passwd".to_owned()),
                Just("data:text/html,<script>1</script>".to_owned()),
                Just("a\u{0}b\u{1b}[31m".to_owned()),
                Just(String::new()),
                Just("..".to_owned()),
                ".{0,24}",
            ]
        }

        fn hostile_number() -> impl Strategy<Value = serde_json::Value> {
            prop_oneof![
                Just(serde_json::json!(1e308)),
                Just(serde_json::json!(-1e308)),
                Just(serde_json::json!(5e-324)),
                Just(serde_json::json!(1e15)),
                Just(serde_json::json!(-1.0)),
                Just(serde_json::json!(0)),
                Just(serde_json::json!(u64::MAX)),
                Just(serde_json::json!(i64::MIN)),
                any::<f64>().prop_map(|v| serde_json::json!(v)),
                any::<u64>().prop_map(|v| serde_json::json!(v)),
            ]
        }

        fn swap() -> impl Strategy<Value = Swap> {
            prop_oneof![
                hostile_text().prop_map(Swap::Text),
                hostile_number().prop_map(Swap::Number),
            ]
        }

        /// The leaves of `v` (strings and numbers), to be swapped by index.
        fn leaves(v: &mut serde_json::Value) -> Vec<&mut serde_json::Value> {
            match v {
                serde_json::Value::Array(items) => items.iter_mut().flat_map(leaves).collect(),
                serde_json::Value::Object(fields) => fields.values_mut().flat_map(leaves).collect(),
                serde_json::Value::String(_) | serde_json::Value::Number(_) => vec![v],
                _ => Vec::new(),
            }
        }

        fn fixture(name: &str) -> serde_json::Value {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name);
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
        }

        fn manifest(kind: &str, summary: &str) -> String {
            format!(
                r#"{{"schema": 2, "kind": "{kind}", "summary": "{summary}", "files": ["{summary}"], "loglag": "0"}}"#
            )
        }

        /// What every page must be.
        fn assert_safe(page: &str) -> Result<(), TestCaseError> {
            prop_assert!(
                !page.to_ascii_lowercase().contains("<script"),
                "a <script in the page"
            );
            let outside = links_outside(page);
            prop_assert!(
                outside.is_empty(),
                "links out of the directory: {:?}",
                outside
            );
            prop_assert!(page.len() < 20 << 20, "a page of {} bytes", page.len());
            Ok(())
        }

        /// Renders `dir` as `loglag report` does; every page it returns is safe and
        /// inside `dir`. An error is a fine answer to a hostile directory.
        fn render(dir: &Path) -> Result<(), TestCaseError> {
            if let Ok(pages) = crate::outputs::render_dir(dir) {
                let root = dir.canonicalize().unwrap();
                for (path, page) in pages {
                    let real = path.parent().unwrap().canonicalize().unwrap();
                    prop_assert!(real.starts_with(&root), "a page at {}", path.display());
                    assert_safe(&page)?;
                }
            }
            Ok(())
        }

        /// Every number and string in every fixture, one at a time, at each edge a
        /// hand-edited file can hold: no page panics and every page is safe (random
        /// swaps find these only by luck, as one did in CI: a start time of `u64::MAX`
        /// seconds).
        #[test]
        fn every_leaf_at_every_edge_renders_safely_or_is_refused() {
            let edges = [
                serde_json::json!(u64::MAX),
                serde_json::json!(i64::MIN),
                serde_json::json!(1e308),
                serde_json::json!(-1e308),
                serde_json::json!(-1.0),
                serde_json::json!(0),
                serde_json::json!("</title><script>document.title='pwned'</script>"),
                serde_json::json!("javascript:document.title='pwned'"),
                serde_json::json!("../../outside"),
                serde_json::json!(""),
            ];
            for (file, name, kind) in [
                ("hops/summary.json", "summary.json", "hops"),
                ("buffers-preset.json", "preset.json", "preset"),
                ("lab/summary.json", "summary.json", "lab"),
            ] {
                let original = fixture(file);
                let count = leaves(&mut original.clone()).len();
                let tmp = tempfile::tempdir().unwrap();
                let dir = tmp.path().join("result");
                std::fs::create_dir(&dir).unwrap();
                std::fs::write(dir.join("manifest.json"), manifest(kind, name)).unwrap();
                if kind == "preset" {
                    for step in ["term", "kill"] {
                        std::fs::create_dir(dir.join(step)).unwrap();
                        std::fs::write(
                            dir.join(step).join("summary.json"),
                            serde_json::to_vec(&fixture("lab/summary.json")).unwrap(),
                        )
                        .unwrap();
                    }
                }
                for at in 0..count {
                    for edge in &edges {
                        let mut doc = original.clone();
                        *leaves(&mut doc)[at] = edge.clone();
                        std::fs::write(dir.join(name), serde_json::to_vec(&doc).unwrap()).unwrap();
                        let rendered = std::panic::catch_unwind(|| render(&dir));
                        match rendered {
                            Ok(Ok(())) => {}
                            Ok(Err(e)) => panic!("{file}: leaf {at} = {edge}: {e}"),
                            Err(_) => panic!("{file}: leaf {at} = {edge}: the render panicked"),
                        }
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

            #[test]
            fn hostile_results_render_safely_or_are_refused(
                which in 0..3usize,
                swaps in proptest::collection::vec((any::<Index>(), swap()), 0..4),
                link in proptest::option::of(hostile_text()),
            ) {
                let (file, name, kind) = [
                    ("hops/summary.json", "summary.json", "hops"),
                    ("buffers-preset.json", "preset.json", "preset"),
                    ("lab/summary.json", "summary.json", "lab"),
                ][which];
                let mut doc = fixture(file);
                {
                    let mut leaves = leaves(&mut doc);
                    for (at, swap) in &swaps {
                        let leaf = at.get_mut(&mut leaves);
                        **leaf = match swap {
                            Swap::Text(t) => serde_json::Value::String(t.clone()),
                            Swap::Number(n) => n.clone(),
                        };
                    }
                }
                // The names that become links, hostile more often than by chance.
                if let Some(link) = link {
                    match kind {
                        "hops" => doc["hops"]["spans_file"] = link.into(),
                        "preset" => doc["steps"][0] = link.into(),
                        _ => {}
                    }
                }
                // The page functions on their own (a refused step is still shown).
                match kind {
                    "hops" => {
                        if let Ok(h) = serde_json::from_value::<HopsSummary>(doc["hops"].clone()) {
                            if check_figures(Path::new(name), &doc).is_ok() {
                                assert_safe(&super::super::super::render_hops(&h))?;
                            }
                        }
                    }
                    "preset" => {
                        if let Ok(p) = serde_json::from_value::<PresetSummary>(doc.clone()) {
                            if check_figures(Path::new(name), &doc).is_ok() {
                                assert_safe(&super::super::super::render_preset(&p))?;
                            }
                        }
                    }
                    _ => {}
                }
                // And as `loglag report DIR` reads them.
                let tmp = tempfile::tempdir().unwrap();
                let dir = tmp.path().join("result");
                std::fs::create_dir(&dir).unwrap();
                std::fs::write(dir.join(name), serde_json::to_vec(&doc).unwrap()).unwrap();
                std::fs::write(dir.join("manifest.json"), manifest(kind, name)).unwrap();
                if kind == "preset" {
                    for step in ["term", "kill"] {
                        std::fs::create_dir(dir.join(step)).unwrap();
                        std::fs::write(dir.join(step).join("summary.json"), serde_json::to_vec(&fixture("lab/summary.json")).unwrap()).unwrap();
                    }
                }
                render(&dir)?;
            }

            #[test]
            fn arbitrary_bytes_as_a_result_render_safely_or_are_refused(
                kind in prop::sample::select(vec!["hops", "preset", "lab", "load", "sink", "emit", "torture"]),
                bytes in proptest::collection::vec(any::<u8>(), 0..512),
                manifest_bytes in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..128)),
            ) {
                let tmp = tempfile::tempdir().unwrap();
                let dir = tmp.path();
                let name = if kind == "preset" { "preset.json" } else { "summary.json" };
                std::fs::write(dir.join(name), &bytes).unwrap();
                std::fs::write(
                    dir.join("manifest.json"),
                    manifest_bytes.unwrap_or_else(|| manifest(kind, name).into_bytes()),
                )
                .unwrap();
                render(dir)?;
            }
        }
    }
}
