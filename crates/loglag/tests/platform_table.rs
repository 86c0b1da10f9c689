//! README's "What works where" cites, in each cell, the test that shows it: every test
//! it names must exist, so the table cannot go on citing a test that was renamed or
//! removed.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The backticked names in `text` that look like test functions: lower-case words
/// joined by at least three underscores (`a_real_sigterm_flushes_then_terminates`),
/// with any module path (`spool::tests::`) dropped.
fn cited_tests(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|quoted| quoted.rsplit("::").next().unwrap().to_owned())
        .filter(|name| {
            name.matches('_').count() >= 3
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect()
}

#[test]
fn every_test_the_platform_table_cites_exists() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(crate_dir.join("../../README.md")).unwrap();
    let section = readme
        .split("## What works where")
        .nth(1)
        .expect("README has a 'What works where' section")
        .split("\n## ")
        .next()
        .unwrap();
    let header = section
        .lines()
        .find(|l| l.starts_with("| |"))
        .expect("the table's header");
    for platform in ["Linux x86-64", "Linux aarch64", "macOS", "Windows"] {
        assert!(header.contains(platform), "no {platform} column: {header}");
    }
    let mut files = Vec::new();
    sources(&crate_dir.join("tests"), &mut files);
    sources(&crate_dir.join("src"), &mut files);
    let code: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let cited = cited_tests(section);
    assert!(cited.len() >= 8, "the table cites its tests: {cited:?}");
    let missing: Vec<&String> = cited
        .iter()
        .filter(|name| !code.iter().any(|c| c.contains(&format!("fn {name}("))))
        .collect();
    assert!(
        missing.is_empty(),
        "README cites tests that do not exist: {missing:?}"
    );
}

#[test]
fn a_cited_name_is_found_and_a_setting_is_not_taken_for_one() {
    let cited = cited_tests("`spool::tests::windows_refuses_a_symlinked_spool`, `flush_on_signals`, `set_pipe_size`, `Fd_Sink_x_y`");
    assert_eq!(cited, ["windows_refuses_a_symlinked_spool"]);
}
