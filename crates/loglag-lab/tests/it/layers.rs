//! Each floor imports only downward: no source file of any crate in the workspace
//! reaches, through `crate::` and `super::` paths, a file that reaches it back. A new
//! import cycle fails here, with the files and the names that tie them.
//!
//! The paths are read as text (no tool of the field does this for a workspace without
//! network access): `crate::a::b::c` is resolved to the longest module file that
//! exists, `src/a/b.rs`, `src/a/b/mod.rs` or `src/a.rs`; `super::` to the parent
//! module. Comments are skipped, and so is a file's test module (from its
//! `#[cfg(test)]` on: tests are not a floor); `use super::*` is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file (`src/lab/plan.rs` → `["lab", "plan"]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// The file that holds the longest prefix of `path` that is a module.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    for n in (1..=path.len()).rev() {
        let base = path[..n].iter().fold(src.to_owned(), |p, s| p.join(s));
        let flat = base.with_extension("rs");
        if flat.is_file() {
            return Some(flat);
        }
        let nested = base.join("mod.rs");
        if nested.is_file() {
            return Some(nested);
        }
    }
    None
}

/// The `crate::…` and `super::…` paths in one file, as module paths.
fn paths_in(text: &str, module: &[String], is_mod_file: bool) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut after_cfg_test = false;
    for line in text.lines() {
        if after_cfg_test && line.trim_start().starts_with("mod ") {
            break;
        }
        after_cfg_test = line.trim() == "#[cfg(test)]";
        let code = line.split("//").next().unwrap_or("");
        if code.trim_start().starts_with("use super::*") {
            continue;
        }
        let bytes = code.as_bytes();
        for (at, _) in code
            .match_indices("crate::")
            .chain(code.match_indices("super::"))
        {
            // A whole path token: not `loglag_crate::` or `my_super::`.
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let rest = &code[at..];
            let token: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut segs: Vec<&str> = token.split("::").filter(|s| !s.is_empty()).collect();
            let mut base: Vec<String> = Vec::new();
            match segs.first() {
                Some(&"crate") => {
                    segs.remove(0);
                }
                Some(&"super") => {
                    // `super` of a file module is its parent; of a `mod.rs`, the
                    // grandparent.
                    base = module.to_vec();
                    if is_mod_file {
                        base.pop();
                    }
                    base.pop();
                    while segs.first() == Some(&"super") {
                        segs.remove(0);
                        if segs.first() == Some(&"super") {
                            base.pop();
                        }
                    }
                }
                _ => continue,
            }
            // A `{` group after the path: its first level of names.
            let after = &rest[token.len()..];
            let mut full: Vec<String> = base;
            full.extend(segs.iter().map(|s| s.to_string()));
            if let Some(group) = after.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                for name in group.split(',') {
                    let name = name.trim().split("::").next().unwrap_or("").trim();
                    if !name.is_empty() && name != "self" {
                        let mut p = full.clone();
                        p.push(name.to_owned());
                        out.push((p, name.to_owned()));
                    }
                }
            }
            let name = full.last().cloned().unwrap_or_default();
            out.push((full, name));
        }
    }
    out
}

/// Every cycle's files (strongly connected components of more than one file).
fn cycles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    // Kosaraju: the order of finishing, then the reversed graph.
    fn visit(
        n: &PathBuf,
        g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        seen: &mut BTreeSet<PathBuf>,
        order: &mut Vec<PathBuf>,
    ) {
        if !seen.insert(n.clone()) {
            return;
        }
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, seen, order);
        }
        order.push(n.clone());
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for n in graph.keys() {
        visit(n, graph, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (a, bs) in graph {
        for b in bs {
            reversed.entry(b.clone()).or_default().insert(a.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for n in order.iter().rev() {
        let mut component = Vec::new();
        visit(n, &reversed, &mut assigned, &mut component);
        if component.len() > 1 {
            component.sort();
            out.push(component);
        }
    }
    out
}

#[test]
fn no_source_file_reaches_a_file_that_reaches_it_back() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    let mut files_read = 0;
    for krate in ["loglag", "loglag-lab", "loglag-cli"] {
        let src = crates.join(krate).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        let mut names: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
        for file in &files {
            files_read += 1;
            let text = std::fs::read_to_string(file).unwrap();
            let module = module_of(&src, file);
            let is_mod_file = file
                .file_name()
                .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
            graph.entry(file.clone()).or_default();
            for (path, name) in paths_in(&text, &module, is_mod_file) {
                let Some(target) = file_of(&src, &path) else {
                    continue;
                };
                // A module's own file, or a parent reaching its children through their
                // `mod` declarations' paths, is not an import of another floor.
                if &target == file {
                    continue;
                }
                graph
                    .entry(file.clone())
                    .or_default()
                    .insert(target.clone());
                names
                    .entry((file.clone(), target))
                    .or_default()
                    .insert(name);
            }
        }
        for cycle in cycles(&graph) {
            let mut why = Vec::new();
            for a in &cycle {
                for b in &cycle {
                    if let Some(n) = names.get(&(a.clone(), b.clone())) {
                        why.push(format!(
                            "{} -> {}: {}",
                            a.strip_prefix(crates).unwrap().display(),
                            b.strip_prefix(crates).unwrap().display(),
                            n.iter().cloned().collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
            found.push(why.join("\n  "));
        }
    }
    assert!(
        files_read > 60,
        "the workspace's sources were read ({files_read} files)"
    );
    assert!(
        found.is_empty(),
        "import cycles:\n  {}",
        found.join("\n\n  ")
    );
}

#[test]
fn the_cycle_check_finds_a_cycle_when_there_is_one() {
    let mut g: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let (a, b, c) = (PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("c"));
    g.entry(a.clone()).or_default().insert(b.clone());
    g.entry(b.clone()).or_default().insert(c.clone());
    assert!(cycles(&g).is_empty());
    g.entry(c.clone()).or_default().insert(a.clone());
    assert_eq!(cycles(&g), vec![vec![a, b, c]]);
    // The path reader sees both spellings.
    let m = vec!["lab".to_owned(), "measure".to_owned()];
    let found = paths_in(
        "use crate::api::launch::{ApiKind, check_alive};\nuse super::plan::RunCondition;\n// crate::x::y in a comment\n",
        &m,
        false,
    );
    let paths: Vec<String> = found.iter().map(|(p, _)| p.join("::")).collect();
    assert!(
        paths.contains(&"api::launch::ApiKind".to_owned()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"lab::plan::RunCondition".to_owned()),
        "{paths:?}"
    );
    assert!(!paths.iter().any(|p| p.starts_with("x")), "{paths:?}");
}

/// The bullets of each crate's section of ARCHITECTURE.md's code map: the section's
/// heading (`crates/loglag`) and each bullet's text, continuation lines included.
fn code_map_bullets(map: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            section = Some(
                heading
                    .trim()
                    .trim_matches('`')
                    .trim_end_matches('/')
                    .to_owned(),
            );
            continue;
        }
        if line.starts_with("## ") {
            section = None;
            continue;
        }
        let Some(section) = &section else { continue };
        let bullets = out.entry(section.clone()).or_default();
        if let Some(text) = line.strip_prefix("- ") {
            bullets.push(text.to_owned());
        } else if let Some(last) = bullets.last_mut() {
            if !line.trim().is_empty() {
                last.push(' ');
                last.push_str(line.trim());
            }
        }
    }
    out
}

/// Whether `rel` (a path under a crate's `src/`) is named in that crate's bullets: by
/// its whole path in any bullet (`` `sink/rolling/names.rs` ``), or by the rest of its
/// path inside the bullet of one of its folders (`` `fd.rs` `` in the `` `sink/` ``
/// bullet, `` `rolling/names.rs` `` there too). A file name alone elsewhere in the map
/// does not count: the map is checked by paths.
fn named_in(bullets: &[String], rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    for split in 0..parts.len() {
        let folder = parts[..split].join("/");
        let rest = parts[split..].join("/");
        let rest = if rest == "mod.rs" {
            // A folder's mod.rs is named by the folder's own bullet.
            if split == 0 {
                continue;
            }
            String::new()
        } else {
            rest
        };
        for bullet in bullets {
            let in_folder = if rest.is_empty() {
                bullet.starts_with(&format!("`{folder}/`"))
                    || bullet.starts_with(&format!("`{folder}/mod.rs`"))
            } else if split == 0 {
                // A crate-root file: in a bullet of its own, not a folder's.
                !bullet
                    .split('`')
                    .nth(1)
                    .is_some_and(|first| first.contains('/'))
            } else {
                bullet.starts_with(&format!("`{folder}/"))
            };
            if !in_folder {
                continue;
            }
            if rest.is_empty() || bullet.contains(&format!("`{rest}`")) {
                return true;
            }
            // A bullet that starts with the whole path names it.
            if split > 0 && bullet.starts_with(&format!("`{folder}/{rest}`")) {
                return true;
            }
        }
    }
    false
}

/// ARCHITECTURE.md's code map names every source file by its path, so the map cannot
/// fall behind the tree, or name a file in the wrong folder, unnoticed.
#[test]
fn the_code_map_names_every_source_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let sections = code_map_bullets(&map);
    let mut missing = Vec::new();
    for krate in ["loglag", "loglag-lab", "loglag-cli"] {
        let src = root.join("crates").join(krate).join("src");
        let bullets = sections
            .get(&format!("crates/{krate}"))
            .unwrap_or_else(|| panic!("no `crates/{krate}` section in the code map"));
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let rel = f
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "lib.rs" || rel == "main.rs" {
                continue;
            }
            if !named_in(bullets, &rel) {
                missing.push(format!("crates/{krate}/src/{rel}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in ARCHITECTURE.md's code map (by path, in its crate's section): {missing:?}"
    );
}

#[test]
fn the_code_map_check_wants_the_path_not_the_name() {
    let bullets = vec![
        "`sink/` — the trait; fd sinks (`fd.rs`), `rolling/names.rs` is `rolling/names.rs`"
            .to_owned(),
        "`other/` — mentions `stray.rs`".to_owned(),
        "`spool/open.rs` — opening".to_owned(),
    ];
    assert!(named_in(&bullets, "sink/fd.rs"));
    assert!(named_in(&bullets, "sink/mod.rs"));
    assert!(named_in(&bullets, "sink/rolling/names.rs"));
    assert!(named_in(&bullets, "spool/open.rs"));
    assert!(
        !named_in(&bullets, "sink/stray.rs"),
        "named only in another folder's bullet"
    );
    assert!(!named_in(&bullets, "spool/mod.rs"), "no `spool/` bullet");
    assert!(
        !named_in(&bullets, "fd.rs"),
        "a top-level fd.rs is not sink/fd.rs"
    );
}

/// ARCHITECTURE.md's table of files over 800 lines is checked, so its figures cannot
/// drift: every source file (`src/`) of the workspace over 800 lines has a row, and the
/// row's figure is the file's: `code + tests` (the tests from its `#[cfg(test)] mod
/// tests`) or `N (tests)`. No file of the library's `src/` may be over 800 lines.
#[test]
fn the_over_800_table_is_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let arch = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let table = arch
        .split("### Files over 800 lines")
        .nth(1)
        .expect("ARCHITECTURE.md has a `### Files over 800 lines` section")
        .split("\n#")
        .next()
        .unwrap();
    let number = |s: &str| -> usize {
        s.trim()
            .replace(',', "")
            .parse()
            .unwrap_or_else(|_| panic!("not a line count: {s:?}"))
    };
    let mut rows = BTreeMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let file = cells[1].trim_matches('`');
        let figure: Vec<usize> = cells[2]
            .trim_end_matches("(tests)")
            .split('+')
            .map(number)
            .collect();
        let figure = match figure[..] {
            [code, tests] => (code, tests),
            [tests] if cells[2].ends_with("(tests)") => (0, tests),
            _ => panic!("not `code + tests` or `N (tests)`: {line}"),
        };
        rows.insert(format!("crates/{file}"), figure);
    }
    let mut files = Vec::new();
    for krate in ["loglag", "loglag-lab", "loglag-cli"] {
        rust_files(&root.join("crates").join(krate).join("src"), &mut files);
    }
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let code = if rel.ends_with("/tests.rs") {
            0
        } else {
            (1..lines.len())
                .find(|&i| lines[i - 1] == "#[cfg(test)]" && lines[i] == "mod tests {")
                .map_or(lines.len(), |i| i - 1)
        };
        let actual = (code, lines.len() - code);
        let lines = lines.len();
        match rows.remove(&rel) {
            Some(said) if said != actual => wrong.push(format!(
                "{rel}: the table says {said:?} (code, tests), the file has {actual:?}"
            )),
            Some(_) if rel.starts_with("crates/loglag/src/") => wrong.push(format!(
                "{rel}: {lines} lines; the library's files stay under 800"
            )),
            None if lines > 800 => wrong.push(format!("{rel}: {lines} lines and no row")),
            _ => {}
        }
    }
    wrong.extend(
        rows.keys()
            .map(|f| format!("{f}: a row for a file that is not there")),
    );
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's over-800 table: {wrong:#?}"
    );
}
