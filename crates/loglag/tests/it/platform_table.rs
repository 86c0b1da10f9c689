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

/// README's Rust examples are doctests (lib.rs includes README.md), which see the
/// crate's dev-dependencies; a reader who copies one sees only README's `toml` block.
/// Every crate the examples use is in that block (a `tempfile` missing from it once
/// made the second example fail for the first reader who tried it).
#[test]
fn every_crate_readmes_examples_use_is_in_its_dependencies_block() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(crate_dir.join("../../README.md")).unwrap();
    let blocks = |lang: &str| -> Vec<String> {
        readme
            .split("```")
            .skip(1)
            .step_by(2)
            .filter_map(|b| b.strip_prefix(lang).map(str::to_owned))
            .collect()
    };
    let toml = blocks("toml").concat();
    let declared: Vec<&str> = toml
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        .filter(|k| !k.is_empty() && !k.starts_with('['))
        .collect();
    let rust = blocks("rust");
    assert!(rust.len() >= 2, "README's Rust examples");
    let mut used: Vec<String> = Vec::new();
    for block in &rust {
        for (i, _) in block.match_indices("::") {
            let path_start = block[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(0, |p| p + 1);
            let root = block[path_start..i].split("::").next().unwrap();
            if root.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && !["std", "core", "alloc", "crate", "self", "super"].contains(&root)
                && !used.iter().any(|u| u == root)
            {
                used.push(root.to_owned());
            }
        }
    }
    assert!(used.iter().any(|u| u == "loglag"), "{used:?}");
    for krate in &used {
        assert!(
            declared.iter().any(|d| d.replace('-', "_") == *krate),
            "README's examples use `{krate}`, which its toml block does not declare ({declared:?})"
        );
    }
}
