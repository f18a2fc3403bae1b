//! `ferry`: this engine, its batch function one
//! [`Connection::apply`](crate::store::Connection::apply) per batch;
//! `ferry-trips`: the same engine with a trip function, one
//! [`Connection::apply_many`](crate::store::Connection::apply_many) per
//! trip of up to `max_trip_batches` keys, `max_in_flight_trips` trips in
//! flight per shard.
//!
//! On a real store both go through `ferry::entity`: the library's
//! `PostgresStore` or `RedisStore` on a table (key prefix) of their own, a
//! fold that adds each input to its key's value, `ferry` as trips of one
//! batch. Only the control without the fence (`--no-fence`) keeps the
//! path below, a blind retry being no part of the library.
//!
//! Each shard makes its own connection to the store in the engine's
//! factory (`try_start`), on the shard's own thread, and every batch of the
//! shard goes through it. A real store's client is tokio-based and needs a
//! tokio reactor on its thread, so with a real store the shards run on
//! [`ferry::Runtime::Tokio`] (see [`shard_runtime`]).
//!
//! Shards are pinned to the first `shards` CPUs of the process's affinity
//! set when it has that many (and `--no-pin` is not given); otherwise they
//! float. The generator and store
//! threads are never pinned, so on a small machine they share the shards'
//! cores.

use crate::scenarios::event_time;
use crate::scenarios::overload;
use futures::future::{Either, Map};
use futures::{FutureExt, StreamExt};

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use ferry::entity::{Entities, EntityError, EntitySubmit, Options};
use ferry::{Builder, Engine, FerryError, Reconnect, Runtime, StartError};

use crate::store::{
    Connection, EntityStore, Fence, Store, StoreError, Write, RECONNECT_FIRST, RECONNECT_MAX,
};
use crate::systems::lost_writes::Retry;
use crate::systems::{in_flags, outputs_over, Call, Outcome, Settings, System, SystemKind};

/// The runtime of the shards of ferry (or batcher) on `store`: the one
/// asked for on the sim; tokio on a real store, whose tokio-based client
/// must live on a tokio runtime (glommio would need a bridge thread, and
/// with it a thread hop per request, which would measure the bridge).
pub fn shard_runtime(asked: Runtime, store: Store) -> Result<Runtime, String> {
    match (store.is_real(), asked) {
        (false, asked) => Ok(asked),
        (true, Runtime::Glommio) => Err(format!(
            "a {} store's client runs on tokio: use --runtime tokio (or auto) with it",
            store.kind()
        )),
        (true, _) => Ok(Runtime::Tokio),
    }
}

/// Why shards started with `asked` on `store` run on tokio, if `asked` was
/// `Auto`: what the engine says refused glommio (`engine_says`), or the
/// real store.
pub fn why_tokio(asked: Runtime, store: Store, engine_says: Option<&str>) -> Option<String> {
    match engine_says {
        Some(why) => Some(in_flags(why)),
        None if asked == Runtime::Auto && store.is_real() => Some(format!(
            "a {} store's client runs on tokio, where its I/O stays on the shard's own thread",
            store.kind()
        )),
        None => None,
    }
}

type FerryOutcome = Result<u64, FerryError<u64, StoreError>>;

/// The engine under load.
#[derive(Debug)]
pub struct FerrySystem {
    served: Served,
    /// Why `--runtime auto` gave the shards tokio, if it did.
    why_tokio: Option<String>,
}

/// The engine itself, or on a real store the library's entities.
#[derive(Debug)]
enum Served {
    Engine(Engine<u64, u64, u64, StoreError>),
    Entities(Entities<u64, u64, u64, Infallible>),
}

impl FerrySystem {
    /// Starts an engine of `shards` shards on `store`, each with its own
    /// connection, as `kind` says: `ferry`; `ferry-withdraw`, which
    /// withdraws inputs whose callers gave up and expires those past
    /// `settings.max_queue_time`; or `ferry-trips`, with a trip function.
    pub fn start(
        settings: &Settings,
        shards: usize,
        store: Store,
        kind: SystemKind,
    ) -> Result<Self, String> {
        if let (Some(entity_store), Fence::On) = (store.entity_store(), settings.fence) {
            return Self::start_entities(settings, shards, store, kind, entity_store?);
        }
        let retry = Retry {
            within: settings.retry_unknown,
        };
        let builder = Self::builder(settings, shards, store, kind)?;
        if kind == SystemKind::FerryTrips {
            let engine = builder
                .max_in_flight_batches(settings.max_in_flight_trips)
                .max_trip_batches(settings.max_trip_batches)
                .try_start_trips(move |_shard| async move {
                    let link = link_to(store).await?;
                    Ok::<_, String>(move |trip: Vec<(u64, Vec<u64>)>| {
                        carry(Rc::clone(&link), retry, trip)
                    })
                })
                .map_err(|err: StartError<String>| in_flags(&err.to_string()))?;
            return Ok(Self::of(engine, settings.runtime, store));
        }
        // The sim's batch calls it directly, its future as it is, so the
        // sim's figures pay nothing for the real stores; a real store's
        // batch goes through the shard's own connection.
        let engine = match store.as_sim() {
            Some(sim) => builder
                .start(move |_shard| {
                    move |key: u64, inputs: Vec<u64>| {
                        overload::note_sent(&inputs);
                        let count = inputs.len() as u64;
                        let applied = sim.apply(key, count, inputs.iter().sum());
                        async move {
                            let applied = applied.await;
                            if applied.is_ok() {
                                event_time::note_applied(key, &inputs);
                            }
                            applied.map(|version| outputs_over(inputs, version))
                        }
                    }
                })
                .map_err(|err| in_flags(&err.to_string())),
            None => builder
                .try_start(move |_shard| async move {
                    let link = link_to(store).await?;
                    Ok::<_, String>(move |key: u64, inputs: Vec<u64>| {
                        apply_through(Rc::clone(&link), retry, key, inputs)
                    })
                })
                .map_err(|err: StartError<String>| in_flags(&err.to_string())),
        }?;
        Ok(Self::of(engine, settings.runtime, store))
    }

    /// `kind` on a real store, through `ferry::entity` (see the module
    /// docs).
    fn start_entities(
        settings: &Settings,
        shards: usize,
        store: Store,
        kind: SystemKind,
        entity_store: EntityStore,
    ) -> Result<Self, String> {
        let (slots, per_trip) = match kind {
            SystemKind::FerryTrips => (settings.max_in_flight_trips, settings.max_trip_batches),
            _ => (settings.max_in_flight_batches, 1),
        };
        let builder = Self::builder(settings, shards, store, kind)?
            .max_in_flight_batches(slots)
            .max_trip_batches(per_trip);
        let options = Options::default().resolve_within(settings.retry_unknown);
        let started = match entity_store {
            EntityStore::Postgres(pg) => builder.start_entities_with(pg, add, options),
            EntityStore::Redis(redis) => builder.start_entities_with(redis, add, options),
        };
        let entities = started.map_err(|err| in_flags(&err.to_string()))?;
        let why_tokio = why_tokio(settings.runtime, store, entities.engine().runtime_reason());
        Ok(Self {
            served: Served::Entities(entities),
            why_tokio,
        })
    }

    /// The engine's settings for `kind` (see [`FerrySystem::start`]).
    fn builder<O, E>(
        settings: &Settings,
        shards: usize,
        store: Store,
        kind: SystemKind,
    ) -> Result<Builder<u64, u64, O, E>, String>
    where
        O: Send + 'static,
        E: Clone + Send + 'static,
    {
        let builder = shard_settings(Engine::builder(), settings, shards, store)?;
        let builder = match event_time::ferry_order() {
            Some((order, refuse_late)) => builder.order(order).refuse_late(refuse_late),
            None => builder,
        };
        let shedding = kind == SystemKind::FerryWithdraw;
        Ok(match (shedding, settings.max_queue_time) {
            (false, _) => builder,
            (true, None) => builder.withdraw_on_drop(true),
            (true, Some(wait)) => builder.withdraw_on_drop(true).max_queue_time(wait),
        })
    }

    fn of(engine: Engine<u64, u64, u64, StoreError>, asked: Runtime, store: Store) -> Self {
        let why_tokio = why_tokio(asked, store, engine.runtime_reason());
        Self {
            served: Served::Engine(engine),
            why_tokio,
        }
    }
}

/// The fold of ferry's systems on a real store: each input added to its
/// key's value (wrapping, as every store's sum does), answered with the new
/// value.
fn add(value: &mut u64, input: &u64) -> Result<u64, Infallible> {
    overload::note_sent(std::slice::from_ref(input));
    *value = value.wrapping_add(*input);
    Ok(*value)
}

/// How the load counts an entity engine's outcome.
fn entity_outcome(answer: Result<u64, EntityError<u64, Infallible>>) -> Outcome {
    match answer {
        Ok(_) => Outcome::Done,
        Err(EntityError::Unknown(_)) => Outcome::Unknown,
        Err(EntityError::Engine(FerryError::Refused { .. } | FerryError::Late { .. })) => {
            Outcome::Refused
        }
        Err(EntityError::Engine(FerryError::Expired { .. })) => Outcome::Expired,
        Err(EntityError::Engine(FerryError::Aborted)) => Outcome::Unknown,
        Err(err) => Outcome::Failed(err.to_string()),
    }
}

/// An entity engine's submit, its input noted as applied (for
/// `--disorder`) once it is.
#[derive(Debug)]
pub struct Noted {
    submit: EntitySubmit<u64, u64, Infallible>,
    key: u64,
    input: u64,
}

impl Future for Noted {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let answer = ready!(Pin::new(&mut self.submit).poll(cx));
        if answer.is_ok() {
            event_time::note_applied(self.key, &[self.input]);
        }
        Poll::Ready(entity_outcome(answer))
    }
}

/// The settings ferry and batcher share: their shards, bounds, idle
/// stages and runtime (the one `store` allows).
pub(crate) fn shard_settings<K, I, O, E, M>(
    builder: Builder<K, I, O, E, M>,
    settings: &Settings,
    shards: usize,
    store: Store,
) -> Result<Builder<K, I, O, E, M>, String>
where
    I: Send + 'static,
    O: Send + 'static,
    E: Clone + Send + 'static,
{
    let runtime = shard_runtime(settings.runtime, store)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let builder = match settings.pin {
        Some(pin) => builder.pin(pin && shards <= cpus),
        None => builder,
    };
    Ok(builder
        .shards(shards)
        .max_batch_size(settings.max_batch_size)
        .max_batch_delay(settings.max_batch_delay)
        .max_in_flight_batches(settings.max_in_flight_batches)
        .max_waiting(settings.max_waiting)
        .spin_before_park(settings.spin_before_park)
        .doze_before_park(settings.doze_before_park)
        .sched_slice(settings.sched_slice)
        .runtime(runtime))
}

/// How a shard makes its connection, again after it breaks.
type Connect = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Connection, String>>>>>;

/// A shard's link to its store: its own connection, made in the factory
/// and made again after it breaks, with backoff (`ferry::Reconnect`, from
/// [`RECONNECT_FIRST`] up to [`RECONNECT_MAX`], as the pools' connections).
pub(crate) type Link = Rc<Reconnect<Connection, Connect>>;

/// Connects a shard to `store`, on the shard's thread; a store that cannot
/// be reached fails the start.
pub(crate) async fn link_to(store: Store) -> Result<Link, String> {
    let connect: Connect = Box::new(move || Box::pin(store.connect()));
    let link = Reconnect::start(connect).await?;
    Ok(Rc::new(link.backoff(RECONNECT_FIRST, RECONNECT_MAX)))
}

/// The link's client, or the error every input gets while there is none.
pub(crate) async fn connection(link: &Link) -> Result<Rc<Connection>, StoreError> {
    link.client()
        .await
        .map_err(|away| StoreError::Unreachable(away.to_string()))
}

/// One batch through the shard's link; a connection found dead is made
/// again by the next batch.
async fn apply_through(
    link: Link,
    retry: Retry,
    key: u64,
    inputs: Vec<u64>,
) -> Result<Vec<u64>, StoreError> {
    overload::note_sent(&inputs);
    let write = Write {
        key,
        count: inputs.len() as u64,
        sum: inputs.iter().sum(),
    };
    let connection = connection(&link).await?;
    let applied = connection.apply(key, write.count, write.sum).await;
    if applied.as_ref().is_err_and(StoreError::breaks_connection) {
        link.broken(&connection);
    }
    let applied = retry.settle(&link, write, applied).await;
    if applied.is_ok() {
        event_time::note_applied(key, &inputs);
    }
    applied.map(|version| outputs_over(inputs, version))
}

/// A trip through the shard's link: one request for every key's batch,
/// each batch's outputs from the version its key's write started from.
pub(crate) async fn carry(
    link: Link,
    retry: Retry,
    trip: Vec<(u64, Vec<u64>)>,
) -> Vec<Result<Vec<u64>, StoreError>> {
    let writes: Vec<Write> = trip
        .iter()
        .map(|(key, inputs)| {
            overload::note_sent(inputs);
            Write {
                key: *key,
                count: inputs.len() as u64,
                sum: inputs.iter().sum(),
            }
        })
        .collect();
    let connection = match connection(&link).await {
        Ok(connection) => connection,
        Err(away) => return vec![Err(away); writes.len()],
    };
    let applied = connection.apply_many(writes.clone()).await;
    if applied
        .iter()
        .any(|result| result.as_ref().is_err_and(StoreError::breaks_connection))
    {
        link.broken(&connection);
    }
    let applied = retry.settle_all(&link, &writes, applied).await;
    trip.into_iter()
        .zip(applied)
        .map(|((key, inputs), applied)| {
            let version = applied?;
            event_time::note_applied(key, &inputs);
            Ok(outputs_over(inputs, version))
        })
        .collect()
}

/// How the load counts an engine's (or a batcher's) outcome.
pub(crate) fn outcome(result: FerryOutcome) -> Outcome {
    match result {
        Ok(_) => Outcome::Done,
        Err(FerryError::Refused { .. } | FerryError::Late { .. }) => Outcome::Refused,
        Err(FerryError::Expired { .. }) => Outcome::Expired,
        Err(FerryError::Failed(err)) if err.is_unknown() => Outcome::Unknown,
        Err(FerryError::Aborted) => Outcome::Unknown,
        Err(err) => Outcome::Failed(err.to_string()),
    }
}

impl System for FerrySystem {
    type Submit =
        Either<Map<ferry::Submit<u64, u64, StoreError>, fn(FerryOutcome) -> Outcome>, Noted>;

    fn submit(&self, key: u64, input: u64) -> Self::Submit {
        match &self.served {
            Served::Engine(engine) => Either::Left(
                engine
                    .submit(key, input)
                    .map(outcome as fn(FerryOutcome) -> Outcome),
            ),
            Served::Entities(entities) => Either::Right(Noted {
                submit: entities.submit(key, input),
                key,
                input,
            }),
        }
    }

    fn submit_many(&self, items: Vec<(u64, u64)>) -> Call<'_> {
        match &self.served {
            Served::Engine(engine) => Box::pin(
                engine
                    .submit_many(items)
                    .map(|(index, answered)| (index, outcome(answered))),
            ),
            Served::Entities(entities) => Box::pin(entities.engine().submit_many(items).map(
                |(index, answered)| {
                    let answer = match answered {
                        Ok(Ok(value)) => Ok(value),
                        Ok(Err(never)) => match never {},
                        Err(err) => Err(EntityError::from(err)),
                    };
                    (index, entity_outcome(answer))
                },
            )),
        }
    }

    fn runtime(&self) -> Option<ferry::Runtime> {
        Some(match &self.served {
            Served::Engine(engine) => engine.runtime(),
            Served::Entities(entities) => entities.engine().runtime(),
        })
    }

    fn entity_stats(&self) -> Option<ferry::entity::StoreStats> {
        match &self.served {
            Served::Engine(_) => None,
            Served::Entities(entities) => Some(entities.store_stats()),
        }
    }

    fn runtime_reason(&self) -> Option<String> {
        self.why_tokio.clone()
    }

    fn engine_stats(&self) -> Option<ferry::ShardStats> {
        Some(match &self.served {
            Served::Engine(engine) => engine.stats().total(),
            Served::Entities(entities) => entities.stats().total(),
        })
    }

    fn close(&mut self) {
        event_time::note_engine(&self.engine_stats().unwrap_or_default());
        match &self.served {
            Served::Engine(engine) => {
                engine.close();
                engine.join();
            }
            Served::Entities(entities) => {
                entities.close();
                entities.join();
            }
        }
    }
}
