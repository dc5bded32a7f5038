//! The house holds to its map: every module of `lib.rs` is named in its `# Layout`, imports run
//! only down its layers, the report's model imports only the judge, the workload and the matrix,
//! no folder's modules import each other in a circle (in hookbench and in the
//! receivers), the judge and what feeds it never import the receivers they judge, and
//! docs/testing.md names every test module. Each test reads the source as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Modules below the top level that the map names as units of their own, in a layer below the
/// module holding them: the report's model is plain data that the modules whose figures it
/// records import, under the renderers, which import them.
const UNITS: [&str; 1] = ["report::model"];

/// The modules `lib.rs` declares, and the [`UNITS`].
fn declared() -> Vec<String> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    lib.lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .map(|m| m.trim_end_matches(';').to_string())
        .filter(|m| m != "layout_tests")
        .chain(UNITS.map(String::from))
        .collect()
}

/// Where `text`'s first colon outside backticks is (a unit's name, `report::model`, has two).
fn names_end(text: &str) -> Option<usize> {
    let mut quoted = false;
    text.char_indices().find_map(|(i, c)| {
        if c == '`' {
            quoted = !quoted;
        }
        (c == ':' && !quoted).then_some(i)
    })
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
        while names_end(&names).is_none() {
            let Some(next) = lines.next() else { break };
            names.push(' ');
            names.push_str(next.trim());
        }
        let names = &names[..names_end(&names).unwrap_or(names.len())];
        for name in names.split('`').skip(1).step_by(2) {
            assert!(layers.insert(name.to_string(), n).is_none(), "{name} named twice in the map");
        }
    }
    layers
}

/// Every source file of module `m` (top-level, or one of the [`UNITS`]), but those of a unit
/// inside it.
fn files(m: &str) -> Vec<PathBuf> {
    let path = m.replace("::", "/");
    let file = Path::new(SRC).join(format!("{path}.rs"));
    if file.exists() {
        return vec![file];
    }
    let inner: Vec<PathBuf> = UNITS
        .iter()
        .filter(|u| u.strip_prefix(m).is_some_and(|rest| rest.starts_with("::")))
        .map(|u| Path::new(SRC).join(u.replace("::", "/")))
        .collect();
    let mut out = Vec::new();
    let mut dirs = vec![Path::new(SRC).join(path)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("a module directory").flatten() {
            let p = e.path();
            if p.is_dir() && !inner.contains(&p) {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The module `text` names right after a `crate::`: the longest of `modules` its path starts with
/// (`report::model` for `crate::report::model::Row`, `report` for `crate::report::Report`).
fn named(text: &str, modules: &[String]) -> Option<String> {
    let path: String =
        text.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_' || *c == ':').collect();
    let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
    (1..=parts.len()).rev().map(|n| parts[..n].join("::")).find(|name| modules.contains(name))
}

/// The modules (top-level, or [`UNITS`]) `m`'s code names as `crate::x`.
fn imports(m: &str, modules: &[String]) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for f in files(m) {
        let text = std::fs::read_to_string(&f).expect("a source file");
        for piece in text.split("crate::").skip(1) {
            if let Some(name) = named(piece, modules)
                && name != m
            {
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

/// The modules that run a receiver: one worker (`serve`, and the command line's `serve`, whose
/// flags are the worker's), worker processes (`fleet`), `perf`'s loops and the experiments.
const RUN_RECEIVERS: [&str; 4] = ["serve", "fleet", "perf", "experiments"];

#[test]
fn only_what_runs_a_receiver_imports_the_receivers() {
    for m in declared().iter().filter(|m| !RUN_RECEIVERS.contains(&m.as_str())) {
        let theirs = |f: &PathBuf| f.ends_with("layout_tests.rs") || f.ends_with("cli/serve.rs");
        for f in files(m).into_iter().filter(|f| !theirs(f)) {
            let text = std::fs::read_to_string(&f).expect("a source file");
            assert!(
                !text.contains("receivers::"),
                "{} imports the receivers crate: use crate::matrix",
                f.display()
            );
        }
    }
}

/// The modules a folder holds beside each other: its `x.rs` files (not `mod.rs`, the folder's own
/// module) and its subfolders.
fn siblings(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("a source folder")
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            let module = p.is_dir() || (p.extension().is_some_and(|x| x == "rs") && stem != "mod");
            module.then_some(stem)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The files of sibling `name` in `folder`, each with the `super::` prefix that reaches the folder
/// from it (`super::` from `name.rs` or `name/mod.rs`, `super::super::` from `name/x.rs`, ...).
fn sibling_files(folder: &Path, name: &str) -> Vec<(PathBuf, String)> {
    let file = folder.join(format!("{name}.rs"));
    let mut out = if file.exists() { vec![(file, "super::".to_string())] } else { Vec::new() };
    let mut dirs = vec![(folder.join(name), 1usize)];
    while let Some((d, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for p in entries.flatten().map(|e| e.path()) {
            if p.is_dir() {
                dirs.push((p, depth + 1));
            } else if p.extension().is_some_and(|x| x == "rs") {
                let up = if p.file_stem().is_some_and(|s| s == "mod") { depth } else { depth + 1 };
                out.push((p, "super::".repeat(up)));
            }
        }
    }
    out
}

/// Whether `code` names sibling `to` through `prefix`: `super::to::`, `super::to;` or inside
/// `super::{...}`. A file's tests (after its `#[cfg(test)]`) are left out, their `super::` being
/// the file itself, and so are comments.
fn names_sibling(code: &str, prefix: &str, to: &str) -> bool {
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    // Comments name modules too (a doc link), without importing them.
    let code: String =
        code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let word = |text: &str| text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == to);
    code.match_indices(prefix).any(|(at, _)| {
        let rest = &code[at + prefix.len()..];
        // The prefix must not be the tail of a longer one (`super::super::` read as `super::`).
        let starts_clean = !code[..at].ends_with("super::");
        let direct = rest.strip_prefix(to).is_some_and(|r| r.starts_with("::") || r.starts_with(';'));
        let grouped = rest.strip_prefix('{').and_then(|r| r.split_once('}')).is_some_and(|(g, _)| word(g));
        starts_clean && (direct || grouped)
    })
}

/// A circle among `folder`'s siblings, as the names around it, if there is one; `path` is the
/// folder's module path from its crate's root (`audit`, `wire::payload`; empty at the root), which
/// a sibling may be named through too (`crate::audit::config::AuditConfig`).
fn circle_in(folder: &Path, path: &str) -> Option<Vec<String>> {
    let absolute = if path.is_empty() { "crate::".to_string() } else { format!("crate::{path}::") };
    let names = siblings(folder);
    let edges: BTreeMap<&str, Vec<&str>> = names
        .iter()
        .map(|from| {
            let files = sibling_files(folder, from);
            let texts: Vec<(String, String)> = files
                .iter()
                .map(|(f, prefix)| (std::fs::read_to_string(f).unwrap_or_default(), prefix.clone()))
                .collect();
            let to = names
                .iter()
                .filter(|to| {
                    *to != from
                        && texts.iter().any(|(code, prefix)| {
                            names_sibling(code, prefix, to) || names_sibling(code, &absolute, to)
                        })
                })
                .map(String::as_str)
                .collect();
            (from.as_str(), to)
        })
        .collect();
    // Depth-first, keeping the path: a name met again on it closes a circle.
    fn visit<'a>(
        at: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| *p == at) {
            return Some(path[i..].iter().chain([&at]).map(|s| s.to_string()).collect());
        }
        if done.contains(&at) {
            return None;
        }
        path.push(at);
        for next in edges.get(at).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.push(at);
        None
    }
    let mut done = Vec::new();
    names.iter().find_map(|n| visit(n, &edges, &mut Vec::new(), &mut done))
}

/// Every folder below `root`, `root` included.
fn folders(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let children: Vec<PathBuf> = std::fs::read_dir(&out[i])
            .expect("a folder")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        out.extend(children);
        i += 1;
    }
    out
}

#[test]
fn no_folder_s_modules_import_each_other_in_a_circle() {
    let receivers = concat!(env!("CARGO_MANIFEST_DIR"), "/../receivers/src");
    for root in [Path::new(SRC), Path::new(receivers)] {
        for folder in folders(root) {
            // The top level's order is the layers' (imports_run_only_down_the_layers).
            if folder == Path::new(SRC) {
                continue;
            }
            let path =
                folder.strip_prefix(root).expect("below the root").to_string_lossy().replace('/', "::");
            if let Some(circle) = circle_in(&folder, &path) {
                panic!("in {}: {} import each other in a circle", folder.display(), circle.join(" -> "));
            }
        }
    }
}

#[test]
fn a_circle_is_found_and_a_line_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write("mod.rs", "mod a;\nmod b;\nmod c;\n");
    write("a.rs", "use super::b::B;\n");
    write("b.rs", "use super::{c, Other};\n#[cfg(test)]\nmod tests { use super::super::a; }\n");
    write("c.rs", "pub struct C;\n");
    assert_eq!(circle_in(dir.path(), "m"), None, "a -> b -> c is a line");
    write("c.rs", "fn f() { super::a::g(); }\n");
    assert_eq!(circle_in(dir.path(), "m"), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    write("c.rs", "use crate::m::a::A;\n");
    assert_eq!(circle_in(dir.path(), "m"), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
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

/// What the report's model may import of the crate: the judge, the workload, the matrix, and
/// itself.
const MODEL_IMPORTS: [&str; 4] = ["judge", "workload", "matrix", "report::model"];

/// What `code`, a file of the report's model, imports that it may not: each `crate::` path
/// outside [`MODEL_IMPORTS`], and each `super::` that climbs out of the model (`up` is the
/// prefix that reaches the model's parent from the file: `super::` from mod.rs,
/// `super::super::` from a file beside it). Comments count: a doc link is an import to read.
fn model_strays(code: &str, up: &str) -> Vec<String> {
    let mut strays: Vec<String> = code
        .split("crate::")
        .skip(1)
        .map(|piece| {
            piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect::<String>()
        })
        .filter(|path| !MODEL_IMPORTS.iter().any(|m| path == m || path.starts_with(&format!("{m}::"))))
        .map(|path| format!("crate::{path}"))
        .collect();
    strays.extend(
        code.match_indices(up).filter(|(at, _)| !code[..*at].ends_with("super::")).map(|_| up.to_string()),
    );
    strays
}

#[test]
fn the_report_model_imports_only_the_judge_the_workload_and_the_matrix() {
    // The check itself finds a stray import, and passes a clean one.
    assert_eq!(
        model_strays("use crate::judge::Class;\nuse crate::workload::Layout;\n", "super::super::"),
        Vec::<String>::new()
    );
    assert_eq!(
        model_strays("use crate::stats::Percentiles;\n", "super::super::"),
        ["crate::stats::Percentiles"]
    );
    assert_eq!(model_strays("use crate::report::Report;\n", "super::"), ["crate::report::Report"]);
    assert_eq!(model_strays("use super::super::render::table;\n", "super::super::"), ["super::super::"]);
    let model = Path::new(SRC).join("report/model");
    let files = files("report::model");
    assert!(files.len() > 3, "{files:?}");
    for f in files {
        let up = if f.parent() == Some(model.as_path()) && f.file_stem().is_some_and(|s| s != "mod") {
            "super::super::"
        } else {
            "super::"
        };
        let text = std::fs::read_to_string(&f).expect("a source file");
        let strays = model_strays(&text, up);
        assert!(
            strays.is_empty(),
            "{} imports {strays:?}: the report's model is plain data, importing only {MODEL_IMPORTS:?}",
            f.display()
        );
    }
}
