//! What a shard's trips hand on to the next ones rather than free: the
//! buffers their writes' states were encoded into, and the vectors of the
//! inputs they answered, as the next answers' vectors.
//!
//! At one input a key (many keys, each seen once in a while) a key's batch
//! would otherwise cost its trip two allocations and two frees: the
//! encoded state, and the outputs' vector (the shard gives it back as the
//! next batch's inputs vector, which the trip then frees). With the spares
//! the state is encoded into a buffer a write before used, and a batch's
//! inputs vector becomes the outputs vector of a later one, in place,
//! when an input and an output have the same size and alignment (the
//! standard library's in-place collection keeps the memory then);
//! otherwise it is freed, as before.
//!
//! Bounded: at most `SPARES_MAX` of each, each with room for at most
//! `ROOM_MAX` bytes, so what is kept stays small whatever a trip carried.

/// Spare vectors of each kind kept at most: as many as a few trips of
/// the default size carry keys.
const SPARES_MAX: usize = 1_024;

/// The most room, in bytes, a vector may have to be kept.
const ROOM_MAX: usize = 4_096;

/// The spares of one shard (module docs).
pub(crate) struct Spares<Out> {
    states: Vec<Vec<u8>>,
    outs: Vec<Vec<Out>>,
}

impl<Out> Default for Spares<Out> {
    fn default() -> Self {
        Self {
            states: Vec::new(),
            outs: Vec::new(),
        }
    }
}

impl<Out> Spares<Out> {
    /// An empty buffer to encode a state into.
    pub(crate) fn state(&mut self) -> Vec<u8> {
        self.states.pop().unwrap_or_default()
    }

    /// `state`, sent and no longer needed, for a later write.
    pub(crate) fn keep_state(&mut self, mut state: Vec<u8>) {
        if self.states.len() < SPARES_MAX && state.capacity() <= ROOM_MAX {
            state.clear();
            self.states.push(state);
        }
    }

    /// An empty vector for a batch's outputs.
    pub(crate) fn outs(&mut self) -> Vec<Out> {
        self.outs.pop().unwrap_or_default()
    }

    /// The vector of a batch's inputs, answered: its inputs are dropped,
    /// and its memory kept as a later batch's outputs vector if an output
    /// fits where an input was (module docs).
    pub(crate) fn keep_inputs<I>(&mut self, mut inputs: Vec<I>) {
        inputs.clear();
        let outs: Vec<Out> = inputs.into_iter().filter_map(|_| None).collect();
        let room = outs.capacity() * std::mem::size_of::<Out>();
        if outs.capacity() > 0 && room <= ROOM_MAX && self.outs.len() < SPARES_MAX {
            self.outs.push(outs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inputs_vector_of_the_outputs_layout_is_kept_in_place() {
        let mut spares: Spares<Result<u64, std::convert::Infallible>> = Spares::default();
        let inputs: Vec<u64> = Vec::with_capacity(8);
        let at = inputs.as_ptr() as usize;
        spares.keep_inputs(vec![1_u64, 2]);
        spares.keep_inputs(inputs);
        let outs = spares.outs();
        assert_eq!((outs.as_ptr() as usize, outs.capacity()), (at, 8));
        assert!(outs.is_empty());
    }

    #[test]
    fn an_inputs_vector_of_another_layout_or_too_large_is_freed() {
        let mut spares: Spares<u64> = Spares::default();
        spares.keep_inputs(vec![1_u8, 2, 3]);
        assert_eq!(spares.outs().capacity(), 0);
        spares.keep_inputs(Vec::<u64>::with_capacity(ROOM_MAX / 8 + 1));
        assert_eq!(spares.outs().capacity(), 0);
    }

    #[test]
    fn state_buffers_come_back_empty_and_large_ones_are_not_kept() {
        let mut spares: Spares<()> = Spares::default();
        let mut small = spares.state();
        small.extend_from_slice(b"{\"n\":5}");
        let at = small.as_ptr() as usize;
        spares.keep_state(small);
        spares.keep_state(vec![0; ROOM_MAX + 1]);
        let again = spares.state();
        assert_eq!((again.as_ptr() as usize, again.len()), (at, 0));
        assert_eq!(spares.state().capacity(), 0, "the large one was dropped");
    }
}
