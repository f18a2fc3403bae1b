//! What the engine's test suites share: the runtimes a shard can run on,
//! and what a batch function needs to be the same code on either.
//!
//! The guarantees hold whichever runtime runs the shards, so each suite
//! checks them on every one of [`RUNTIMES`]: a test is written once as
//! `fn name(runtime: Runtime)`, and [`on_each_runtime!`] makes one `#[test]`
//! of it per runtime, `name::glommio` and `name::tokio`, so a failure says
//! which runtime it was on (and `cargo test -- ::tokio` runs one side only).
//!
//! A batch function runs on its shard's thread, on that shard's runtime, so
//! what it awaits must be that runtime's: [`sleep`] and [`yield_now`] are.

// Each suite uses a part of this module; what one leaves unused is not dead.
#![allow(dead_code, unused_macros, unused_imports)]

use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

use ferry::Runtime;

/// Every runtime a shard can run on (not `Auto`, which picks one of them).
pub const RUNTIMES: [Runtime; 2] = [Runtime::Glommio, Runtime::Tokio];

// `on_each_runtime!` names its tests after these: a runtime added here must
// be added there.
const _: () = assert!(matches!(RUNTIMES, [Runtime::Glommio, Runtime::Tokio]));

/// Makes one `#[test]` per runtime of `fn $name(runtime: Runtime)`: a module
/// `$name` with the tests `glommio` and `tokio`. Written just above the
/// function, where `#[test]` would be.
macro_rules! on_each_runtime {
    ($name:ident) => {
        mod $name {
            #[test]
            fn glommio() {
                super::$name(::ferry::Runtime::Glommio);
            }

            #[test]
            fn tokio() {
                super::$name(::ferry::Runtime::Tokio);
            }
        }
    };
}
pub(crate) use on_each_runtime;

/// Waits `wait` without holding up the shard: on the timer of the runtime
/// whose thread this is (glommio's on a glommio shard, where tokio's also
/// works but wakes the shard from another thread; else tokio's).
/// Only for code that runs on a shard: batch functions, tasks spawned there.
pub async fn sleep(wait: Duration) {
    if ferry::Runtime::current() == Some(ferry::Runtime::Glommio) {
        glommio::timer::sleep(wait).await;
    } else {
        tokio::time::sleep(wait).await;
    }
}

/// Gives the other tasks of this thread a turn, once: wakes itself and is
/// pending for one poll, which any single-threaded executor answers by
/// polling it again after the others.
pub async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// How the shards carry batches to the batch function: one batch per call
/// (`start`), or trips of several keys' batches (`start_trips`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// One batch per call: `Builder::start`.
    Batches,
    /// Several keys' batches per call: `Builder::start_trips`.
    Trips,
}

/// Makes one `#[test]` per runtime and per [`Way`] of
/// `fn $name(runtime: Runtime, way: Way)`: a module `$name` with the tests
/// `glommio`, `tokio`, `glommio_trips` and `tokio_trips`.
macro_rules! on_each_runtime_and_way {
    ($name:ident) => {
        mod $name {
            use crate::support::Way;

            #[test]
            fn glommio() {
                super::$name(::ferry::Runtime::Glommio, Way::Batches);
            }

            #[test]
            fn tokio() {
                super::$name(::ferry::Runtime::Tokio, Way::Batches);
            }

            #[test]
            fn glommio_trips() {
                super::$name(::ferry::Runtime::Glommio, Way::Trips);
            }

            #[test]
            fn tokio_trips() {
                super::$name(::ferry::Runtime::Tokio, Way::Trips);
            }
        }
    };
}
pub(crate) use on_each_runtime_and_way;

/// Starting an engine with a batch function, carried either [`Way`].
pub trait StartAs<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    /// Starts with the batch function `factory` makes on each shard: as it
    /// is (`Way::Batches`), or called for each batch of a trip, the trip's
    /// batches running at once and answered in order (`Way::Trips`).
    fn start_as<F, B, Fut>(
        self,
        way: Way,
        factory: F,
    ) -> Result<ferry::Engine<K, I, O, E>, ferry::StartError>
    where
        F: Fn(ferry::ShardId) -> B + Send + Sync + 'static,
        B: Fn(K, Vec<I>) -> Fut + 'static,
        Fut: std::future::Future<Output = Result<Vec<O>, E>> + 'static;
}

impl<K, I, O, E> StartAs<K, I, O, E> for ferry::Builder<K, I, O, E>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    fn start_as<F, B, Fut>(
        self,
        way: Way,
        factory: F,
    ) -> Result<ferry::Engine<K, I, O, E>, ferry::StartError>
    where
        F: Fn(ferry::ShardId) -> B + Send + Sync + 'static,
        B: Fn(K, Vec<I>) -> Fut + 'static,
        Fut: std::future::Future<Output = Result<Vec<O>, E>> + 'static,
    {
        match way {
            Way::Batches => self.start(factory),
            Way::Trips => self.start_trips(move |shard| {
                let batch = factory(shard);
                move |trip: Vec<(K, Vec<I>)>| {
                    let calls: Vec<_> = trip
                        .into_iter()
                        .map(|(key, inputs)| batch(key, inputs))
                        .collect();
                    futures::future::join_all(calls)
                }
            }),
        }
    }
}
