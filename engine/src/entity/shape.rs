//! The two shapes of an entity: a state folded by the user's function, or
//! a log its inputs are appended to. Each says what a key's inputs make of
//! what is known of it; the trip (`trip.rs`) is the same for both.

use std::convert::Infallible;
use std::marker::PhantomData;

use super::codec::Codec;
use super::memory::Known;
use super::spares::Spares;
use super::store::Row;

/// What a key's batch makes of what is known of the key.
pub(crate) struct Applied<B, Out> {
    /// One per input, in order.
    pub(crate) outs: Vec<Out>,
    /// Inputs applied (each moves the version by one).
    pub(crate) count: u64,
    /// What to send, if `count > 0`.
    pub(crate) change: Change,
    /// The shape's part once the change has landed.
    pub(crate) after: B,
}

/// What a key's write carries.
pub(crate) enum Change {
    /// Nothing applied: nothing to send.
    None,
    /// The encoded new state.
    State(Vec<u8>),
    /// The encoded events, in order.
    Events(Vec<Vec<u8>>),
}

pub(crate) trait Shape<I>: 'static {
    /// What the shard remembers of a key besides version and epoch.
    type Base: Clone;
    /// What each input is answered.
    type Out;

    /// The shape's part of a row read from the store.
    fn base(&self, row: &Row) -> Result<Self::Base, String>;

    /// What `inputs` make of the key as `known`, in vectors from
    /// `spares` where it can.
    fn apply(
        &self,
        known: &Known<Self::Base>,
        inputs: &[I],
        spares: &mut Spares<Self::Out>,
    ) -> Result<Applied<Self::Base, Self::Out>, String>;
}

/// A state `S` folded by `fold`, kept encoded by `codec`.
pub(crate) struct Folded<S, F, C> {
    pub(crate) fold: std::sync::Arc<F>,
    pub(crate) codec: C,
    pub(crate) state: PhantomData<fn() -> S>,
}

impl<I, O, R, S, F, C> Shape<I> for Folded<S, F, C>
where
    S: Default + Clone + 'static,
    F: Fn(&mut S, &I) -> Result<O, R> + 'static,
    C: Codec<S>,
    O: 'static,
    R: 'static,
{
    type Base = S;
    type Out = Result<O, R>;

    fn base(&self, row: &Row) -> Result<S, String> {
        match &row.state {
            Some(bytes) => self.codec.decode(bytes),
            None => Ok(S::default()),
        }
    }

    /// Folds each input in turn into a copy of the state; a refused input
    /// leaves it as it was.
    fn apply(
        &self,
        known: &Known<S>,
        inputs: &[I],
        spares: &mut Spares<Result<O, R>>,
    ) -> Result<Applied<S, Result<O, R>>, String> {
        let mut state = known.base.clone();
        let mut outs = spares.outs();
        outs.extend(inputs.iter().map(|input| (*self.fold)(&mut state, input)));
        let count = outs.iter().filter(|out| out.is_ok()).count() as u64;
        let change = if count == 0 {
            Change::None
        } else {
            let mut bytes = spares.state();
            self.codec.encode_into(&state, &mut bytes)?;
            Change::State(bytes)
        };
        Ok(Applied {
            outs,
            count,
            change,
            after: state,
        })
    }
}

/// A log of events `I`, each input one event, kept encoded by `codec`;
/// each input is answered its sequence number (its place in the key's
/// log, from 1).
pub(crate) struct Logged<C> {
    pub(crate) codec: C,
}

impl<I: 'static, C: Codec<I>> Shape<I> for Logged<C> {
    type Base = ();
    type Out = Result<u64, Infallible>;

    fn base(&self, _row: &Row) -> Result<(), String> {
        Ok(())
    }

    fn apply(
        &self,
        known: &Known<()>,
        inputs: &[I],
        spares: &mut Spares<Result<u64, Infallible>>,
    ) -> Result<Applied<(), Result<u64, Infallible>>, String> {
        let events = inputs
            .iter()
            .map(|input| self.codec.encode(input))
            .collect::<Result<Vec<_>, _>>()?;
        let mut outs = spares.outs();
        outs.extend((1..=inputs.len() as u64).map(|n| Ok(known.version + n)));
        let change = if events.is_empty() {
            Change::None
        } else {
            Change::Events(events)
        };
        Ok(Applied {
            outs,
            count: inputs.len() as u64,
            change,
            after: (),
        })
    }
}
