//! Every exporter's output on a fixed lab result (a real short `loglag lab` run, kept in
//! `tests/fixtures/lab`), pinned with insta snapshots; and clear errors on bad input.

use std::path::{Path, PathBuf};

use loglag_lab::export::{self, Exporter};
use loglag_lab::html;
use loglag_lab::outputs::ExportManager;
use loglag_lab::report::{ResultKind, Summary};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lab")
}

fn render(e: &dyn Exporter<Summary>) -> String {
    let summary = html::load_dir(&fixture()).unwrap();
    let mut out = Vec::new();
    e.export(&summary, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn markdown() {
    insta::assert_snapshot!(render(&export::Markdown));
}

#[test]
fn pairs_csv() {
    insta::assert_snapshot!(render(&export::PairsCsv));
}

#[test]
fn runs_csv() {
    insta::assert_snapshot!(render(&export::RunsCsv));
}

#[test]
fn json_round_trips_and_carries_the_schema() {
    let text = render(&export::Json);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema"], 1);
    insta::assert_snapshot!(text);
}

#[test]
fn csv_row_counts_match_the_summary() {
    let summary = html::load_dir(&fixture()).unwrap();
    assert_eq!(
        render(&export::RequestsCsv).lines().count(),
        summary.requests.len() + 1
    );
    assert_eq!(
        render(&export::TimeseriesCsv).lines().count(),
        summary.timeseries.len() + 1
    );
    assert!(!summary.requests.is_empty() && !summary.timeseries.is_empty());
}

#[test]
fn html_report() {
    let summary = html::load_dir(&fixture()).unwrap();
    let page = html::render(&summary);
    assert!(!page.contains("<script"), "readable without JavaScript");
    assert_eq!(
        page.matches("<svg").count(),
        1 + 2 + 2 + 2 + 1 + 1,
        "the headline's, latency, timeline and backlog per sink, two bar charts"
    );
    insta::assert_snapshot!(page);
}

#[test]
fn bad_input_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = html::load_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("summary.json not found"), "{err}");

    std::fs::write(dir.path().join("summary.json"), "{ not json").unwrap();
    let err = html::load_dir(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("summary.json is not a valid lab result"),
        "{err}"
    );

    std::fs::write(dir.path().join("summary.json"), r#"{"schema": 99}"#).unwrap();
    let err = html::load_dir(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("summary.json has schema 99; this loglag reads schemas 1 to 2"),
        "{err}"
    );

    std::fs::copy(
        fixture().join("summary.json"),
        dir.path().join("summary.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("requests.csv"), "header\n1,2\n").unwrap();
    let err = html::load_dir(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("requests.csv") && err.contains("line 2"),
        "{err}"
    );
}

fn load_summary() -> loglag_lab::report::LoadSummary {
    loglag_lab::report::LoadSummary {
        floor: Some(Box::new(loglag_lab::report::LoadSummary {
            url: "floor: null server at http://127.0.0.1:9/".into(),
            p50_ms: Some(0.08),
            send_lateness: None,
            lateness_warning: None,
            ..load_summary_without_floor()
        })),
        ..load_summary_without_floor()
    }
}

fn load_summary_without_floor() -> loglag_lab::report::LoadSummary {
    loglag_lab::report::LoadSummary {
        schema: 1,
        url: "http://127.0.0.1:8080/".into(),
        mode: "open".into(),
        rate: Some(20.0),
        connections: None,
        duration_s: 8.0,
        requests: 160,
        ok: 159,
        http_errors: 1,
        io_errors: 0,
        timeouts: 0,
        achieved_rps: 19.875,
        p50_ms: Some(1.25),
        p90_ms: Some(2.5),
        p99_ms: Some(2912.0),
        p999_ms: Some(3005.0),
        max_ms: Some(3005.0),
        send_lateness: Some(loglag_lab::report::Lateness {
            mean_us: 12.5,
            p50_us: None,
            p99_us: 140.0,
            max_us: 1200.0,
        }),
        lateness_warning: Some("the load generator sent late (p99 140 µs)".into()),
        interrupted: None,
        floor: None,
    }
}

fn sink_summary() -> loglag_lab::report::SinkSummary {
    loglag_lab::report::SinkSummary {
        schema: 1,
        source: "/tmp/app.fifo".into(),
        bytes: 2_621_440,
        newlines: 160,
        reads: 640,
        sha256: "ab".repeat(32),
        seconds: 10.25,
        last_byte_s: Some(10.1),
        rate_cap_bytes_per_s: Some(262_144),
    }
}

#[test]
fn load_and_sink_in_every_stdout_format() {
    use export::StdoutFormat::{Csv, Json, Markdown};
    for (format, name) in [(Markdown, "md"), (Json, "json"), (Csv, "csv")] {
        let mut out = Vec::new();
        ExportManager::load(format)
            .show(&load_summary(), &mut out)
            .unwrap();
        ExportManager::sink(format)
            .show(&sink_summary(), &mut out)
            .unwrap();
        insta::assert_snapshot!(format!("load_sink_{name}"), String::from_utf8(out).unwrap());
    }
}

/// What `--out` writes, `loglag report` reads back, whatever the names hold: the CSVs
/// are read by header with a real CSV parser, so a quoted name survives.
#[test]
fn every_file_written_reads_back_the_same() {
    let mut summary = html::load_dir(&fixture()).unwrap();
    for r in &mut summary.requests {
        r.condition = format!("app, \"{}\"", r.condition);
    }
    let dir = tempfile::tempdir().unwrap();
    ExportManager::lab(export::StdoutFormat::Markdown, false)
        .write(&summary, dir.path())
        .unwrap();
    let manifest = loglag_lab::outputs::read_manifest(dir.path())
        .unwrap()
        .expect("a manifest");
    assert_eq!(manifest.kind, ResultKind::Lab);
    assert_eq!(manifest.summary, "summary.json");
    for file in &manifest.files {
        assert!(
            dir.path().join(file).is_file(),
            "{file} is listed and written"
        );
    }
    let back = html::load_dir(dir.path()).unwrap();
    assert_eq!(back.requests.len(), summary.requests.len());
    for (a, b) in back.requests.iter().zip(&summary.requests) {
        assert_eq!(a.condition, b.condition);
        assert_eq!(a.run, b.run);
        assert_eq!(a.status, b.status);
        assert_eq!(a.outcome, b.outcome);
        assert!((a.scheduled_ms - b.scheduled_ms).abs() < 1e-3);
    }
    assert_eq!(back.timeseries.len(), summary.timeseries.len());
    assert_eq!(back.pairs, summary.pairs);
}

/// `--report` draws its page from the summary in memory; `loglag report DIR` draws it
/// from the files its `ExportManager` wrote. Both are the same page.
#[test]
fn the_page_drawn_from_memory_is_the_page_drawn_from_the_files() {
    let summary = html::load_dir(&fixture()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let written = ExportManager::lab(export::StdoutFormat::Markdown, true)
        .write(&summary, dir.path())
        .unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "summary.json",
            "pairs.csv",
            "runs.csv",
            "requests.csv",
            "timeseries.csv",
            "pairs.md",
            "report.html",
            "manifest.json"
        ]
    );
    let from_memory = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let from_files = html::render(&html::load_dir(dir.path()).unwrap());
    assert_eq!(from_memory, from_files);
    assert!(from_memory.matches("<svg").count() > 0);
}

/// `loglag load --requests-csv`: a row per request, ms with three decimals, empty cells
/// where a request has no value, outcomes by their report names.
#[test]
fn load_requests_csv_has_a_row_per_request() {
    use loglag_lab::load::{Outcome, RequestSample};
    let sample = |index, latency_ns, status, outcome| RequestSample {
        index,
        scheduled_ns: index * 50_000_000,
        send_lateness_ns: 12_345,
        connect_ns: None,
        latency_ns,
        status,
        outcome,
        done_mono_ns: 0,
    };
    let samples = [
        sample(0, Some(1_250_000), Some(200), Outcome::Ok),
        sample(1, None, None, Outcome::Timeout),
    ];
    let mut out = Vec::new();
    export::load_requests_csv(&samples, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "index,scheduled_ms,send_lateness_ms,connect_ms,latency_ms,status,outcome\n\
         0,0.000,0.012,,1.250,200,ok\n\
         1,50.000,0.012,,,,timeout\n"
    );
}

/// `loglag emit`'s table: Markdown shows the drops by reason in one cell, CSV keeps
/// each reason in its own column; both come from one list of columns.
#[test]
fn emit_table_in_markdown_and_csv() {
    let v = serde_json::json!({
        "schema": 2, "sink": "file:///tmp/a.log", "records": 1000, "interrupted": false,
        "record_bytes": 120, "threads": 1, "submit_s": 0.001, "elapsed_s": 0.0042,
        "records_per_s": 238095.2, "mib_per_s": 27.25,
        "metrics": {
            "accepted": 1000, "written_records": 990, "written_bytes": 118800,
            "dropped_records": 10, "dropped_queue_full": 7, "dropped_io_error": 2,
            "dropped_shutdown": 1, "dropped_reentrant": 0, "truncated": 0,
            "write_syscalls": 3, "io_errors": 2, "max_backlog_bytes": 4096,
            "write_p50_us": 20.0, "write_p99_us": 131.14, "write_max_us": 140.0,
            "recovered_records": 0
        }
    });
    let summary: loglag_lab::report::EmitSummary = serde_json::from_value(v).unwrap();
    let table = |csv| {
        let mut out = Vec::new();
        export::emit_table(&summary, csv, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(
        table(true),
        "sink,records,written,dropped,write_syscalls,elapsed_s,records_per_s,mib_per_s,write_p99_us,dropped_queue_full,dropped_io_error,dropped_shutdown\n\
         file:///tmp/a.log,1000,990,10,3,0.004,238095,27.2,131.1,7,2,1\n"
    );
    let md = table(false);
    assert!(
        md.contains("| file:///tmp/a.log | 1000 | 990 | 10 (7 / 2 / 1) | 3 | 0.004 |"),
        "{md}"
    );
}

fn fixture_json<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each preset's Markdown (its table, notes and verdict), from a real run of it: the
/// structure of `loglag lab --preset` output, pinned.
#[test]
fn preset_markdown() {
    for preset in ["buffers", "blocking", "sweep"] {
        let summary: loglag_lab::report::PresetSummary =
            fixture_json(&format!("{preset}-preset.json"));
        let mut out = Vec::new();
        export::preset::markdown(&summary, &mut out).unwrap();
        insta::assert_snapshot!(format!("preset_{preset}"), String::from_utf8(out).unwrap());
    }
}

/// `loglag lab hops`'s Markdown from a real run.
#[test]
fn hops_markdown() {
    let doc: serde_json::Value = fixture_json("hops/summary.json");
    let summary: loglag_lab::report::HopsSummary =
        serde_json::from_value(doc["hops"].clone()).unwrap();
    let mut out = Vec::new();
    export::hops::markdown(&summary, &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

/// `loglag torture --only hung`'s Markdown, from a real run.
#[test]
fn torture_markdown() {
    let summary: loglag_lab::report::TortureSummary = fixture_json("torture-hung.json");
    let mut out = Vec::new();
    export::Markdown.export(&summary, &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

/// `loglag emit`'s table in Markdown and CSV, from a real run.
#[test]
fn emit_tables() {
    let summary: loglag_lab::report::EmitSummary = fixture_json("emit.json");
    let mut md = Vec::new();
    export::emit_table(&summary, false, &mut md).unwrap();
    let mut csv = Vec::new();
    export::emit_table(&summary, true, &mut csv).unwrap();
    insta::assert_snapshot!(String::from_utf8(md).unwrap() + &String::from_utf8(csv).unwrap());
}

/// Every kind of result, written through its `ExportManager`, is read back by
/// `loglag report` from its manifest alone: the manifest names the kind and its
/// files, and the page drawn is that kind's.
#[test]
fn every_kind_of_result_is_opened_by_its_manifest() {
    use export::StdoutFormat::Markdown;
    use loglag_lab::outputs::render_dir;
    let root = tempfile::tempdir().unwrap();
    let dir = |name: &str| root.path().join(name);
    let lab = html::load_dir(&fixture()).unwrap();
    ExportManager::lab(Markdown, false)
        .write(&lab, &dir("lab"))
        .unwrap();
    let preset: loglag_lab::report::PresetSummary = fixture_json("buffers-preset.json");
    ExportManager::preset(Markdown, false)
        .unwrap()
        .write(&preset, &dir("preset"))
        .unwrap();
    for step in &preset.steps {
        ExportManager::lab(Markdown, false)
            .write(&lab, &dir("preset").join(step))
            .unwrap();
    }
    ExportManager::load(Markdown)
        .write(&load_summary(), &dir("load"))
        .unwrap();
    ExportManager::sink(Markdown)
        .write(&sink_summary(), &dir("sink"))
        .unwrap();
    let emit: loglag_lab::report::EmitSummary = fixture_json("emit.json");
    ExportManager::emit(Markdown)
        .write(&emit, &dir("emit"))
        .unwrap();
    let torture: loglag_lab::report::TortureSummary = fixture_json("torture-hung.json");
    ExportManager::torture(Markdown)
        .unwrap()
        .write(&torture, &dir("torture"))
        .unwrap();
    for (name, kind, says) in [
        ("lab", ResultKind::Lab, "loglag lab report"),
        ("preset", ResultKind::Preset, "loglag lab --preset buffers"),
        ("load", ResultKind::Load, "<title>loglag load</title>"),
        ("sink", ResultKind::Sink, "<title>loglag sink</title>"),
        ("emit", ResultKind::Emit, "<title>loglag emit</title>"),
        (
            "torture",
            ResultKind::Torture,
            "<title>loglag torture</title>",
        ),
    ] {
        let manifest = loglag_lab::outputs::read_manifest(&dir(name))
            .unwrap()
            .unwrap_or_else(|| panic!("{name} has a manifest"));
        assert_eq!(manifest.kind, kind, "{name}");
        let pages = render_dir(&dir(name)).unwrap();
        assert_eq!(pages[0].0, dir(name).join("report.html"));
        assert!(pages[0].1.contains(says), "{name}: {}", &pages[0].1[..300]);
        assert!(pages[0].1.contains("<table"), "{name} draws its table");
    }
    // A preset's steps get their pages in their own directories.
    let pages = render_dir(&dir("preset")).unwrap();
    assert_eq!(pages.len(), 1 + preset.steps.len());
    assert_eq!(
        pages[1].0,
        dir("preset").join(&preset.steps[0]).join("report.html")
    );
    // A directory from before manifests is still read, as those versions wrote it.
    std::fs::remove_file(dir("lab").join("manifest.json")).unwrap();
    assert!(render_dir(&dir("lab")).unwrap()[0]
        .1
        .contains("loglag lab report"));
    // A manifest that does not parse is an error naming it.
    std::fs::write(dir("load").join("manifest.json"), "{\"kind\": 7}").unwrap();
    let err = render_dir(&dir("load")).unwrap_err().to_string();
    assert!(err.contains("manifest.json"), "{err}");
    // A format a kind does not offer is refused before anything runs.
    let err = ExportManager::torture(export::StdoutFormat::Csv).unwrap_err();
    assert!(err.to_string().contains("--format csv"), "{err}");
}
