//! A result directory is untrusted input (issue 47): whatever its summary.json,
//! preset.json and manifest.json hold, `loglag report`'s rendering either refuses it
//! with an error or returns pages that stay inside the directory, with no `<script`
//! and no link out of it; never a panic, a hang or unbounded memory.
//!
//! The first byte picks the kind of result and whether the manifest is the input's
//! (after the first 0xFF byte) or a valid one; the rest is the summary. Seed the
//! corpus with crates/loglag-lab/tests/fixtures/*.json (prefixed by a kind byte) to
//! start from real results. `html::untrusted`'s proptest runs the same checks on a
//! bounded number of cases in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loglag_lab::html::untrusted::links_outside;

const KINDS: [&str; 7] = ["lab", "preset", "hops", "load", "sink", "emit", "torture"];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let kind = KINDS[usize::from(first & 7) % KINDS.len()];
    let name = if kind == "preset" {
        "preset.json"
    } else {
        "summary.json"
    };
    let (summary, manifest) = match rest.iter().position(|&b| b == 0xFF) {
        Some(at) if first & 8 == 8 => (&rest[..at], rest[at + 1..].to_vec()),
        _ => (
            rest,
            format!(
                r#"{{"schema": 2, "kind": "{kind}", "summary": "{name}", "files": ["{name}"], "loglag": "0"}}"#
            )
            .into_bytes(),
        ),
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("result");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(name), summary).unwrap();
    std::fs::write(dir.join("manifest.json"), manifest).unwrap();
    // A preset's steps, when it names these, are lab results.
    if kind == "preset" {
        let lab = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/loglag-lab/tests/fixtures/lab/summary.json");
        for step in ["term", "kill"] {
            std::fs::create_dir(dir.join(step)).unwrap();
            std::fs::copy(&lab, dir.join(step).join("summary.json")).unwrap();
        }
    }
    let Ok(pages) = loglag_lab::outputs::render_dir(&dir) else {
        return;
    };
    let root = dir.canonicalize().unwrap();
    for (path, page) in pages {
        let real = path.parent().unwrap().canonicalize().unwrap();
        assert!(real.starts_with(&root), "a page outside: {}", path.display());
        assert!(
            !page.to_ascii_lowercase().contains("<script"),
            "a <script in {}",
            path.display()
        );
        let outside = links_outside(&page);
        assert!(outside.is_empty(), "links out of the directory: {outside:?}");
    }
});
