//! Every exporter's output on a fixed lab result (a real short `loglag lab` run, kept in
//! `tests/fixtures/lab`), pinned with insta snapshots; and clear errors on bad input.

use std::path::{Path, PathBuf};

use loglag_lab::export::{self, Exporter};
use loglag_lab::html;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lab")
}

fn render(e: &dyn Exporter) -> String {
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
        2 + 2 + 2 + 1 + 1,
        "latency, timeline and backlog per sink, two bar charts"
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
        err.contains("summary.json has schema 99; this loglag reads schema 1"),
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
