//! `--out` and `loglag report` as a user meets them, for the commands whose results are
//! tables: each writes its files and a manifest naming them, and `loglag report DIR`
//! opens the directory by that manifest alone. (The lab's, the presets' and hops'
//! pages are opened in `lab.rs`, `presets.rs`, `hops.rs` and `browser.rs`.)

mod support;
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
