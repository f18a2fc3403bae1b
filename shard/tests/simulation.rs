//! Deterministic simulation of one shard.
//!
//! The shard's decisions live in [`ShardCore`], which reacts to events (an
//! input arrived, a batch completed, time passed, close) and knows no
//! runtime. Here a seed drives that very core with a simulated clock and a
//! simulated batch function: callers submit to a few keys with ranks and
//! weights, batches take a seeded time and end in a seeded way (outputs,
//! an error, a panic, the wrong number of outputs, or hanging until close),
//! callers drop their futures, and the shard is closed at a seeded moment.
//! Events due at the same moment happen in a seeded order.
//!
//! The event loop, the callers and the checks every discipline keeps are
//! `sim/harness.rs`; what is the keyed discipline's own is `sim/keyed.rs`.
//! After every event the run is checked against an independent reference
//! (`sim/reference.rs`, plain `Vec`s per key, readiness from its definition):
//!
//! - G1: a key is never dispatched while its previous batch is in flight;
//! - G2: a batch is exactly the lowest (rank, admission) inputs of its key
//!   waiting at that moment, as many as fit;
//! - G3: every input of a batch is of the batch's key;
//! - G4: every input ends in exactly one outcome, the right one; a refused
//!   input comes back unchanged with the reason the reference expects;
//! - G5: the shard's lanes are exactly the reference's keys with waiting
//!   inputs or a batch in flight, and none is left at the end;
//! - G6: waiting inputs and weight equal the reference's and stay in bounds;
//! - G7: no lane is dispatched ahead of one that was surely in line before
//!   it became ready; `g7_strict_first_come_first_served` checks the strict
//!   reading too: a lane is in line from the moment it is due, even while
//!   every slot is busy.
//! - G8: a slot is never left free while a lane is ready, and the shard's
//!   next deadline is never later than a waiting lane's due time;
//! - G9: nothing is admitted after close, everything admitted is answered,
//!   and the shard ends quiet;
//! - G10: a failed, panicked or miscounted batch fails its own callers only.
//!
//! Three quarters of the seeds also play the overload settings
//! (docs/guarantees.md#flush-overload-and-withdrawal), each on or off by the
//! seed; the others play exactly as before those settings existed:
//!
//! - `max_queue_time`: at each moment the reference says inputs expire,
//!   `expire` answers exactly those `Expired`, the input handed back
//!   unchanged; none already taken; and the shard's next deadline is never
//!   later than the next expiry, whether a slot is free or not;
//! - `withdraw_on_drop`: callers drop their futures at seeded moments, some
//!   sending a withdrawal notice a little later, some none. A caller gone
//!   before its input is taken has it withdrawn, never sent (by the notice,
//!   if it is among the first inputs of its lane, or by the take that
//!   reaches it); one gone after the take has it sent and answered;
//! - `max_waiting_per_key` with a hot key: `KeyFull` exactly when the
//!   reference says, counting waiting inputs only;
//! - flush requests at seeded moments: each is told exactly once every
//!   input admitted before it is resolved, not before, and not after the
//!   event that resolved the last of them;
//! - after every event: submitted = answered + refused + expired +
//!   withdrawn + open (waiting or in flight), and the shard's counters say
//!   the same; each key's lane state is the reference's.
//!
//! Every seed is also played with trips (the `_with_trips` tests): each
//! slot is filled by `dispatch_trip` with up to the seed's bound of ready
//! lanes' batches, and emptied by `release_trip` then `answer_trip`. The
//! same scenario (one or two slots), the same checks batch by batch, and
//! besides: a trip holds no key twice, takes one slot (trips in flight
//! never exceed the slots), carries at most its bound of batches and, past
//! its first batch, of weight, and leaves no lane ready that it could have
//! carried (a trip that stops short stops at a batch that would take it
//! past its weight, as the core weighs its takes: before the inputs of gone
//! callers are withdrawn from them). A trip returns one result per batch,
//! each as its own plan says, or panics, or returns the wrong number of
//! results (failing every batch of it), or hangs until close, which then
//! races the trips in flight; `close_while_a_trip_is_in_flight_…` plays
//! that race step by step.
//!
//! `cargo test` plays seeds `0..1000`. More (or other) seeds:
//!
//! ```text
//! FERRY_SIM_SEEDS=1000000 cargo test -p ferry-shard --release --test simulation
//! FERRY_SIM_FIRST=5000000 FERRY_SIM_SEEDS=1000 cargo test -p ferry-shard --test simulation
//! FERRY_SIM_SEED=42 FERRY_SIM_TRACE=1 cargo test -p ferry-shard --test simulation -- --nocapture
//! ```
//!
//! A failing seed prints the one command that replays it.

/// The pieces of `sim/` this simulation plays: the harness every
/// discipline shares, the keyed discipline, and the event-time run.
mod sim {
    pub mod answer;
    pub mod arrival;
    pub mod draws;
    pub mod event_time;
    pub mod flushes;
    pub mod harness;
    pub mod keyed;
    pub mod plan;
    pub mod reference;
    pub mod rng;
    pub mod scenario;
    pub mod seeds;
    pub mod summary;
}

use ferry_shard::parts::{answer_cell, BatchOutcome, Ended, Receiver, Submission, TripLimits};
use ferry_shard::Offer;
use ferry_shard::{key_hash, FerryError, Refused};

use sim::answer::try_answer;
use sim::arrival::{at, Played};
use sim::harness::{BatchError, Output};
use sim::keyed::{Keyed, KeyedTally, Mode};
use sim::scenario::Input;
use sim::seeds;
use sim::summary::Summary;

type Outcome = Result<Output, FerryError<Input, BatchError>>;
type Core = sim::harness::Core<Keyed>;

/// Plays one seed; a panic inside the shard counts as a failure of the seed.
fn play(seed: u64, mode: Mode, trace: bool) -> Result<Summary<KeyedTally>, String> {
    sim::harness::play::<Keyed>(seed, mode, trace)
}

/// The test that plays seeds in `mode`.
fn test_of(mode: Mode) -> &'static str {
    match (mode.strict_fairness, mode.trips) {
        (false, false) => "every_seed_keeps_g1_to_g10",
        (true, false) => "g7_strict_first_come_first_served",
        (false, true) => "every_seed_keeps_g1_to_g10_with_trips",
        (true, true) => "g7_strict_first_come_first_served_with_trips",
    }
}

fn replay_command(seed: u64, mode: Mode) -> String {
    format!(
        "FERRY_SIM_SEED={seed} cargo test -p ferry-shard --test simulation {} -- --exact",
        test_of(mode)
    )
}

/// Plays the seeds the environment asks for (see the module docs) and fails
/// with the replay command of the first seed that breaks a guarantee.
fn play_seeds(strict_fairness: bool, trips: bool) -> Option<Summary<KeyedTally>> {
    let mode = Mode {
        strict_fairness,
        trips,
    };
    seeds::play_seeds(
        test_of(mode),
        |seed, trace| play(seed, mode, trace),
        |seed| replay_command(seed, mode),
    )
}

/// The cases every keyed way of playing must reach, besides those of every
/// discipline; otherwise a passing run would prove little.
fn assert_reached(summary: &Summary<KeyedTally>, more: &[(&str, u64)]) {
    let keyed = &summary.more;
    let reached = [
        ("late inputs", keyed.late_inputs),
        ("contended dispatches", keyed.contended),
        ("refused KeyFull", keyed.refused_key_full),
        (
            "KeyFull beside a batch in flight",
            keyed.key_full_beside_a_batch,
        ),
        (
            "lanes emptied in the ready line",
            keyed.lanes_emptied_in_line,
        ),
        ("emptied lanes given an input", keyed.lanes_refilled_in_line),
    ];
    let all: Vec<(&str, u64)> = reached.iter().chain(more).copied().collect();
    summary.assert_reached(&all);
}

#[test]
fn every_seed_keeps_g1_to_g10() {
    let Some(summary) = play_seeds(false, false) else {
        return;
    };
    assert_reached(&summary, &[]);
    assert_eq!(summary.more.trips, 0, "no trip without trips");
}

/// The same seeds, each slot filled with a trip (`dispatch_trip`,
/// `release_trip`, `answer_trip`) within the seed's trip bounds: every
/// guarantee above holds batch by batch, and besides, a trip holds no key
/// twice, takes one slot (trips in flight never exceed the slots), carries
/// at most its bound of batches and, past its first, of weight, and leaves
/// no lane ready that it could have carried. A trip ends as a whole
/// (results, one per batch; a panic; the wrong number of results) or hangs
/// until close, which then races the trips in flight.
#[test]
fn every_seed_keeps_g1_to_g10_with_trips() {
    let Some(summary) = play_seeds(false, true) else {
        return;
    };
    let trips = &summary.more;
    assert_reached(
        &summary,
        &[
            ("trips", trips.trips),
            ("trips of several batches", trips.trips_of_several),
            ("trips of their most batches", trips.trips_full),
            ("trips ended by their weight", trips.trips_stopped_by_weight),
            (
                "trips whose first batch is past their weight",
                trips.trips_heavy_first,
            ),
            ("trips that withdrew inputs", trips.trips_with_withdrawals),
            (
                "trips with the wrong number of results",
                summary.trips_wrong_results,
            ),
            (
                "trips of several batches that panicked",
                summary.trips_panicked_with_mates,
            ),
            (
                "trips of several batches in flight at close",
                summary.trips_in_flight_at_close,
            ),
        ],
    );
}

/// G7 read literally: a lane is ready from the moment it is due, even if no
/// slot is free then, and must not be overtaken by a lane that became ready
/// (filled up, or completed with inputs left) later while it waited.
#[test]
fn g7_strict_first_come_first_served() {
    play_seeds(true, false);
}

/// G7 read literally, with trips: the batches of a trip, one after the
/// other, as if each were taken alone.
#[test]
fn g7_strict_first_come_first_served_with_trips() {
    play_seeds(true, true);
}

#[test]
fn a_seed_replays_the_same_run() {
    for trips in [false, true] {
        let mode = Mode {
            strict_fairness: false,
            trips,
        };
        for seed in [0, 7, 1_234_567] {
            assert_eq!(
                play(seed, mode, false),
                play(seed, mode, false),
                "seed {seed}, {mode:?}"
            );
        }
    }
}

/// Event time (see `sim/event_time.rs`): seeds `0..1000` with a lateness
/// hold, late inputs refused or not, and boundaries, through the core.
#[test]
fn every_seed_keeps_event_time_order_holds_and_boundaries() {
    let mut met = sim::event_time::Met::default();
    for seed in 0..1_000 {
        if let Err(broke) = sim::event_time::play(seed, &mut met) {
            panic!("event-time seed {seed}: {broke}");
        }
    }
    eprintln!("event time: {met:?}");
    assert!(met.late_refused > 0, "no late input refused: {met:?}");
    assert!(met.late_sent > 0, "no late input sent: {met:?}");
    assert!(met.held > 0, "no input held: {met:?}");
    assert!(
        met.batches_in_buckets > 0,
        "no batch kept to a bucket: {met:?}"
    );
    assert!(met.with_delay > 0, "no run with a batch delay: {met:?}");
}

/// Admits input `id` of `key` (rank 0, weight 1) into `core` at `now`, as
/// `submit` would; its caller's answer.
fn submit(core: &mut Core, key: u32, id: u64, now: u64) -> Receiver<Outcome> {
    let (reply, answer) = answer_cell();
    let input = Input {
        id,
        key,
        payload: format!("input {id} of key {key}"),
        copies: std::sync::Arc::new(()),
    };
    core.admit(
        Submission {
            offer: Offer::new(key_hash(&key), key, input, 0, 1),
            reply,
        },
        at(now),
    );
    answer
}

/// The lane case of `lanes_guarantees.rs` reached through the shard's own
/// core, by withdrawal: with the only slot busy, key 2 is full and in line;
/// its callers leave and a notice withdraws both inputs. Key 3 fills up
/// behind it. A lone input then comes for key 2. When the slot frees, key
/// 3, ready since before that input existed, must go first (G7), and key
/// 2's input wait for its delay (docs/guarantees.md#terms).
#[test]
fn g7_a_key_given_an_input_after_its_ready_lane_was_withdrawn_waits_its_turn() {
    let config = ferry_shard::QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(100),
        withdraw_on_drop: true,
        ..ferry_shard::QueueConfig::default()
    };
    let mut core = Core::new(config, 1);
    let _one = [submit(&mut core, 1, 0, 0), submit(&mut core, 1, 1, 0)];
    let busy = core.dispatch(at(0)).expect("key 1 is full");
    let gone = [submit(&mut core, 2, 2, 1), submit(&mut core, 2, 3, 1)];
    drop(gone);
    core.withdraw(key_hash(&2));
    assert_eq!(core.stats().withdrawn, 2, "both inputs of key 2 withdrawn");
    let _three = [submit(&mut core, 3, 4, 2), submit(&mut core, 3, 5, 2)];
    let _two = submit(&mut core, 2, 6, 3);

    core.complete(
        busy.ticket,
        busy.replies,
        BatchOutcome::Returned(Ok(vec![0, 0])),
        at(4),
    );
    let next = core.dispatch(at(4)).expect("key 3 is ready");
    let ids: Vec<u64> = next.inputs.iter().map(|i| i.id).collect();
    assert_eq!(
        (next.key, ids),
        (3, vec![4, 5]),
        "key 3 was full since 2; key 2's lone input came at 3 and is due at 103"
    );
}

/// Close races a trip in flight, through the shard's own core: with one
/// slot, a trip of keys 1 and 2 is in flight; behind it wait key 3 (full,
/// ready), key 4 (one input, its delay far off) and key 1's next input.
/// Close refuses what comes after it, takes nothing while the slot is busy,
/// and once the trip ends (one batch answered, one failed), everything
/// that waited goes in the next trip, first come first served: key 3,
/// then key 4 (ready at close), then key 1 (released last) (G9).
#[test]
fn close_while_a_trip_is_in_flight_sends_everything_waiting_in_the_next_trip() {
    let config = ferry_shard::QueueConfig {
        max_batch_size: 2,
        max_batch_delay: at(1_000),
        ..ferry_shard::QueueConfig::default()
    };
    let limits = TripLimits {
        max_batches: 8,
        max_weight: u64::MAX,
    };
    let mut core = Core::new(config, 1);
    let ids = |trip: &[(u32, Vec<Input>)]| -> Vec<(u32, Vec<u64>)> {
        trip.iter()
            .map(|(key, inputs)| (*key, inputs.iter().map(|i| i.id).collect()))
            .collect()
    };
    let mut answers: Vec<Receiver<Outcome>> = [(1, 0), (1, 1), (2, 2), (2, 3)]
        .into_iter()
        .map(|(key, id)| submit(&mut core, key, id, 0))
        .collect();
    let (first, first_held) = core
        .dispatch_trip(at(0), limits)
        .expect("keys 1, 2 are full");
    assert_eq!(ids(&first), vec![(1, vec![0, 1]), (2, vec![2, 3])]);
    assert_eq!(
        (core.in_flight(), core.stats().trips, core.stats().batches),
        (1, 1, 2)
    );
    answers.extend(
        [(3, 4, 1), (3, 5, 1), (4, 6, 2), (1, 7, 3)]
            .into_iter()
            .map(|(key, id, now)| submit(&mut core, key, id, now)),
    );
    assert!(
        core.dispatch_trip(at(3), limits).is_none(),
        "the only slot holds the trip"
    );

    core.close();
    let mut late = submit(&mut core, 5, 8, 4);
    match try_answer(&mut late) {
        Ok(Some(Err(FerryError::Refused {
            input,
            reason: Refused::Closed,
        }))) => assert_eq!(input.id, 8),
        other => panic!("an input after close: {other:?}"),
    }
    assert!(
        core.dispatch_trip(at(4), limits).is_none(),
        "the slot is still busy"
    );
    for answer in &mut answers {
        assert!(matches!(try_answer(answer), Ok(None)), "answered too soon");
    }

    let outputs = |inputs: &[Input]| inputs.iter().map(Input::output).collect::<Vec<_>>();
    let results = vec![Ok(outputs(&first[0].1)), Err(9)];
    core.release_trip(first_held.iter().map(|(lane, _)| lane), at(5));
    core.answer_trip(first_held, Ended::Returned(results));
    let (second, second_held) = core
        .dispatch_trip(at(5), limits)
        .expect("everything that waited is ready once closed");
    assert_eq!(
        ids(&second),
        vec![(3, vec![4, 5]), (4, vec![6]), (1, vec![7])],
        "first come, first served: key 3 was full before close made key 4 ready, \
         and key 1 was released after both"
    );
    let results = second
        .iter()
        .map(|(_, inputs)| Ok(outputs(inputs)))
        .collect();
    core.release_trip(second_held.iter().map(|(lane, _)| lane), at(6));
    core.answer_trip(second_held, Ended::Returned(results));
    core.deliver();

    for (id, answer) in answers.iter_mut().enumerate() {
        let got = try_answer(answer).expect("not dropped").expect("answered");
        match (id, got) {
            (2 | 3, Err(FerryError::Failed(9))) => {}
            (_, Ok(output)) => assert_eq!(output, id as u64 * 7 + [1, 1, 2, 2, 3, 3, 4, 1][id]),
            (_, other) => panic!("input {id}: {other:?}"),
        }
    }
    let stats = core.stats();
    assert!(core.is_quiet() && core.dispatch_trip(at(7), limits).is_none());
    assert_eq!(
        (
            stats.trips,
            stats.batches,
            stats.admitted,
            stats.answered,
            stats.refused,
            stats.lanes
        ),
        (2, 5, 8, 8, 1, 0)
    );
    assert_eq!((stats.answered_ok, stats.failed), (6, 2));
}
