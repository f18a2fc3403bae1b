//! `lanes`: what one input costs in `Lanes` — its admission, and its share of
//! the `take` and `complete` of the batch it goes in.
//!
//! Each case streams inputs over `keys` keys with batches of `batch_size`:
//!
//! - Inputs are spread evenly, one key after the other, over a *working set*
//!   of keys: all `keys` when `keys * batch_size` inputs fit the default
//!   `max_waiting` (1,000,000), else as many as fit. Once every key of the
//!   working set has had `batch_size` inputs (a round), the working set moves
//!   on to the next keys, so all `keys` keys come through in turn.
//! - Every `batch_size` inputs, the next ready batch is taken and completed
//!   at once. The structure starts with one round of inputs waiting, so the
//!   ready line always holds about one batch per key of the working set.
//!
//! Each batch then carries `batch_size` inputs, and each admission touches a
//! different lane than the one before (the cache-unfriendly order). The delay
//! is zero (the default). One criterion iteration is one input, so the time
//! reported is the amortised time per input.
//!
//! Run: `cargo bench -p ferry-shard --bench lanes`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferry_shard::parts::Lanes;
use ferry_shard::QueueConfig;

const KEYS: [u64; 3] = [1, 1_000, 1_000_000];
const BATCH_SIZES: [usize; 2] = [1, 64];
const QUEUEING_MAX: u64 = QueueConfig::DEFAULT_MAX_WAITING as u64;

/// A stream of inputs over `keys` keys, batched by `batch_size`.
struct Stream {
    lanes: Lanes<u64, u64>,
    keys: u64,
    batch_size: u64,
    /// Keys that receive inputs in the current round.
    working_set: u64,
    /// First key of the working set.
    base: u64,
    /// Next key of the working set, as an offset from `base`.
    offset: u64,
    /// Passes over the working set done in this round.
    pass: u64,
    admitted: u64,
    since_take: u64,
    batches: u64,
    sent: u64,
}

impl Stream {
    fn new(keys: u64, batch_size: usize) -> Self {
        let batch_size = batch_size as u64;
        let working_set = keys.min(QUEUEING_MAX / batch_size);
        let lanes = Lanes::new(QueueConfig {
            max_batch_size: batch_size as usize,
            // One round waits, plus the round being admitted.
            max_waiting: (2 * working_set * batch_size) as usize,
            ..QueueConfig::default()
        });
        Self {
            lanes,
            keys,
            batch_size,
            working_set,
            base: 0,
            offset: 0,
            pass: 0,
            admitted: 0,
            since_take: 0,
            batches: 0,
            sent: 0,
        }
    }

    #[inline]
    fn next_key(&mut self) -> u64 {
        let mut key = self.base + self.offset;
        if key >= self.keys {
            key -= self.keys;
        }
        self.offset += 1;
        if self.offset == self.working_set {
            self.offset = 0;
            self.pass += 1;
            if self.pass == self.batch_size {
                self.pass = 0;
                self.base = (self.base + self.working_set) % self.keys;
            }
        }
        key
    }

    #[inline]
    fn admit_next(&mut self) {
        let key = self.next_key();
        let item = self.admitted;
        if self.lanes.admit(key, item, 0, 1, Duration::ZERO).is_err() {
            panic!("refused: the bench sizes max_waiting for its steady state");
        }
        self.admitted += 1;
    }

    /// One round of inputs waits: the steady state.
    fn fill(&mut self) {
        for _ in 0..self.working_set * self.batch_size {
            self.admit_next();
        }
    }

    /// Admits the next input; every `batch_size` inputs, takes the next
    /// ready batch and completes it.
    #[inline]
    fn step(&mut self) {
        self.admit_next();
        self.since_take += 1;
        if self.since_take == self.batch_size {
            self.since_take = 0;
            let now = Duration::ZERO;
            if let Some(batch) = self.lanes.take(now) {
                self.sent += batch.items.len() as u64;
                self.batches += 1;
                black_box(&batch.items);
                self.lanes.complete(batch.lane, now);
            }
        }
    }
}

fn lanes(c: &mut Criterion) {
    let mut group = c.benchmark_group("lanes");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    for batch_size in BATCH_SIZES {
        for keys in KEYS {
            // Built on first use, so that a filtered run skips the others.
            let mut stream: Option<(Stream, u64, u64)> = None;
            let id = BenchmarkId::new(format!("batch_{batch_size}"), format!("{keys}_keys"));
            group.bench_function(id, |b| {
                let (stream, _, _) = stream.get_or_insert_with(|| {
                    let mut stream = Stream::new(keys, batch_size);
                    stream.fill();
                    let (sent, batches) = (stream.sent, stream.batches);
                    (stream, sent, batches)
                });
                b.iter(|| stream.step());
            });
            if let Some((stream, sent, batches)) = stream {
                let mean = (stream.sent - sent) as f64 / (stream.batches - batches).max(1) as f64;
                println!(
                    "lanes/batch_{batch_size}/{keys}_keys: mean batch {mean:.1}, {} lanes \
                     live, {} inputs waiting, {} keys seen",
                    stream.lanes.lanes(),
                    stream.lanes.waiting(),
                    (stream.admitted / stream.batch_size).min(stream.keys),
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, lanes);
criterion_main!(benches);
