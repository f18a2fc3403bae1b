//! How a call of the user's function ended, apart from the core that
//! answers with it, so that the spans and the batch's future can name it.

/// How a call of the user's function ended: it returned `R`, or it
/// panicked.
#[derive(Debug)]
pub enum Ended<R> {
    /// The function's future finished with this.
    Returned(R),
    /// The function, or its future, panicked.
    Panicked,
}

/// How a batch ended: the batch function returned its outputs or an error,
/// or it panicked.
pub type BatchOutcome<O, E> = Ended<Result<Vec<O>, E>>;

/// How a trip ended: the trip function returned one result per batch (or,
/// breaking its contract, another number of them), or it panicked.
pub type TripOutcome<O, E> = Ended<Vec<Result<Vec<O>, E>>>;
