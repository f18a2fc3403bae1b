//! How the keyed discipline takes a load out of the core, and checks it
//! batch by batch against the reference: G1, G2, G3, G7 and G8 for each
//! batch (also for one withdrawn whole at the take), the inputs of gone
//! callers the take withdrew, and a trip's bounds.

use std::collections::{BTreeMap, BTreeSet};

use ferry_shard::parts::{LaneId, TripLimits};

use super::super::arrival::{at, Played};
use super::super::harness::{ensure, trace, Carried, Reply, Sim};
use super::super::scenario::Input;
use super::{Carrying, Keyed};

/// One batch taken out of the core: its lane, key, inputs and replies.
struct Taken {
    lane: LaneId,
    key: u32,
    inputs: Vec<Input>,
    replies: Vec<Reply<Keyed>>,
}

/// Takes the next load out of the core: a batch, or with trips a trip
/// of batches (each as the core hands it out, in trip order).
fn take_load(sim: &mut Sim<Keyed>) -> Result<Option<Vec<Taken>>, String> {
    let now = at(sim.now);
    match sim.discipline.carrying {
        Carrying::Batches => Ok(sim.core.dispatch(now).map(|dispatch| {
            vec![Taken {
                lane: dispatch.ticket,
                key: dispatch.key,
                inputs: dispatch.inputs,
                replies: dispatch.replies,
            }]
        })),
        Carrying::Trips(limits) => {
            let Some((batches, held)) = sim.core.dispatch_trip(now, limits) else {
                return Ok(None);
            };
            ensure!(
                !batches.is_empty() && batches.len() == held.len(),
                "a trip of {} batches with {} held",
                batches.len(),
                held.len()
            );
            Ok(Some(
                batches
                    .into_iter()
                    .zip(held)
                    .map(|((key, inputs), (lane, replies))| Taken {
                        lane,
                        key,
                        inputs,
                        replies,
                    })
                    .collect(),
            ))
        }
    }
}

/// Asks the core for a load (a batch, or a trip of batches in one
/// slot); `false` if it had none to give.
pub fn dispatch(sim: &mut Sim<Keyed>) -> Result<bool, String> {
    let slot_free = sim.reference.in_flight < sim.reference.slots;
    if slot_free {
        sim.reference.look(sim.now);
    }
    // What the take may withdraw (their callers are gone), and the line
    // as it stood.
    let withdrawable: Vec<u64> = if sim.scenario.config.withdraw_on_drop {
        sim.gone
            .iter()
            .copied()
            .filter(|&id| reference_waits(sim, id))
            .collect()
    } else {
        Vec::new()
    };
    let ready_before = sim.reference.ready();
    let withdrawn_before = sim.core.stats().withdrawn;
    let load = take_load(sim)?;

    let mut withdrawn_by_key = let_go(sim, &withdrawable, withdrawn_before)?;
    let withdrawn_now: usize = withdrawn_by_key.values().map(BTreeSet::len).sum();
    ensure!(
        slot_free || (load.is_none() && withdrawn_now == 0),
        "slots: the shard took from its lanes with every slot busy"
    );
    let sent_keys: Vec<u32> = load.iter().flatten().map(|taken| taken.key).collect();
    let taken: BTreeSet<u32> = withdrawn_by_key.keys().chain(&sent_keys).copied().collect();
    // What the takes weighed as the core weighs a trip's batches: each
    // before the inputs of gone callers in it are withdrawn, batches
    // withdrawn whole included.
    let mut weight_taken = 0_u64;
    for (&key, ids) in &mut withdrawn_by_key {
        weight_taken += withdraw_whole_batches(sim, key, ids, &ready_before, &taken)?;
        ensure!(
            ids.is_empty() || sent_keys.contains(&key),
            "withdraw_on_drop: key {key}'s inputs {ids:?} withdrawn at a take, \
             but they are not a batch of its lane"
        );
    }
    let Some(load) = load else {
        return Ok(false);
    };
    let withdrawn = Withdrawn {
        withdrawable,
        by_key: withdrawn_by_key,
        count: withdrawn_now,
    };
    carry(sim, load, withdrawn, weight_taken)?;
    Ok(true)
}

/// What a take withdrew: the inputs of gone callers it could have, and
/// those it did, by key, not yet matched to a batch.
struct Withdrawn {
    withdrawable: Vec<u64>,
    by_key: BTreeMap<u32, BTreeSet<u64>>,
    count: usize,
}

/// The inputs the shard let go of in a take are exactly the ones it
/// withdrew: nobody else holds them any more, and the shard counts them.
/// Those of `withdrawable` it let go of, by key.
fn let_go(
    sim: &Sim<Keyed>,
    withdrawable: &[u64],
    withdrawn_before: u64,
) -> Result<BTreeMap<u32, BTreeSet<u64>>, String> {
    let mut withdrawn_by_key: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for &id in withdrawable {
        let input = &sim.scenario.arrivals[id as usize].input;
        if !input.is_held() {
            withdrawn_by_key.entry(input.key).or_default().insert(id);
        }
    }
    let withdrawn_now: usize = withdrawn_by_key.values().map(BTreeSet::len).sum();
    let counted = sim.core.stats().withdrawn - withdrawn_before;
    ensure!(
        counted == withdrawn_now as u64,
        "withdraw_on_drop: the take let go of {withdrawn_now} inputs of gone callers, \
         the shard counts {counted} withdrawn"
    );
    Ok(withdrawn_by_key)
}

/// Checks the load just taken, batch by batch (G1 within a trip, a slot
/// free for it, a trip's bounds), and starts it. `weight_taken` is what
/// the batches withdrawn whole in the take weighed.
fn carry(
    sim: &mut Sim<Keyed>,
    load: Vec<Taken>,
    mut withdrawn: Withdrawn,
    mut weight_taken: u64,
) -> Result<(), String> {
    let sent_keys: Vec<u32> = load.iter().map(|taken| taken.key).collect();
    ensure!(
        sim.reference.in_flight < sim.reference.slots,
        "slots: a load started with {} of {} slots busy",
        sim.reference.in_flight,
        sim.reference.slots
    );
    // G1 within a trip: a key is in it once at most.
    let distinct: BTreeSet<u32> = sent_keys.iter().copied().collect();
    ensure!(
        distinct.len() == sent_keys.len(),
        "G1: a key twice in one trip: {sent_keys:?}"
    );
    let trip = match sim.discipline.carrying {
        Carrying::Batches => None,
        Carrying::Trips(_) => {
            sim.trip_next += 1;
            Some(sim.trip_next - 1)
        }
    };
    if let Some(trip) = trip {
        trace!(sim, "trip {trip}: keys {sent_keys:?}");
    }
    let mut batches = Vec::with_capacity(load.len());
    let (mut weight_sent, mut weight_first) = (0_u64, None);
    for taken in load {
        let (batch, weighed) =
            check_batch(sim, taken, &withdrawn.withdrawable, &mut withdrawn.by_key)?;
        weight_taken += weighed;
        weight_first.get_or_insert(weighed);
        weight_sent += batch
            .inputs
            .iter()
            .map(|i| sim.scenario.arrivals[i.id as usize].weight)
            .sum::<u64>();
        batches.push(batch);
    }
    sim.reference.occupy_slot();
    if let Carrying::Trips(limits) = sim.discipline.carrying {
        check_trip_bounds(sim, limits, batches.len(), weight_sent, weight_taken)?;
        sim.summary.more.trips += 1;
        sim.summary.more.trips_of_several += u64::from(batches.len() > 1);
        sim.summary.more.trips_heavy_first +=
            u64::from(weight_first.is_some_and(|w| w > limits.max_weight));
        sim.summary.more.trips_with_withdrawals += u64::from(withdrawn.count > 0);
    }

    sim.start(batches, trip);
    Ok(())
}

/// Checks one batch taken out of the core (alone, or as one of a
/// trip's) against the reference, and records it there: its lane is
/// busy. The batch, and what it weighed when taken (with the inputs of
/// gone callers the take withdrew).
fn check_batch(
    sim: &mut Sim<Keyed>,
    taken: Taken,
    withdrawable: &[u64],
    withdrawn_by_key: &mut BTreeMap<u32, BTreeSet<u64>>,
) -> Result<(Carried<Keyed>, u64), String> {
    let key = taken.key;
    let ids: Vec<u64> = taken.inputs.iter().map(|i| i.id).collect();
    trace!(sim, "dispatch key {key}: {ids:?}");
    ensure!(
        !ids.is_empty() && taken.replies.len() == ids.len(),
        "a batch of {} inputs with {} replies",
        ids.len(),
        taken.replies.len()
    );
    for input in &taken.inputs {
        ensure!(
            input.key == key,
            "G3: input {} of key {} in a batch of key {key}",
            input.id,
            input.key
        );
    }
    sim.check_sent(&taken.inputs)?;
    check_turn(sim, key)?;

    // G2: exactly the lowest (rank, admission) inputs waiting, less those
    // whose callers are gone, withdrawn in the same step.
    let batch = sim.reference.expected_batch(key);
    let weighed = sim.reference.weight_of(key, &batch);
    let withdrawn: Vec<u64> = withdrawn_by_key
        .remove(&key)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let (gone, expected): (Vec<u64>, Vec<u64>) =
        batch.iter().partition(|&&id| withdrawable.contains(&id));
    ensure!(
        ids == expected,
        "G2: key {key} sent {ids:?}; by (rank, admission) and the bounds it should be \
         {expected:?} (its batch {batch:?} less the inputs of gone callers)"
    );
    let mut gone_sorted = gone.clone();
    gone_sorted.sort_unstable();
    ensure!(
        withdrawn == gone_sorted,
        "withdraw_on_drop: key {key}'s take withdrew {withdrawn:?}; of its batch {batch:?} \
         the callers of {gone:?} are gone"
    );
    sim.reference.withdraw_from_batch(key, &withdrawn);
    sim.resolve_withdrawn(&withdrawn);
    sim.summary.withdrawn_at_take += withdrawn.len() as u64;
    sim.reference.dispatch(key, &ids);
    let rank_max = taken
        .inputs
        .iter()
        .map(|i| sim.scenario.arrivals[i.id as usize].rank)
        .max()
        .expect("not empty");
    let sent_max = sim.discipline.rank_sent_max.entry(key).or_insert(i64::MIN);
    *sent_max = (*sent_max).max(rank_max);

    let number = sim.batch_next;
    sim.batch_next += 1;
    let carried = Carried {
        lane: taken.lane,
        key,
        batch: number,
        inputs: taken.inputs,
        replies: taken.replies,
    };
    Ok((carried, weighed))
}

/// A trip of `batches` batches just taken, weighing `weight_sent` as
/// sent and `weight_taken` as the core weighed its takes: within its
/// bounds (a first batch always goes, whatever it weighs), and as full
/// as they allow. A trip of fewer than its most batches that left a
/// lane ready did so because the batch at the front of the line would
/// have taken it past its weight: some lane that may be at the front
/// (none surely in line before it) does not fit.
fn check_trip_bounds(
    sim: &mut Sim<Keyed>,
    limits: TripLimits,
    batches: usize,
    weight_sent: u64,
    weight_taken: u64,
) -> Result<(), String> {
    ensure!(
        batches <= limits.max_batches,
        "a trip of {batches} batches, past its bound {}",
        limits.max_batches
    );
    ensure!(
        batches == 1 || weight_sent <= limits.max_weight,
        "a trip of {batches} batches weighs {weight_sent}, past its bound {}",
        limits.max_weight
    );
    let in_line: Vec<(u32, u64, u64)> = sim
        .reference
        .ready()
        .into_iter()
        .filter(|&(_, _, seen)| seen != u64::MAX)
        .collect();
    if in_line.is_empty() {
        return Ok(());
    }
    if batches == limits.max_batches {
        sim.summary.more.trips_full += u64::from(batches > 1);
        return Ok(());
    }
    let may_be_first = |&(key, since, _): &(u32, u64, u64)| {
        in_line.iter().all(|&(other, other_since, other_seen)| {
            let ahead = if sim.discipline.strict_fairness {
                other_since < since
            } else {
                other_seen < since
            };
            other == key || !ahead
        })
    };
    let fits = |key: u32| {
        let weight = sim
            .reference
            .weight_of(key, &sim.reference.expected_batch(key));
        weight_taken.saturating_add(weight) <= limits.max_weight
    };
    let fronts: Vec<u32> = in_line
        .iter()
        .filter(|lane| may_be_first(lane))
        .map(|&(key, _, _)| key)
        .collect();
    ensure!(
        fronts.iter().any(|&key| !fits(key)),
        "a trip of {batches} batches (at most {}), weighing {weight_taken} as taken (at most \
         {}), left lanes ready whose batches fit: {fronts:?} may be at the front, in line: \
         {in_line:?}",
        limits.max_batches,
        limits.max_weight
    );
    sim.summary.more.trips_stopped_by_weight += 1;
    Ok(())
}

/// Whether input `id` waits in the reference's lanes (not taken yet).
fn reference_waits(sim: &Sim<Keyed>, id: u64) -> bool {
    let key = sim.scenario.arrivals[id as usize].input.key;
    sim.reference
        .lanes
        .get(&key)
        .is_some_and(|lane| lane.waiting.iter().any(|w| w.id == id))
}

/// The take withdrew `ids` of `key`. Those making up whole batches at
/// the front of its lane (every caller gone) were taken one after the
/// other and found empty, each releasing the lane at once; they leave
/// `ids`. What is left is the withdrawn part of the batch then sent, if
/// `key` was sent. What the batches withdrawn whole weighed.
fn withdraw_whole_batches(
    sim: &mut Sim<Keyed>,
    key: u32,
    ids: &mut BTreeSet<u64>,
    ready_before: &[(u32, u64, u64)],
    taken: &BTreeSet<u32>,
) -> Result<u64, String> {
    let mut first = true;
    let mut weighed = 0;
    loop {
        let batch = sim.reference.expected_batch(key);
        if batch.is_empty() || !batch.iter().all(|id| ids.contains(id)) {
            return Ok(weighed);
        }
        weighed += sim.reference.weight_of(key, &batch);
        // G7, G8 as for a batch that is sent: the lane was ready, and
        // no lane in line before it was passed over. A lane taken again
        // in the same step went to the back of the line in between.
        let since = if first {
            let found = ready_before.iter().find(|&&(k, _, _)| k == key);
            let Some(&(_, since, _)) = found else {
                return Err(format!(
                    "G8: key {key}'s batch {batch:?} was taken, and withdrawn, before the lane was ready"
                ));
            };
            since
        } else {
            let ready = sim.reference.lanes[&key].ready_since.is_some();
            ensure!(
                ready,
                "G8: key {key} taken again at once, and its batch {batch:?} withdrawn, but it is not ready"
            );
            sim.now
        };
        for &(other, other_since, other_seen) in ready_before {
            let overtaken = if sim.discipline.strict_fairness {
                other_since < since
            } else {
                other_seen < since
            };
            ensure!(
                taken.contains(&other) || !overtaken,
                "G7: key {key} (ready since {since}) was taken, its batch withdrawn, before key \
                 {other} (ready since {other_since}, in line since {other_seen})"
            );
        }
        trace!(
            sim,
            "take of key {key} finds its batch {batch:?} withdrawn: every caller is gone"
        );
        for id in &batch {
            ids.remove(id);
        }
        sim.reference.skip_batch(key, &batch, sim.now);
        sim.reference.refresh(sim.now);
        sim.resolve_withdrawn(&batch);
        sim.summary.withdrawn_at_take += batch.len() as u64;
        sim.summary.batches_withdrawn_whole += 1;
        first = false;
    }
}

/// G1, G7, G8 for a batch of `key` just taken: its lane was not busy, it
/// was ready, and no lane had been ready longer.
fn check_turn(sim: &mut Sim<Keyed>, key: u32) -> Result<(), String> {
    let lane = sim
        .reference
        .lanes
        .get(&key)
        .ok_or_else(|| format!("key {key} dispatched but it has no waiting input"))?;
    ensure!(
        !lane.busy,
        "G1: key {key} dispatched while its batch is in flight"
    );

    // G7, G8: the lane is ready, and none has been ready longer.
    ensure!(
        lane.ready_since.is_some(),
        "G8: key {key} dispatched before it is ready (partial and not due)"
    );
    // Strictly, no other lane may have become ready before this one. A
    // lane that became due while every slot was busy may join the line
    // any time until a slot is next looked for, so otherwise only a lane
    // surely in line before this one became ready must not be overtaken.
    // (In a trip, the lanes taken before this one are busy by now.)
    let ready = sim.reference.ready();
    let &(_, since, _) = ready
        .iter()
        .find(|(k, _, _)| *k == key)
        .expect("checked ready above");
    for &(other, other_since, other_seen) in &ready {
        let overtaken = if sim.discipline.strict_fairness {
            other_since < since
        } else {
            other_seen < since
        };
        ensure!(
            !overtaken,
            "G7: key {key} (ready since {since}) dispatched before key {other} \
             (ready since {other_since}, in line since {other_seen})"
        );
    }
    if ready.len() > 1 {
        sim.summary.more.contended += 1;
    }
    Ok(())
}
