//! The house holds to its map: every module of `lib.rs` is named in its `# Layout`, imports run
//! only down its layers, the judge and what feeds it never import the receivers they judge, and
//! docs/testing.md names every test module. Each test reads the source as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The modules `lib.rs` declares.
fn declared() -> Vec<String> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    lib.lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .map(|m| m.trim_end_matches(';').to_string())
        .filter(|m| m != "layout_tests")
        .collect()
}

/// The layer each module of `lib.rs`'s map is in: the lines `//! N. `a`, `b`: ...`.
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    let mut layers = BTreeMap::new();
    let mut lines = lib.lines().filter_map(|l| l.strip_prefix("//! "));
    while let Some(line) = lines.next() {
        let Some((n, rest)) = line.split_once(". ") else { continue };
        let Ok(n) = n.parse::<usize>() else { continue };
        // The names run up to the first colon, over as many lines as they take.
        let mut names = rest.to_string();
        while !names.contains(':') {
            let Some(next) = lines.next() else { break };
            names.push(' ');
            names.push_str(next.trim());
        }
        let names = names.split(':').next().unwrap_or_default();
        for name in names.split('`').skip(1).step_by(2) {
            assert!(layers.insert(name.to_string(), n).is_none(), "{name} named twice in the map");
        }
    }
    layers
}

/// Every source file of top-level module `m`.
fn files(m: &str) -> Vec<PathBuf> {
    let file = Path::new(SRC).join(format!("{m}.rs"));
    if file.exists() {
        return vec![file];
    }
    let mut out = Vec::new();
    let mut dirs = vec![Path::new(SRC).join(m)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("a module directory").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The top-level modules `m`'s code names as `crate::x`.
fn imports(m: &str, modules: &[String]) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for f in files(m) {
        let text = std::fs::read_to_string(&f).expect("a source file");
        for piece in text.split("crate::").skip(1) {
            let name: String = piece.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if name != m && modules.contains(&name) {
                found.push((name, f.clone()));
            }
        }
    }
    found
}

#[test]
fn every_module_is_named_in_the_map_once() {
    let (declared, layers) = (declared(), layers());
    for m in &declared {
        assert!(layers.contains_key(m), "lib.rs's # Layout does not name `{m}`");
    }
    for m in layers.keys() {
        assert!(declared.contains(m), "lib.rs's # Layout names `{m}`, which lib.rs does not declare");
    }
}

#[test]
fn imports_run_only_down_the_layers() {
    let (declared, layers) = (declared(), layers());
    for m in &declared {
        for (to, file) in imports(m, &declared) {
            assert!(
                layers[&to] < layers[m],
                "{} imports `{to}` (layer {}) from `{m}` (layer {}): only lower layers",
                file.display(),
                layers[&to],
                layers[m]
            );
        }
    }
}

#[test]
fn the_judge_and_what_feeds_it_never_import_the_receivers() {
    for m in ["judge", "observe", "wire", "sender"] {
        for f in files(m) {
            let text = std::fs::read_to_string(&f).expect("a source file");
            assert!(!text.contains("receivers::"), "{} imports the receivers it judges", f.display());
        }
    }
}

/// The test modules a test binary's `main.rs` declares.
fn test_modules(main: &str) -> Vec<String> {
    let text = std::fs::read_to_string(main).expect("a test binary's main.rs");
    text.lines().filter_map(|l| l.strip_prefix("mod ")).map(|m| m.trim_end_matches(';').to_string()).collect()
}

#[test]
fn docs_testing_names_every_test_module() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let doc = std::fs::read_to_string(format!("{root}/docs/testing.md")).expect("docs/testing.md");
    let mut modules = test_modules(&format!("{root}/harness/tests/it/main.rs"));
    modules.extend(test_modules(&format!("{root}/receivers/tests/it/main.rs")));
    modules.push("jitter".to_string());
    assert!(modules.len() > 10, "{modules:?}");
    for m in modules {
        assert!(doc.contains(&format!("`{m}`")), "docs/testing.md does not name the test module `{m}`");
    }
}
