//! A crate's layers, read from its source text: each top-level module (a
//! folder, or a file at the root) has a place in a list, lowest first, and
//! a file may name, through a `crate::` path, only its own layer or one
//! below. Inside a layer, the files' `crate::` paths to each other must not
//! form a circle. Used by the layer tests of `ferry-shard` and
//! `ferry-bench`.
//!
//! Paths are read as written: a file names another of the crate only as
//! `crate::…` (a `super::` path in a file's own `mod tests` names that
//! file). Comments are skipped, so a doc link may point anywhere. A
//! folder's `mod.rs` declares and re-exports its files, so it is the
//! folder itself, not a file of it.

// Each crate's test uses the part it needs.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The source of one crate and its layers, lowest first.
pub struct Layers {
    sources: Vec<Source>,
    layers: &'static [&'static str],
}

/// A source file of `src/` (but `lib.rs` and `main.rs`, the top, which
/// may name all).
struct Source {
    path: PathBuf,
    /// Its top-level module: its folder, or its own name at the root.
    top: String,
    /// Its module path under `src/`, `/` between the words (`queue/lanes`,
    /// `sources/kafka/member`); `None` for a `mod.rs` and a root file.
    file: Option<String>,
    text: String,
}

/// One `crate::` path met in a file: its line and its lowercase words.
struct Mention {
    line: usize,
    words: Vec<String>,
}

impl Layers {
    /// The sources under `root` (a crate's `src/`).
    pub fn read(root: &Path, layers: &'static [&'static str]) -> Self {
        let mut sources = Vec::new();
        walk(root, &[], &mut sources);
        Self { sources, layers }
    }

    /// How many source files were read.
    pub fn files(&self) -> usize {
        self.sources.len()
    }

    /// Every path that names a layer above its file's, or a module in no
    /// layer, as `file:line: why`.
    pub fn upward(&self) -> Vec<String> {
        let mut faults = Vec::new();
        for source in &self.sources {
            let Some(own) = self.layer(&source.top) else {
                faults.push(format!(
                    "{}: `{}` is in no layer",
                    source.path.display(),
                    source.top
                ));
                continue;
            };
            for mention in mentions(&source.text) {
                let top = &mention.words[0];
                match self.layer(top) {
                    Some(other) if other <= own => {}
                    Some(_) => faults.push(format!(
                        "{}:{}: `crate::{top}` is above `{}`",
                        source.path.display(),
                        mention.line,
                        source.top
                    )),
                    None => faults.push(format!(
                        "{}:{}: `crate::{top}` is in no layer",
                        source.path.display(),
                        mention.line
                    )),
                }
            }
        }
        faults
    }

    /// A circle of files naming each other, if there is one.
    pub fn circle(&self) -> Option<Vec<String>> {
        find_circle(&self.file_edges())
    }

    /// The map of `src/` as Markdown, headed by `head`: the layers each
    /// layer names, then each folder's files and the files of the same
    /// folder each names.
    pub fn map(&self, head: &str) -> String {
        let mut layers: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for source in &self.sources {
            let own = self.layer(&source.top).expect("every module has a layer");
            let named = layers.entry(own).or_default();
            for mention in mentions(&source.text) {
                let other = self
                    .layer(&mention.words[0])
                    .expect("every path names a layer");
                if other != own {
                    named.insert(other);
                }
            }
        }
        let mut map = format!("{head}## Layers, top first, and the layers below each names\n\n");
        for (own, named) in layers.iter().rev() {
            let names: Vec<String> = named
                .iter()
                .rev()
                .map(|l| format!("`{}`", self.layers[*l]))
                .collect();
            let arrow = if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            };
            map.push_str(&format!("- `{}` → {arrow}\n", self.layers[*own]));
        }
        map.push_str("\n## Inside each folder: the files of the same folder each names\n\n");
        for (from, named) in self.file_edges() {
            if named.is_empty() {
                continue;
            }
            let names: Vec<String> = named.iter().map(|f| format!("`{f}`")).collect();
            map.push_str(&format!("- `{from}` → {}\n", names.join(", ")));
        }
        map
    }

    fn layer(&self, top: &str) -> Option<usize> {
        self.layers.iter().position(|name| *name == top)
    }

    /// Each file -> the files of its own layer it names (a path names the
    /// longest file its words lead to; a folder's `mod.rs` is none).
    fn file_edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let files: BTreeSet<&str> = self
            .sources
            .iter()
            .filter_map(|s| s.file.as_deref())
            .collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for source in &self.sources {
            let Some(own) = source.file.clone() else {
                continue;
            };
            let named = edges.entry(own.clone()).or_default();
            for mention in mentions(&source.text) {
                if mention.words[0] != source.top {
                    continue;
                }
                let target = (2..=mention.words.len())
                    .rev()
                    .map(|n| mention.words[..n].join("/"))
                    .find(|path| files.contains(path.as_str()));
                match target {
                    Some(file) if file != own => {
                        named.insert(file);
                    }
                    _ => {}
                }
            }
        }
        edges
    }
}

fn walk(dir: &Path, above: &[String], found: &mut Vec<Source>) {
    for entry in fs::read_dir(dir).expect("a folder of src/ is readable") {
        let path = entry.expect("an entry of src/").path();
        let name = stem(&path);
        let mut words = above.to_vec();
        if path.is_dir() {
            words.push(name);
            walk(&path, &words, found);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        if words.is_empty() && (name == "lib" || name == "main") {
            continue;
        }
        let file = (name != "mod").then(|| {
            words.push(name.clone());
            words.join("/")
        });
        let top = above.first().cloned().unwrap_or(name);
        let text = fs::read_to_string(&path).expect("a source file is readable");
        found.push(Source {
            path,
            top,
            file: file.filter(|_| !above.is_empty()),
            text,
        });
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

/// The leading lowercase words of a path (`a::b::C` -> `a`, `b`).
fn mention(path: &str, line: usize) -> Option<Mention> {
    let words: Vec<String> = path
        .split("::")
        .map(|word| {
            word.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
        })
        .take_while(|word| starts_lower(word))
        .map(str::to_string)
        .collect();
    (!words.is_empty()).then_some(Mention { line, words })
}

fn starts_lower(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// A circle in `edges`, as the files along it, if there is one.
pub fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
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

/// Whether the reading sees an upward path and a circle: a check that can
/// fail, shown failing on made-up text.
pub fn sees_an_upward_path_and_a_circle(layers: &'static [&'static str]) {
    let (low, high) = (layers[0], layers[layers.len() - 1]);
    let text = format!("//! crate::{high}::x in a comment\nuse crate::{high}::handle::Shard;\n");
    let found: Vec<_> = mentions(&text)
        .into_iter()
        .map(|m| (m.line, m.words))
        .collect();
    assert_eq!(
        found,
        vec![(2, vec![high.to_string(), "handle".to_string()])]
    );
    let sources = vec![Source {
        path: PathBuf::from("made-up.rs"),
        top: low.to_string(),
        file: Some(format!("{low}/a")),
        text,
    }];
    let upward = Layers { sources, layers }.upward();
    assert_eq!(upward.len(), 1, "{upward:?}");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("q/a".into()).or_default().insert("q/b".into());
    edges.entry("q/b".into()).or_default().insert("q/a".into());
    assert!(find_circle(&edges).is_some());
    edges.get_mut("q/b").unwrap().clear();
    assert!(find_circle(&edges).is_none());
}
