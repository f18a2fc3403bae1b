//! The layers of `src/`, checked from the source text: each top-level
//! module (a folder, or `sync.rs`) has a place in `LAYERS`, and a file may
//! name, through a `crate::` path, only its own layer or one below. Inside
//! a folder, the files' `crate::<folder>::<file>` paths must not form a
//! circle. A failure names the file and the path.
//!
//! Paths are read as written: a file names another of the crate only as
//! `crate::…` (a `super::` path in a file's own `mod tests` names that
//! file). Comments are skipped, so a doc link may point anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules, lowest first; the order of `docs/architecture.md`.
const LAYERS: &[&str] = &[
    "sync", "value", "queue", "answer", "core", "runtime", "thread",
];

/// One `crate::` path met in a file: its top-level module and, if any, the
/// file it names inside that module's folder.
struct Mention {
    line: usize,
    top: String,
    file: Option<String>,
}

#[test]
fn no_import_runs_upward() {
    let mut faults = Vec::new();
    for source in sources() {
        let Some(own) = layer(&source.top) else {
            faults.push(format!(
                "{}: `{}` is in no layer",
                source.path.display(),
                source.top
            ));
            continue;
        };
        for mention in mentions(&source.text) {
            match layer(&mention.top) {
                Some(other) if other <= own => {}
                Some(_) => faults.push(format!(
                    "{}:{}: `crate::{}` is above `{}`",
                    source.path.display(),
                    mention.line,
                    mention.top,
                    source.top
                )),
                None => faults.push(format!(
                    "{}:{}: `crate::{}` is in no layer",
                    source.path.display(),
                    mention.line,
                    mention.top
                )),
            }
        }
    }
    assert!(
        faults.is_empty(),
        "imports across layers:\n{}",
        faults.join("\n")
    );
}

#[test]
fn no_circle_inside_a_layer() {
    if let Some(circle) = find_circle(&file_edges()) {
        panic!(
            "files naming each other in a circle: {}",
            circle.join(" -> ")
        );
    }
}

/// `docs/imports.md` is the map the two tests above check, written from
/// the sources: it fails when the map is out of date, and
/// `FERRY_WRITE_IMPORTS=1 cargo test -p ferry-shard --test layers` writes it.
#[test]
fn the_import_map_in_docs_is_current() {
    // A link to the repository's `docs/imports.md`, which a packaged copy
    // of the crate holds as a file.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/imports.md");
    let map = import_map();
    if std::env::var_os("FERRY_WRITE_IMPORTS").is_some() {
        fs::write(&path, &map).expect("docs/imports.md is writable");
    }
    let written = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == map,
        "docs/imports.md is not the map of src/ today; \
         `FERRY_WRITE_IMPORTS=1 cargo test -p ferry-shard --test layers` writes it:\n{map}"
    );
}

/// Each file of a folder -> the files of that same folder it names.
fn file_edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources() {
        let Some(own_file) = source.file.clone() else {
            continue;
        };
        let from = format!("{}/{}", source.top, own_file);
        let named = edges.entry(from.clone()).or_default();
        for mention in mentions(&source.text) {
            match mention.file {
                Some(file) if mention.top == source.top && file != own_file => {
                    named.insert(format!("{}/{}", mention.top, file));
                }
                _ => {}
            }
        }
    }
    edges
}

/// The map of `src/` as Markdown: the layers each layer names, then each
/// folder's files and the files of the same folder each names.
fn import_map() -> String {
    let mut layers: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for source in sources() {
        let own = layer(&source.top).expect("every module has a layer");
        let named = layers.entry(own).or_default();
        for mention in mentions(&source.text) {
            let other = layer(&mention.top).expect("every path names a layer");
            if other != own {
                named.insert(other);
            }
        }
    }
    let mut map = String::from(
        "# Imports of `ferry-shard`\n\n\
         Which modules of `shard/src/` name which, written by\n\
         `shard/tests/layers.rs`, which fails when this map is out of date and\n\
         writes it again when asked:\n\n\
         ```\n\
         FERRY_WRITE_IMPORTS=1 cargo test -p ferry-shard --test layers\n\
         ```\n\n\
         Arrows point down only, and no files name each other in a circle.\n\n\
         ## Layers, top first, and the layers below each names\n\n",
    );
    for (own, named) in layers.iter().rev() {
        let names: Vec<String> = named
            .iter()
            .rev()
            .map(|l| format!("`{}`", LAYERS[*l]))
            .collect();
        let arrow = if names.is_empty() {
            "(none)".to_string()
        } else {
            names.join(", ")
        };
        map.push_str(&format!("- `{}` → {arrow}\n", LAYERS[*own]));
    }
    map.push_str("\n## Inside each folder: the files of the same folder each names\n\n");
    for (from, named) in file_edges() {
        if named.is_empty() {
            continue;
        }
        let names: Vec<String> = named.iter().map(|f| format!("`{f}`")).collect();
        map.push_str(&format!("- `{from}` → {}\n", names.join(", ")));
    }
    map
}

#[test]
fn the_check_sees_an_upward_path_and_a_circle() {
    let text = "//! crate::thread::x in a comment\nuse crate::thread::handle::Shard;\n";
    let found: Vec<_> = mentions(text)
        .into_iter()
        .map(|m| (m.line, m.top, m.file))
        .collect();
    assert_eq!(
        found,
        vec![(2, "thread".to_string(), Some("handle".to_string()))]
    );
    assert!(layer("thread") > layer("queue"));
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("q/a".into()).or_default().insert("q/b".into());
    edges.entry("q/b".into()).or_default().insert("q/a".into());
    assert!(find_circle(&edges).is_some());
    edges.get_mut("q/b").unwrap().clear();
    assert!(find_circle(&edges).is_none());
}

fn layer(top: &str) -> Option<usize> {
    LAYERS.iter().position(|name| *name == top)
}

/// A source file of `src/` (but `lib.rs`, the top, which may name all).
struct Source {
    path: PathBuf,
    /// Its top-level module: its folder, or its own name at the root.
    top: String,
    /// Its name inside its folder (`None` for `mod.rs` and root files).
    file: Option<String>,
    text: String,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for entry in fs::read_dir(&root).expect("src/ is readable") {
        let path = entry.expect("an entry of src/").path();
        if path.is_dir() {
            let top = stem(&path);
            for inner in fs::read_dir(&path).expect("a folder of src/ is readable") {
                let inner = inner.expect("an entry of a folder").path();
                assert!(!inner.is_dir(), "{}: one level of folders", inner.display());
                let name = stem(&inner);
                let file = (name != "mod").then_some(name);
                found.push(source(inner, top.clone(), file));
            }
        } else if stem(&path) != "lib" {
            let top = stem(&path);
            found.push(source(path, top, None));
        }
    }
    assert!(found.len() > 30, "the source files were found");
    found
}

fn source(path: PathBuf, top: String, file: Option<String>) -> Source {
    let text = fs::read_to_string(&path).expect("a source file is readable");
    Source {
        path,
        top,
        file,
        text,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|stem| stem.to_str())
        .expect("a file name in UTF-8")
        .to_string()
}

/// The `crate::` paths of `text` outside comments, including those inside
/// `use crate::{a::b, c}` groups.
fn mentions(text: &str) -> Vec<Mention> {
    let mut found = Vec::new();
    let mut group: Option<usize> = None;
    for (index, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let line_no = index + 1;
        if group.is_some() {
            paths_in_group(code, line_no, &mut found);
            if code.contains("};") {
                group = None;
            }
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            if let Some(group_text) = after.strip_prefix('{') {
                paths_in_group(group_text, line_no, &mut found);
                if !after.contains('}') {
                    group = Some(line_no);
                }
            } else if let Some(mention) = mention(after, line_no) {
                found.push(mention);
            }
            rest = after;
        }
    }
    found
}

/// The paths of a `use crate::{…}` group's text (`a::b::C, d`).
fn paths_in_group(text: &str, line: usize, found: &mut Vec<Mention>) {
    let text = text.split('}').next().unwrap_or("");
    for part in text.split(',') {
        if let Some(mention) = mention(part.trim(), line) {
            found.push(mention);
        }
    }
}

fn mention(path: &str, line: usize) -> Option<Mention> {
    let words: Vec<&str> = path
        .split("::")
        .take(2)
        .map(|word| {
            word.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
        })
        .collect();
    let top = words.first().filter(|word| starts_lower(word))?.to_string();
    let file = words
        .get(1)
        .filter(|word| starts_lower(word))
        .map(|word| word.to_string());
    Some(Mention { line, top, file })
}

fn starts_lower(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// A circle in `edges`, as the files along it, if there is one.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}
