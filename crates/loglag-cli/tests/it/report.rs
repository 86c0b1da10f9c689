//! `--out` and `loglag report` as a user meets them, for the commands whose results are
//! tables: each writes its files and a manifest naming them, and `loglag report DIR`
//! opens the directory by that manifest alone. (The lab's, the presets' and hops'
//! pages are opened in `lab.rs`, `presets.rs`, `hops.rs` and `browser.rs`.)

use crate::support;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use support::*;

/// The manifest of `dir`, after checking it names only files that are there.
fn manifest(dir: &Path, kind: &str) -> Value {
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["kind"], kind, "{m}");
    assert_eq!(m["schema"], 2, "{m}");
    for f in m["files"].as_array().unwrap() {
        assert!(
            dir.join(f.as_str().unwrap()).is_file(),
            "{f} is listed: {m}"
        );
    }
    m
}

/// `loglag report DIR` writes DIR/report.html with the command's table in it.
fn report_shows(dir: &Path, title: &str, cell: &str) {
    let out = loglag().arg("report").arg(dir).output().unwrap();
    assert_success(&out);
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains(&format!("<title>{title}</title>")), "{page}");
    assert!(
        page.contains(&format!("<td>{cell}</td>")),
        "{cell} in {page}"
    );
}

#[test]
fn emit_load_sink_and_torture_write_a_manifest_that_report_opens() {
    within("report kinds", || {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();

        // emit: 1000 records into a file.
        let log = root.join("app.log");
        let out = loglag()
            .args(["emit", "--count", "1000", "--sink"])
            .arg(format!("file://{}", log.display()))
            .arg("--out")
            .arg(root.join("emit"))
            .output()
            .unwrap();
        assert_success(&out);
        let m = manifest(&root.join("emit"), "emit");
        assert_eq!(m["summary"], "summary.json");
        report_shows(&root.join("emit"), "loglag emit", "1000");

        // load: the generator's floor against its own null server, a real one.
        let out = loglag()
            .args([
                "load",
                "--calibrate",
                "--rate",
                "50",
                "--duration",
                "1s",
                "--out",
            ])
            .arg(root.join("load"))
            .output()
            .unwrap();
        assert_success(&out);
        manifest(&root.join("load"), "load");
        report_shows(&root.join("load"), "loglag load", "50");

        // sink: a real FIFO, written once the reader says it waits for a writer.
        let fifo = root.join("in.fifo");
        let mut sink = loglag()
            .args(["sink", "--fifo"])
            .arg(&fifo)
            .arg("--out")
            .arg(root.join("sink"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(sink.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("waiting for a writer") {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "sink ended early");
        }
        let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        writer.write_all(b"one\ntwo\nthree\n").unwrap();
        drop(writer);
        assert!(sink.wait().unwrap().success());
        manifest(&root.join("sink"), "sink");
        report_shows(&root.join("sink"), "loglag sink", "3");
        assert!(!fifo.exists(), "the FIFO the sink made is removed");

        // torture: the hung sink, several tables, so csv is refused before it runs.
        let out = loglag()
            .args(["torture", "--only", "hung", "--format", "csv"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--format csv") && err.contains("md or json"),
            "{err}"
        );
        let out = loglag()
            .args(["torture", "--only", "hung", "--out"])
            .arg(root.join("torture"))
            .output()
            .unwrap();
        assert_success(&out);
        manifest(&root.join("torture"), "torture");
        report_shows(&root.join("torture"), "loglag torture", "DropNewest");
    });
}

#[test]
fn report_of_a_directory_that_is_no_result_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = loglag().arg("report").arg(tmp.path()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("summary.json not found"), "{err}");
}

// A result directory is untrusted input (a CI artefact, a bug attachment): issue 47.

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../loglag-lab/tests/fixtures")
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join(name)).unwrap()).unwrap()
}

/// A copy of the lab fixture (summary.json and its CSVs) in `dir`.
fn lab_result(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for f in std::fs::read_dir(fixtures().join("lab")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
}

/// A preset result in `dir` whose steps are `steps` (the buffers fixture's table).
fn preset_result(dir: &Path, steps: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut p = fixture_json("buffers-preset.json");
    p["steps"] = serde_json::json!(steps);
    std::fs::write(dir.join("preset.json"), p.to_string()).unwrap();
}

/// `loglag report DIR`, bounded: a regression that recurses or grows without limit
/// fails here instead of exhausting the machine.
fn report(dir: &Path) -> std::process::Output {
    assert_cmd::Command::cargo_bin("loglag")
        .unwrap()
        .arg("report")
        .arg(dir)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

fn refused(out: &std::process::Output, says: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {err}");
    assert!(
        out.status.code() == Some(1),
        "an error, not a crash: {:?} {err}",
        out.status
    );
    for s in says {
        assert!(err.contains(s), "{s:?} in {err}");
    }
}

#[cfg(unix)]
#[test]
fn report_replaces_a_symlinked_report_html_and_leaves_its_target_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("result");
    lab_result(&dir);
    let outside = tmp.path().join("precious.txt");
    std::fs::write(&outside, "precious").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("report.html")).unwrap();
    // And a step's page, in a preset whose step holds such a link too.
    let preset = tmp.path().join("preset");
    preset_result(&preset, &["term"]);
    lab_result(&preset.join("term"));
    std::os::unix::fs::symlink(&outside, preset.join("term/report.html")).unwrap();
    for d in [&dir, &preset] {
        let out = report(d);
        assert_success(&out);
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    for page in [dir.join("report.html"), preset.join("term/report.html")] {
        let meta = std::fs::symlink_metadata(&page).unwrap();
        assert!(meta.is_file(), "{}: a file, not the link", page.display());
        assert!(std::fs::read_to_string(&page)
            .unwrap()
            .contains("loglag lab report"));
    }
    // No temporary file is left beside them.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn report_refuses_a_step_that_climbs_out_or_is_absolute_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    // Each would have had a report.html written into a directory outside DIR.
    let outside = tmp.path().join("outside");
    lab_result(&outside);
    let absolute = outside.to_str().unwrap().to_owned();
    for (step, why) in [
        ("../outside", "climbs out of the directory"),
        (absolute.as_str(), "is an absolute path"),
        ("javascript:alert(1)", "holds a `:`"),
    ] {
        let dir = tmp.path().join("result");
        let _ = std::fs::remove_dir_all(&dir);
        preset_result(&dir, &[step]);
        let out = report(&dir);
        refused(&out, &["preset.json", &format!("step {step:?}"), why]);
        assert!(
            !outside.join("report.html").exists(),
            "{step}: written outside"
        );
        assert!(!dir.join("report.html").exists(), "{step}: nothing written");
    }
}

#[cfg(unix)]
#[test]
fn report_refuses_a_step_that_is_a_symlink_out_of_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    lab_result(&outside);
    let dir = tmp.path().join("result");
    preset_result(&dir, &["term"]);
    std::os::unix::fs::symlink(&outside, dir.join("term")).unwrap();
    let out = report(&dir);
    refused(&out, &["step \"term\" leads outside", "symbolic link"]);
    assert!(!outside.join("report.html").exists());
}

/// Two presets whose steps name each other (through a link, the only way a plain
/// name can): this aborted on a stack overflow.
#[cfg(unix)]
#[test]
fn report_refuses_presets_that_name_each_other() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("result");
    preset_result(&dir, &["a"]);
    preset_result(&dir.join("a"), &["back"]);
    std::os::unix::fs::symlink("..", dir.join("a/back")).unwrap();
    let out = report(&dir);
    refused(&out, &["step \"back\"", "read already", "name each other"]);
    // And a preset whose step is itself.
    let own = tmp.path().join("own");
    preset_result(&own, &["me"]);
    std::os::unix::fs::symlink(".", own.join("me")).unwrap();
    refused(&report(&own), &["step \"me\"", "read already"]);
}

#[test]
fn report_reads_presets_nested_four_deep_and_refuses_a_fifth() {
    let tmp = tempfile::tempdir().unwrap();
    let chain = |depth: usize| {
        let root = tmp.path().join(format!("depth{depth}"));
        let mut dir = root.clone();
        for _ in 0..depth {
            preset_result(&dir, &["next"]);
            dir = dir.join("next");
        }
        lab_result(&dir);
        root
    };
    let out = report(&chain(4));
    assert_success(&out);
    let out = report(&chain(5));
    refused(&out, &["preset.json", "presets nest more than 4 deep"]);
}

/// A span at 1e308 ms once grew the page without limit (1.4 GB in 10 s).
#[test]
fn report_refuses_a_span_of_1e308_ms_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hops");
    std::fs::create_dir(&dir).unwrap();
    let mut doc = fixture_json("hops/summary.json");
    // Their sum is infinite: the time axis stepped towards it forever.
    let span = &mut doc["hops"]["waterfalls"][0]["spans"][0];
    span["start_ms"] = serde_json::json!(1e308);
    span["duration_ms"] = serde_json::json!(1e308);
    std::fs::write(dir.join("summary.json"), doc.to_string()).unwrap();
    let out = report(&dir);
    // Whichever of the two is read first is named.
    refused(
        &out,
        &[
            "summary.json",
            "hops.waterfalls[0].spans[0].",
            "_ms is 1e308",
            "finite",
        ],
    );
}

/// A subnormal time in timeseries.csv once panicked the axis (`capacity overflow`).
#[test]
fn report_refuses_a_subnormal_figure_naming_the_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    lab_result(&dir);
    let series = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut lines: Vec<String> = series.lines().map(str::to_owned).collect();
    for line in lines.iter_mut().skip(1) {
        let mut cells: Vec<&str> = line.split(',').collect();
        cells[1] = "5e-324";
        *line = cells.join(",");
    }
    std::fs::write(dir.join("timeseries.csv"), lines.join("\n") + "\n").unwrap();
    let out = report(&dir);
    refused(
        &out,
        &["timeseries.csv", "line 2: t_s is 5e-324", "subnormal"],
    );
    // And in JSON, the same.
    let dir = tmp.path().join("preset");
    preset_result(&dir, &[]);
    let mut p: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("preset.json")).unwrap()).unwrap();
    p["rows"][0]["pair"]["metrics"]["p99_ms"] = serde_json::json!(5e-324);
    std::fs::write(dir.join("preset.json"), p.to_string()).unwrap();
    refused(&report(&dir), &["rows[0].pair.metrics.p99_ms is 5e-324"]);
}

#[test]
fn report_links_a_hostile_spans_file_nowhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hops");
    std::fs::create_dir(&dir).unwrap();
    let mut doc = fixture_json("hops/summary.json");
    doc["hops"]["spans_file"] = serde_json::json!("javascript:document.title='pwned'");
    std::fs::write(dir.join("summary.json"), doc.to_string()).unwrap();
    assert_success(&report(&dir));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(!page.contains("href=\"javascript"), "{page}");
    assert!(page.contains("Every span: <code>javascript:document.title='pwned'</code>"));
    assert_eq!(
        loglag_lab::html::untrusted::links_outside(&page),
        Vec::<String>::new()
    );
}
