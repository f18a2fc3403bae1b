//! The spans and events of the feature `tracing`, all with the target
//! `ferry`:
//!
//! - a span `ferry_batch` per batch, at `DEBUG`, with the fields `shard`,
//!   `key_hash`, `size`, `weight` and `oldest_wait_ns` (how long the
//!   batch's oldest input waited to be taken); the batch function is called
//!   inside it and its future runs inside it;
//! - with a trip function, a span `ferry_trip` per trip instead, at
//!   `DEBUG`, with the fields `shard`, `batches` and `inputs`; the trip
//!   function is called, and its future runs, inside it;
//! - an event per refusal at `DEBUG` (`shard`, `reason`);
//! - an event per fault at `WARN`, inside the batch's (or trip's) span: the
//!   batch failed, panicked or returned the wrong number of outputs, or the
//!   trip function panicked or returned the wrong number of results; and
//!   one as a shard's thread dies with batches in flight (`aborted`).
//!
//! Without the feature every item here is empty and inlined away: the
//! shard pays nothing for it, not even a check.

use std::future::Future;

use crate::core::ended::{BatchOutcome, Ended, TripOutcome};
use crate::value::refused::Refused;
use crate::value::shard_id::ShardId;

/// What is known of the batch taken last, for its span (kept only with
/// the feature `tracing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TakenBatch {
    /// Its key's hash (0 for unkeyed batching).
    pub(crate) key_hash: u64,
    /// Its inputs.
    pub(crate) size: usize,
    /// Their weight.
    pub(crate) weight: u64,
    /// How long its oldest input waited, nanoseconds.
    pub(crate) oldest_wait_ns: u64,
}

/// The span of one batch; nothing without the feature.
#[cfg(feature = "tracing")]
pub(crate) struct BatchSpan(tracing::Span);

/// The span of one batch; nothing without the feature.
#[cfg(not(feature = "tracing"))]
pub(crate) struct BatchSpan;

/// A batch's span, kept to its end (nothing without the feature).
#[cfg(feature = "tracing")]
pub(crate) type Scope = tracing::Span;

/// A batch's span, kept to its end (nothing without the feature).
#[cfg(not(feature = "tracing"))]
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope;

/// A batch future inside its span.
#[cfg(feature = "tracing")]
pub(crate) type Attached<F> = tracing::instrument::Instrumented<F>;

/// A batch future inside its span (without the feature, the future).
#[cfg(not(feature = "tracing"))]
pub(crate) type Attached<F> = F;

impl BatchSpan {
    /// The span of the batch that `batch` describes, with its shard
    /// (`batch` is called only with the feature on).
    #[inline(always)]
    pub(crate) fn new(batch: impl FnOnce() -> (ShardId, TakenBatch)) -> Self {
        #[cfg(feature = "tracing")]
        {
            let (shard, batch) = batch();
            BatchSpan(tracing::debug_span!(
                target: "ferry",
                "ferry_batch",
                shard = shard.index(),
                key_hash = batch.key_hash,
                size = batch.size,
                weight = batch.weight,
                oldest_wait_ns = batch.oldest_wait_ns,
            ))
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = batch;
            BatchSpan
        }
    }

    /// The span of a trip of `batches` batches and `inputs` inputs, with
    /// its shard (`trip` is called only with the feature on); the trip
    /// function is called, and its future runs, inside it.
    #[inline(always)]
    pub(crate) fn trip(trip: impl FnOnce() -> (ShardId, usize, usize)) -> Self {
        #[cfg(feature = "tracing")]
        {
            let (shard, batches, inputs) = trip();
            BatchSpan(tracing::debug_span!(
                target: "ferry",
                "ferry_trip",
                shard = shard.index(),
                batches,
                inputs,
            ))
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = trip;
            BatchSpan
        }
    }

    /// A handle on the span that outlives this value, for the fault event
    /// once the batch ends (nothing without the feature).
    #[inline(always)]
    pub(crate) fn scope(&self) -> Scope {
        #[cfg(feature = "tracing")]
        return self.0.clone();
        #[cfg(not(feature = "tracing"))]
        Scope
    }

    /// Runs `call` inside the span.
    #[inline(always)]
    pub(crate) fn in_scope<R>(&self, call: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        return self.0.in_scope(call);
        #[cfg(not(feature = "tracing"))]
        call()
    }

    /// `future`, run inside the span each time it is polled.
    #[inline(always)]
    pub(crate) fn attach<F: Future>(self, future: F) -> Attached<F> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(future, self.0);
        #[cfg(not(feature = "tracing"))]
        future
    }
}

/// A batch of `inputs` ended with `outcome`: a `WARN` event unless it
/// returned one output per input. Called inside the batch's span.
#[inline(always)]
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn fault<O, E>(outcome: &BatchOutcome<O, E>, inputs: usize) {
    match outcome {
        Ended::Returned(result) => batch_fault(result, inputs),
        Ended::Panicked => {
            #[cfg(feature = "tracing")]
            tracing::warn!(target: "ferry", inputs, "batch function panicked")
        }
    }
}

/// A batch of `inputs` returned `result`: a `WARN` event unless it holds
/// one output per input.
#[inline(always)]
fn batch_fault<O, E>(result: &Result<Vec<O>, E>, inputs: usize) {
    #[cfg(feature = "tracing")]
    match result {
        Ok(outputs) if outputs.len() == inputs => {}
        Ok(outputs) => tracing::warn!(
            target: "ferry",
            expected = inputs,
            got = outputs.len(),
            "batch returned the wrong number of outputs"
        ),
        Err(_) => tracing::warn!(target: "ferry", inputs, "batch function failed"),
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (result, inputs);
}

/// A trip whose batches had `inputs` each ended with `outcome`: a `WARN`
/// event for a trip function that panicked or returned the wrong number of
/// results, and one per batch whose own result is a fault. Called inside
/// the trip's span.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn trip_fault<O, E>(
    inputs: impl ExactSizeIterator<Item = usize>,
    outcome: &TripOutcome<O, E>,
) {
    #[cfg(feature = "tracing")]
    match outcome {
        Ended::Returned(results) if results.len() == inputs.len() => {
            for (result, inputs) in results.iter().zip(inputs) {
                batch_fault(result, inputs);
            }
        }
        Ended::Returned(results) => tracing::warn!(
            target: "ferry",
            expected = inputs.len(),
            got = results.len(),
            "trip returned the wrong number of results"
        ),
        Ended::Panicked => {
            tracing::warn!(target: "ferry", batches = inputs.len(), "trip function panicked")
        }
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (inputs, outcome);
}

/// A scope of no span, for batches run outside the loop (tests).
#[cfg(test)]
pub(crate) fn no_scope() -> Scope {
    #[cfg(feature = "tracing")]
    return tracing::Span::none();
    #[cfg(not(feature = "tracing"))]
    Scope
}

/// Runs `fault` (a call's fault events) inside its span `scope`; nothing
/// without the feature.
#[inline(always)]
pub(crate) fn fault_in(scope: &Scope, fault: impl FnOnce()) {
    #[cfg(feature = "tracing")]
    scope.in_scope(fault);
    #[cfg(not(feature = "tracing"))]
    let _ = (scope, fault);
}

/// An input of `shard` was refused for `reason`.
#[inline(always)]
pub(crate) fn refused(shard: ShardId, reason: Refused) {
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "ferry", shard = shard.index(), reason = ?reason, "input refused");
    #[cfg(not(feature = "tracing"))]
    let _ = (shard, reason);
}

/// `shard`'s thread ended with `inputs` sent and never answered.
#[inline(always)]
pub(crate) fn aborted(shard: ShardId, inputs: u64) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        target: "ferry",
        shard = shard.index(),
        inputs,
        "shard stopped with batches in flight: their inputs are aborted"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (shard, inputs);
}

/// `shard` asked for `asked` as its thread's time slice and the kernel
/// granted `granted` (`None`: it keeps no slice per thread), or refused.
#[inline(always)]
pub(crate) fn sched_slice(
    shard: ShardId,
    asked: std::time::Duration,
    granted: &std::io::Result<Option<std::time::Duration>>,
) {
    #[cfg(feature = "tracing")]
    match granted {
        Ok(Some(granted)) => tracing::debug!(
            target: "ferry",
            shard = shard.index(),
            ?asked,
            ?granted,
            "time slice granted"
        ),
        Ok(None) => tracing::info!(
            target: "ferry",
            shard = shard.index(),
            ?asked,
            "the kernel keeps no time slice per thread (Linux before 6.12): the shard runs with the default"
        ),
        Err(err) => tracing::warn!(
            target: "ferry",
            shard = shard.index(),
            ?asked,
            %err,
            "sched_setattr refused the shard's time slice: the shard runs with the default"
        ),
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (shard, asked, granted);
}
