//! The HTML report in a real headless Chromium: it renders with no console errors,
//! every chart draws paths, the table has a row per pair, and nothing is fetched; on
//! every kind of page (a lab run's, an `--app` run's, `lab hops`', each preset's, and
//! the step pages of a preset run here), no chart text overlaps another or leaves its
//! SVG.
//!
//! `.ci/run` installs Debian's chromium and sets `LOGLAG_REQUIRE_BROWSER=1`, so in CI a
//! missing browser fails the test; elsewhere it is skipped with a message.

use crate::support;
use std::path::PathBuf;
use support::*;

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

#[test]
fn the_report_renders_in_headless_chromium() {
    // Bounded: a lab child or a chromium that never exits fails the test.
    within(
        "the_report_renders_in_headless_chromium",
        report_in_headless_chromium,
    );
}

fn report_in_headless_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("LOGLAG_REQUIRE_BROWSER").is_none(),
            "LOGLAG_REQUIRE_BROWSER is set but no chromium is installed"
        );
        skip_note!("SKIPPED: no chromium; install Debian's `chromium` to run the browser test");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fixture = root.join("crates/loglag-lab/tests/fixtures/lab");
    let target = root.join("target");
    let work = tempfile::tempdir().unwrap();
    let html = work.path().join("report.html");
    loglag()
        .arg("report")
        .arg(&fixture)
        .arg("-o")
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();

    // Nothing external: no src/href to a URL, no CSS url() or @import.
    for needle in ["src=", "href=\"http", "url(", "@import", "<link", "<script"] {
        assert!(
            !page.contains(needle),
            "the report references something external: {needle}"
        );
    }

    let url = format!("file://{}", html.display());
    let dom = headless(&browser, &work.path().join("profile-dom"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let console = String::from_utf8_lossy(&dom.stderr);
    let errors: Vec<&str> = console
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("ERR_FILE"))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // Every chart drew something.
    let svgs: Vec<&str> = dom_text.split("<svg").skip(1).collect();
    assert_eq!(
        svgs.len(),
        9,
        "charts rendered (the headline's and eight below)"
    );
    // The answer comes first: the headline's sentences, then its chart, before the
    // run's particulars and the tables.
    let answer = &dom_text[dom_text
        .find("<section id=\"answer\"")
        .expect("the headline")..];
    let answer = &answer[..answer.find("</section>").unwrap()];
    assert!(
        answer.contains("<pre>") && answer.contains("<svg"),
        "the headline and its chart"
    );
    assert!(
        dom_text.find("<section id=\"answer\"").unwrap() < dom_text.find("<table").unwrap(),
        "the headline before the tables"
    );
    for svg in &svgs {
        let body = &svg[..svg.find("</svg>").unwrap()];
        assert!(body.contains("<path d=\"M"), "a chart without drawn paths");
    }
    // The columns are defined under the table.
    assert!(
        dom_text.contains("What the columns mean") && dom_text.contains("<dt>gen µs</dt>"),
        "the glossary under the pairs table"
    );
    // One table row per pair.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture.join("summary.json")).unwrap()).unwrap();
    let pairs = summary["pairs"].as_array().unwrap().len();
    let tbody = &dom_text[dom_text.find("<tbody>").unwrap()..dom_text.find("</tbody>").unwrap()];
    assert_eq!(tbody.matches("<tr>").count(), pairs);

    // Nothing clipped, nothing overlapping, measured by the browser's own layout: a copy
    // of the page with a script that compares every chart text's box with its SVG's
    // and with the other texts' boxes, and leaves the result in the DOM it dumps.
    let problems = layout_problems(&browser, work.path(), &page);
    assert!(
        problems.is_empty(),
        "texts clipped or overlapping: {problems}"
    );

    // The `lab hops` page and an `--app` run's page (examples/python/buffer_api.py,
    // four conditions against `--baseline stream`), from runs kept as fixtures.
    for kind in ["hops", "app"] {
        let html = work.path().join(format!("{kind}.html"));
        loglag()
            .arg("report")
            .arg(root.join("crates/loglag-lab/tests/fixtures").join(kind))
            .arg("-o")
            .arg(&html)
            .assert()
            .success();
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("<svg"), "{kind}: a page with charts");
        assert_answer_first(&page, kind);
        let problems = layout_problems(&browser, work.path(), &page);
        assert!(
            problems.is_empty(),
            "{kind}: texts clipped or overlapping: {problems}"
        );
    }

    // A preset's page (the sweep, with its heatmaps), from its `preset.json`.
    let preset: loglag_lab::report::PresetSummary = serde_json::from_slice(
        &std::fs::read(root.join("crates/loglag-lab/tests/fixtures/sweep-preset.json")).unwrap(),
    )
    .unwrap();
    let page = loglag_lab::html::render_preset(&preset);
    assert_answer_first(&page, "sweep preset");
    assert_eq!(page.matches("<svg").count(), 2, "the sweep's two heatmaps");
    let problems = layout_problems(&browser, work.path(), &page);
    assert!(
        problems.is_empty(),
        "sweep preset: texts clipped or overlapping: {problems}"
    );

    // The buffers preset's page (bars by step), from its `preset.json`.
    let preset: loglag_lab::report::PresetSummary = serde_json::from_slice(
        &std::fs::read(root.join("crates/loglag-lab/tests/fixtures/buffers-preset.json")).unwrap(),
    )
    .unwrap();
    let page = loglag_lab::html::render_preset(&preset);
    assert_answer_first(&page, "buffers preset");
    assert_eq!(
        page.matches("<svg").count(),
        2,
        "p99 and records lost, by step"
    );
    let problems = layout_problems(&browser, work.path(), &page);
    assert!(
        problems.is_empty(),
        "buffers preset: texts clipped or overlapping: {problems}"
    );

    // The blocking preset's page (bars by step: 500 and 2000 connections).
    let preset: loglag_lab::report::PresetSummary = serde_json::from_slice(
        &std::fs::read(root.join("crates/loglag-lab/tests/fixtures/blocking-preset.json")).unwrap(),
    )
    .unwrap();
    let page = loglag_lab::html::render_preset(&preset);
    assert_answer_first(&page, "blocking preset");
    assert!(page.contains("<svg"), "the blocking preset: p99 by step");
    let problems = layout_problems(&browser, work.path(), &page);
    assert!(
        problems.is_empty(),
        "blocking preset: texts clipped or overlapping: {problems}"
    );

    step_pages(&browser, work.path(), &target);

    // A screenshot for people to look at (not committed).
    let shot = target.join("report-screenshot.png");
    let out = headless(&browser, &work.path().join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,3600")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "screenshot is not empty"
    );
}

/// A tiny buffers preset, run here (SIGTERM and SIGKILL steps, a closed loop, one
/// round): its page and each step's page are measured like the others, and the step
/// pages say what a closed loop and one SIGKILL round do not measure.
fn step_pages(browser: &Path, work: &Path, target: &Path) {
    let (p, dir) = preset(&[
        "--preset",
        "buffers",
        "--conditions",
        "file-sync,memory-buffer-50,loglag",
        "--closed",
        "8",
        "--duration",
        "1s",
    ]);
    let steps: Vec<String> = p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(steps, ["term", "kill"]);
    let mut pages = vec![("preset".to_owned(), dir.path().to_owned())];
    pages.extend(steps.iter().map(|s| (s.clone(), dir.path().join(s))));
    for (name, from) in pages {
        let html = work.join(format!("step-{name}.html"));
        loglag()
            .arg("report")
            .arg(&from)
            .arg("-o")
            .arg(&html)
            .assert()
            .success();
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("<svg"), "{name}: a page with charts");
        assert!(
            page.contains("What the columns mean"),
            "{name}: its glossary"
        );
        let problems = layout_problems(browser, work, &page);
        assert!(
            problems.is_empty(),
            "{name} page: texts clipped or overlapping: {problems}"
        );
        if name == "kill" {
            // A closed loop has no send lateness: `–`, never `0`.
            let table = &page[page.find("<tbody>").unwrap()..page.find("</tbody>").unwrap()];
            let rows: Vec<&str> = table.split("<tr>").skip(1).collect();
            assert_eq!(rows.len(), 3);
            for row in rows {
                let cells: Vec<&str> = row.split("<td").skip(1).collect();
                let late = cells[cells.len() - 2];
                assert!(late.ends_with(">–</td>"), "send late p99 µs: {late}");
            }
            assert!(
                page.contains("One round: what a SIGKILL loses"),
                "one SIGKILL round is a single draw, and the page says so"
            );
            let shot = target.join("report-step-screenshot.png");
            let out = headless(browser, &work.join("profile-step-shot"))
                .arg(format!("--screenshot={}", shot.display()))
                .arg("--window-size=1400,3600")
                .arg(format!("file://{}", html.display()))
                .output()
                .unwrap();
            assert!(out.status.success());
        }
    }
}

/// A page opens with its headline (the same sentences as stdout's first lines), before
/// any table; its lines the layout check then measures unwrapped.
fn assert_answer_first(page: &str, kind: &str) {
    let answer = page
        .find("<section id=\"answer\" class=\"headline\"><pre>")
        .unwrap_or_else(|| panic!("{kind}: no headline"));
    let table = page.find("<table").unwrap_or(page.len());
    assert!(answer < table, "{kind}: the headline before the tables");
}

/// Runs the page, with a measuring script added, in Chromium; returns the JSON list of
/// text boxes that leave their SVG (`clipped`) or overlap another (`overlap`).
fn layout_problems(browser: &Path, work: &Path, page: &str) -> String {
    const CHECK: &str = r#"<script>
(function () {
  const problems = [];
  document.querySelectorAll('svg').forEach((svg, si) => {
    const sb = svg.getBoundingClientRect();
    const boxes = Array.from(svg.querySelectorAll('text'))
      .filter(t => t.textContent.trim().length > 0)
      .map(t => ({ text: t.textContent.trim().slice(0, 40), r: t.getBoundingClientRect() }))
      .filter(b => b.r.width > 0);
    for (const b of boxes) {
      if (b.r.left < sb.left - 0.5 || b.r.right > sb.right + 0.5 ||
          b.r.top < sb.top - 0.5 || b.r.bottom > sb.bottom + 0.5) {
        problems.push({ svg: si, kind: 'clipped', text: b.text });
      }
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (x > 1 && y > 1) {
          problems.push({ svg: si, kind: 'overlap', a: boxes[i].text, b: boxes[j].text });
        }
      }
    }
  });
  // No line crosses a label: points every 2 px along each drawn line (a series, a
  // dashed marker, a bracket) must not fall inside a label's box (the drain labels of
  // the backlog chart; a bracket may touch its own label's edge, so boxes shrink 1 px).
  document.querySelectorAll('svg').forEach((svg, si) => {
    const labels = Array.from(svg.querySelectorAll('text.marker'))
      .map(t => ({ text: t.textContent.trim().slice(0, 40), r: t.getBoundingClientRect() }));
    if (labels.length === 0) return;
    svg.querySelectorAll('path').forEach(path => {
      if (path.getAttribute('fill') !== 'none' && !path.getAttribute('stroke-dasharray')) return;
      const m = path.getScreenCTM();
      const length = path.getTotalLength();
      for (let at = 0; at <= length; at += 2) {
        const p = path.getPointAtLength(at).matrixTransform(m);
        for (const l of labels) {
          if (p.x > l.r.left + 1 && p.x < l.r.right - 1 && p.y > l.r.top + 1 && p.y < l.r.bottom - 1) {
            problems.push({ svg: si, kind: 'a line crosses a label', text: l.text,
              line: (path.querySelector('title') || {}).textContent || path.getAttribute('stroke') });
            return;
          }
        }
      }
    });
  });
  // The headline's lines fit its box unwrapped: none would run off to the side.
  document.querySelectorAll('section.headline pre').forEach(pre => {
    pre.style.whiteSpace = 'pre';
    if (pre.scrollWidth > pre.clientWidth + 1) {
      problems.push({ kind: 'headline overflows', width: pre.scrollWidth, box: pre.clientWidth });
    }
  });
  document.body.setAttribute('data-layout-problems', JSON.stringify(problems));
})();
</script>"#;
    let checked = work.join("checked.html");
    std::fs::write(
        &checked,
        page.replace("</body>", &format!("{CHECK}</body>")),
    )
    .unwrap();
    let out = headless(browser, &work.join("profile-layout"))
        .arg("--window-size=1400,3600")
        .arg("--dump-dom")
        .arg(format!("file://{}", checked.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("data-layout-problems=\"")
        .expect("the measuring script ran and left its result")
        + "data-layout-problems=\"".len();
    let end = start + dom[start..].find('"').unwrap();
    dom[start..end].replace("&quot;", "\"").replace("[]", "")
}

/// Issue 47: hostile result directories (a CI artefact, a bug attachment) render in
/// Chromium without running anything they carry. The payloads, were they run, would
/// set the page's title to `pwned` and a `data-marker` attribute on it: a `javascript:`
/// step and `spans_file` (the links), markup in names, quotes that would end an
/// attribute. A script added for the test clicks every `javascript:` link (there
/// must be none) and leaves each anchor's resolved protocol in the DOM it dumps.
#[test]
fn hostile_reports_run_no_script_in_chromium() {
    // Bounded: a lab child or a chromium that never exits fails the test.
    within(
        "hostile_reports_run_no_script_in_chromium",
        hostile_reports_in_chromium,
    );
}

fn hostile_reports_in_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("LOGLAG_REQUIRE_BROWSER").is_none(),
            "LOGLAG_REQUIRE_BROWSER is set but no chromium is installed"
        );
        skip_note!("SKIPPED: no chromium; install Debian's `chromium` to run the browser test");
        return;
    };
    const RUN: &str =
        "document.title='pwned';document.documentElement.setAttribute('data-marker','ran')";
    let link = format!("javascript:{RUN}");
    let markup = format!("</title><script>{RUN}</script><img src=x onerror=\"{RUN}\">");
    let quote = format!("\" onmouseover=\"{RUN}\" x=\"");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../loglag-lab/tests/fixtures");
    let work = tempfile::tempdir().unwrap();

    // A hops result, through `loglag report`: the link, and markup in its names.
    let hops = work.path().join("hops");
    std::fs::create_dir(&hops).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures.join("hops/summary.json")).unwrap())
            .unwrap();
    doc["hops"]["spans_file"] = link.clone().into();
    doc["hops"]["machine"]["cpu"] = markup.clone().into();
    doc["hops"]["waterfalls"][0]["trace_id"] = quote.clone().into();
    std::fs::write(hops.join("summary.json"), doc.to_string()).unwrap();
    loglag().arg("report").arg(&hops).assert().success();
    let mut pages = vec![(
        "hops",
        std::fs::read_to_string(hops.join("report.html")).unwrap(),
    )];

    // A preset's page with `javascript:` steps: `loglag report` refuses such a
    // directory, so the page is rendered as `--report` would have written it.
    let mut preset: loglag_lab::report::PresetSummary =
        serde_json::from_slice(&std::fs::read(fixtures.join("buffers-preset.json")).unwrap())
            .unwrap();
    preset.steps = vec![
        link.clone(),
        format!("{link}//"),
        quote.clone(),
        "term".into(),
    ];
    preset.description = markup.clone();
    pages.push(("preset", loglag_lab::html::render_preset(&preset)));

    const CHECK: &str = r#"<script>
(function () {
  const links = Array.from(document.querySelectorAll('a'));
  links.filter(a => a.protocol === 'javascript:').forEach(a => a.click());
  document.body.setAttribute('data-protocols', links.map(a => a.protocol).join(' '));
})();
</script>"#;
    for (name, page) in pages {
        assert!(
            !page.to_ascii_lowercase().contains("<script"),
            "{name}: a <script in the page"
        );
        assert_eq!(
            loglag_lab::html::untrusted::links_outside(&page),
            Vec::<String>::new(),
            "{name}"
        );
        let html = work.path().join(format!("{name}.html"));
        std::fs::write(&html, page.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
        let out = headless(&browser, &work.path().join(format!("profile-{name}")))
            // Runs the page's tasks (a clicked link's script among them) before the
            // dump, in virtual time: no waiting on the clock.
            .arg("--virtual-time-budget=5000")
            .arg("--dump-dom")
            .arg(format!("file://{}", html.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dom = String::from_utf8_lossy(&out.stdout);
        let start = dom
            .find("data-protocols=\"")
            .expect("the checking script ran and left its result")
            + "data-protocols=\"".len();
        let protocols = &dom[start..start + dom[start..].find('"').unwrap()];
        assert!(
            protocols.split_whitespace().all(|p| p == "file:"),
            "{name}: a link that is not a file inside the directory: {protocols}"
        );
        if name == "preset" {
            // The plain names (`term`, and the quotes, percent-encoded) are linked.
            assert_eq!(protocols, "file: file:", "{name}: the steps' links");
        }
        assert!(!dom.contains("data-marker=\""), "{name}: a payload ran");
        assert!(
            !dom.contains("<title>pwned</title>"),
            "{name}: a payload ran"
        );
    }
}
