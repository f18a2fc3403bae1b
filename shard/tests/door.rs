//! The crate's door, counted from `src/lib.rs`: the names it exports at its
//! root and in the hidden `parts` module (the module itself aside), without
//! the `internals` feature's. `ferry` builds on these and nothing else, so
//! each one is a promise to keep; the count may fall, and may only rise
//! with this bound.

use std::fs;
use std::path::Path;

/// The most names the crate exports by default: 30 at its root, 5 in
/// `parts`.
const MOST: usize = 35;

#[test]
fn the_door_is_narrow() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = fs::read_to_string(&path).expect("src/lib.rs is readable");
    let names = exported(&text);
    assert!(
        names.len() <= MOST,
        "ferry-shard exports {} names, more than {MOST}: {names:?}",
        names.len()
    );
    // Some names a user of `ferry` meets through it: counted, so the
    // reading above is not an empty one.
    for name in ["Shard", "ShardConfig", "QueueConfig", "Lanes", "Waiter"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} not found in {names:?}"
        );
    }
}

#[test]
fn internals_are_not_counted() {
    let text = "pub use crate::a::{B, C};\n\
                pub mod parts {\n\
                    pub use crate::d::E;\n\
                    #[cfg(feature = \"internals\")]\n\
                    pub use self::internals::*;\n\
                    #[cfg(feature = \"internals\")]\n\
                    mod internals {\n\
                        pub use crate::f::{G, H};\n\
                    }\n\
                }\n";
    assert_eq!(exported(text), ["B", "C", "E"]);
}

/// The names of the `pub use` items of `text` (and any `pub` item defined
/// in it but the module `parts`), skipping comments and the `internals`
/// feature's lines and module.
fn exported(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut statement = String::new();
    let mut skip_next = false;
    let mut internal_depth: Option<i32> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        if let Some(depth) = internal_depth.as_mut() {
            *depth += braces(line);
            if *depth <= 0 {
                internal_depth = None;
            }
            continue;
        }
        if line == "#[cfg(feature = \"internals\")]" {
            skip_next = true;
            continue;
        }
        if std::mem::take(&mut skip_next) {
            if line.starts_with("mod ") && line.ends_with('{') {
                internal_depth = Some(braces(line));
            }
            continue;
        }
        if !statement.is_empty() || line.starts_with("pub use ") {
            statement.push_str(line);
            if line.ends_with(';') {
                names.extend(used_names(&std::mem::take(&mut statement)));
            }
        } else if let Some(name) = defined_name(line) {
            names.push(name);
        }
    }
    names
}

/// The net count of opening braces on a line.
fn braces(line: &str) -> i32 {
    line.matches('{').count() as i32 - line.matches('}').count() as i32
}

/// The names a `pub use path::{A, B};` or `pub use path::A;` brings in.
fn used_names(statement: &str) -> Vec<String> {
    let body = statement
        .trim_start_matches("pub use ")
        .trim_end_matches(';');
    let list = match body.find('{') {
        Some(open) => &body[open + 1..body.rfind('}').unwrap_or(body.len())],
        None => body.rsplit("::").next().unwrap_or(body),
    };
    list.split(',')
        .map(|name| name.trim().rsplit(" as ").next().unwrap_or("").trim())
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// The name of a `pub` item defined on this line, but the module `parts`.
fn defined_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("pub ")?;
    let mut words = rest.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    let kind = words.next()?;
    let name = words.find(|word| !word.is_empty())?;
    match (kind, name) {
        ("mod", "parts") => None,
        ("fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "mod", _) => {
            Some(name.to_string())
        }
        _ => None,
    }
}
