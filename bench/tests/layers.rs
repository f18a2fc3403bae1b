//! The layers of `ferry-load`'s `src/`, checked from the source text: each
//! top-level folder has a place in `LAYERS`, lowest first, and a file may
//! name, through a `crate::` path, only its own layer or one below; inside
//! a layer no files name each other in a circle. A failure names the file
//! and the path. (The reading is `ferry-shard`'s, which checks its own
//! layers the same way.)

use std::path::Path;

#[path = "../../shard/tests/layer_map/mod.rs"]
mod layer_map;

use layer_map::Layers;

/// The top-level modules, lowest first; the order of `src/lib.rs`.
const LAYERS: &[&str] = &[
    "base",
    "servers",
    "scenarios",
    "store",
    "systems",
    "sources",
    "report",
    "run",
    "cli",
];

fn layers() -> Layers {
    let layers = Layers::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), LAYERS);
    assert!(layers.files() > 40, "the source files were found");
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

#[test]
fn the_check_sees_an_upward_path_and_a_circle() {
    layer_map::sees_an_upward_path_and_a_circle(LAYERS);
}
