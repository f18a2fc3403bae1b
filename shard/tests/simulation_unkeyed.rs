//! Deterministic simulation of one unkeyed shard
//! (docs/guarantees.md#unkeyed-batching).
//!
//! The same `ShardCore` the shard loop drives, over the unkeyed
//! `Fifo`, is driven here by a seed with a simulated clock and a simulated
//! batch function: callers submit inputs with weights (some too heavy for
//! any batch), batches take a seeded time and end in a seeded way (outputs,
//! an error, a panic, the wrong number of outputs, or hanging until close),
//! callers drop their answer receivers, and the shard is closed at a seeded
//! moment. Events due at the same moment happen in a seeded order.
//!
//! The event loop, the callers and the checks every discipline keeps are
//! `sim/harness.rs`; what is the unkeyed discipline's own is
//! `sim/unkeyed.rs`. After every event the run is checked against an
//! independent reference (`sim/unkeyed_reference.rs`: a plain `Vec` of
//! waiting inputs in admission order, readiness from its definition):
//!
//! - G4: every input ends in exactly one outcome, the right one; a refused
//!   input comes back unchanged, at once, with the reason the reference
//!   expects;
//! - FIFO: each batch is exactly the front of what waits, as many inputs as
//!   fit the size and weight bounds; all batches one after the other are
//!   the admitted inputs in admission order;
//! - G6: the waiting count and weight are the reference's and within
//!   `max_waiting` / `max_waiting_weight`;
//! - slots: at most `max_in_flight_batches` batches are out, each holding
//!   one slot (and no trip is ever counted); a slot is never
//!   left free while a batch is ready (the G8 analogue), and while a slot is
//!   free the core's next deadline is never later than the oldest waiting
//!   input's due time (with every slot busy, a completion comes first);
//! - G9: nothing is admitted after close, everything admitted is answered,
//!   and the core ends quiet;
//! - G10: a failed, panicked or miscounted batch fails its own callers only.
//!
//! Three quarters of the seeds also play the overload settings
//! (docs/guarantees.md#flush-overload-and-withdrawal), each on or off by the
//! seed; the others play exactly as before those settings existed:
//!
//! - `max_queue_time`: at each moment the reference says inputs expire,
//!   `expire` answers exactly those `Expired`, the input handed back
//!   unchanged, and the core's next deadline is never later than the next
//!   expiry, whether a slot is free or not;
//! - `withdraw_on_drop`: callers drop their answer receivers at seeded
//!   moments, some sending a withdrawal notice a little later, some none. A
//!   caller gone before its input is taken has it withdrawn, never sent (by
//!   the notice, if it is among the first inputs of the queue, or by the
//!   take that forms its batch); one gone after the take has it sent;
//! - flush requests at seeded moments: each is told exactly once every
//!   input admitted before it is resolved, not before, and not after the
//!   event that resolved the last of them;
//! - after every event: submitted = answered + refused + expired +
//!   withdrawn + open (waiting or in flight), and the core's counters say
//!   the same.
//!
//! `cargo test` plays seeds `0..1000`. More (or other) seeds:
//!
//! ```text
//! FERRY_SIM_SEEDS=1000000 cargo test -p ferry-shard --release --test simulation_unkeyed
//! FERRY_SIM_FIRST=5000000 FERRY_SIM_SEEDS=1000 cargo test -p ferry-shard --test simulation_unkeyed
//! FERRY_SIM_SEED=42 FERRY_SIM_TRACE=1 cargo test -p ferry-shard --test simulation_unkeyed -- --nocapture
//! ```
//!
//! A failing seed prints the one command that replays it.

/// The pieces of `sim/` this simulation plays: the harness every
/// discipline shares and the unkeyed discipline.
mod sim {
    pub mod answer;
    pub mod arrival;
    pub mod draws;
    pub mod flushes;
    pub mod harness;
    pub mod plan;
    pub mod rng;
    pub mod seeds;
    pub mod summary;
    pub mod unkeyed;
    pub mod unkeyed_reference;
    pub mod unkeyed_scenario;
}

use sim::seeds;
use sim::summary::Summary;
use sim::unkeyed::{Unkeyed, UnkeyedTally};

/// Plays one seed; a panic inside the core counts as a failure of the seed.
fn play(seed: u64, trace: bool) -> Result<Summary<UnkeyedTally>, String> {
    sim::harness::play::<Unkeyed>(seed, (), trace)
}

fn replay_command(seed: u64) -> String {
    format!("FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation_unkeyed")
}

#[test]
fn every_seed_keeps_fifo_slots_and_g4_g6_g9_g10() {
    let Some(summary) = seeds::play_seeds("unkeyed simulation", play, replay_command) else {
        return;
    };
    // The seeds reach every case the checks are about; otherwise a passing
    // run would prove little.
    let unkeyed = &summary.more;
    summary.assert_reached(&[
        ("batches of more than one input", unkeyed.batches_grouped),
        (
            "batches cut by the weight bound",
            unkeyed.batches_cut_by_weight,
        ),
        ("batches sent because due", unkeyed.batches_due),
        (
            "batches beside another in flight",
            unkeyed.batches_beside_another,
        ),
        (
            "ready batches waiting for a slot",
            unkeyed.ready_without_a_slot,
        ),
    ]);
}

#[test]
fn a_seed_replays_the_same_run() {
    for seed in [0, 7, 1_234_567] {
        assert_eq!(play(seed, false), play(seed, false), "seed {seed}");
    }
}
