//! The layers of `src/`, checked from the source text (`layer_map`): each
//! top-level module (a folder, or `sync.rs`) has a place in `LAYERS`, and a
//! file may name, through a `crate::` path, only its own layer or one
//! below. Inside a folder, the files' `crate::<folder>::<file>` paths must
//! not form a circle. A failure names the file and the path.

use std::fs;
use std::path::Path;

mod layer_map;

use layer_map::Layers;

/// The top-level modules, lowest first; the order of `docs/architecture.md`.
const LAYERS: &[&str] = &[
    "sync", "value", "queue", "answer", "core", "runtime", "thread",
];

fn layers() -> Layers {
    let layers = Layers::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), LAYERS);
    assert!(layers.files() > 30, "the source files were found");
    layers
}

#[test]
fn no_import_runs_upward() {
    let faults = layers().upward();
    assert!(
        faults.is_empty(),
        "imports across layers:\n{}",
        faults.join("\n")
    );
}

#[test]
fn no_circle_inside_a_layer() {
    if let Some(circle) = layers().circle() {
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
    let map = layers().map(
        "# Imports of `ferry-shard`\n\n\
         Which modules of `shard/src/` name which, written by\n\
         `shard/tests/layers.rs`, which fails when this map is out of date and\n\
         writes it again when asked:\n\n\
         ```\n\
         FERRY_WRITE_IMPORTS=1 cargo test -p ferry-shard --test layers\n\
         ```\n\n\
         Arrows point down only, and no files name each other in a circle.\n\n",
    );
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

#[test]
fn the_check_sees_an_upward_path_and_a_circle() {
    layer_map::sees_an_upward_path_and_a_circle(LAYERS);
}
