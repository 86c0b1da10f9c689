//! The HTML report in a real headless Chromium: it renders with no console errors,
//! every chart draws paths, the table has a row per pair, and nothing is fetched.
//!
//! `.ci/run` installs Debian's chromium and sets `LOGLAG_REQUIRE_BROWSER=1`, so in CI a
//! missing browser fails the test; elsewhere it is skipped with a message.

/// A skip is said on stderr past the test harness's capture (which holds only what
/// `eprintln!` prints), so a plain `cargo test` shows what did not run and why.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::prelude::*;

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
    Command::cargo_bin("loglag")
        .unwrap()
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
    assert_eq!(svgs.len(), 8, "charts rendered");
    for svg in &svgs {
        let body = &svg[..svg.find("</svg>").unwrap()];
        assert!(body.contains("<path d=\"M"), "a chart without drawn paths");
    }
    // One table row per pair.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture.join("summary.json")).unwrap()).unwrap();
    let pairs = summary["pairs"].as_array().unwrap().len();
    let tbody = &dom_text[dom_text.find("<tbody>").unwrap()..dom_text.find("</tbody>").unwrap()];
    assert_eq!(tbody.matches("<tr>").count(), pairs);

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
