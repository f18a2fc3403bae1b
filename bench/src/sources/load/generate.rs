//! The generator threads: each runs its share of the callers, closed or
//! open loop, on a small executor of its own, and publishes what it counted.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use hdrhistogram::Histogram;

use crate::base::lock;
use crate::scenarios::event_time;
use crate::scenarios::overload::{self};
use crate::sources::dist::{KeySampler, Rng};
use crate::store::new_histogram;
use crate::systems::{Outcome, System};

use super::{bump, Load, Mode, Published, Timeline, OPEN_SENDS_PER_TURN_MAX, PUBLISH_EVERY, TICK};

/// What a generator's tasks share, on its own thread.
struct Local<'a> {
    published: &'a Published,
    timeline: Timeline,
    latency: RefCell<Histogram<u64>>,
    /// The sum of the inputs answered with success so far, published with
    /// the latencies (a plain cell: no atomic per input for it).
    done_sum: Cell<u64>,
    /// The same of the inputs whose outcome is unknown.
    unknown_sum: Cell<u64>,
    /// How long a caller waits before it gives up.
    timeout: Option<Duration>,
    /// Deadlines of callers waiting with a timeout, earliest first.
    timers: RefCell<BinaryHeap<Reverse<Timer>>>,
}

/// A caller's deadline, and the waker of its task.
struct Timer {
    at: Instant,
    waker: Waker,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Timer {}

impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

impl<'a> Local<'a> {
    /// A generator's share of the run, publishing into `published`.
    fn new(published: &'a Published, timeline: Timeline, timeout: Option<Duration>) -> Self {
        Local {
            published,
            timeline,
            latency: RefCell::new(new_histogram()),
            done_sum: Cell::new(0),
            unknown_sum: Cell::new(0),
            timeout,
            timers: RefCell::new(BinaryHeap::new()),
        }
    }
}

impl Local<'_> {
    /// Counts one outcome of `input`, sent (or meant to be sent) at `sent`.
    fn count(&self, outcome: Outcome, input: u64, sent: Instant) -> Option<Instant> {
        let published = self.published;
        match outcome {
            Outcome::Done => {
                let answered = Instant::now();
                bump(&published.done, 1);
                let since = (answered - self.timeline.start).as_nanos();
                let bucket = since / overload::BUCKET.as_nanos();
                if let Some(bucket) = published.done_buckets.get(bucket as usize) {
                    bump(bucket, 1);
                }
                if let Some(tick) = published.done_ticks.get((since / TICK.as_nanos()) as usize) {
                    bump(tick, 1);
                }
                self.done_sum.set(self.done_sum.get().wrapping_add(input));
                if self.timeline.in_window(answered) {
                    bump(&published.done_in_window, 1);
                }
                if self.timeline.in_window(sent) {
                    let took = u64::try_from((answered - sent).as_nanos()).unwrap_or(u64::MAX);
                    self.latency.borrow_mut().saturating_record(took.max(1));
                }
                Some(answered)
            }
            Outcome::Failed(error) => {
                bump(&published.failed, 1);
                lock(&published.first_failure).get_or_insert(error);
                None
            }
            Outcome::Unknown => {
                bump(&published.unknown, 1);
                self.unknown_sum
                    .set(self.unknown_sum.get().wrapping_add(input));
                None
            }
            Outcome::Refused => {
                bump(&published.refused, 1);
                None
            }
            Outcome::Expired => {
                bump(&published.expired, 1);
                None
            }
        }
    }

    /// A caller gave up on its input.
    fn count_timed_out(&self) {
        bump(&self.published.timed_out, 1);
    }

    /// Wakes the callers whose deadline has come; returns the next one.
    fn wake_due(&self, now: Instant) -> Option<Instant> {
        let mut timers = self.timers.borrow_mut();
        while let Some(Reverse(timer)) = timers.peek() {
            if timer.at > now {
                return Some(timer.at);
            }
            if let Some(Reverse(timer)) = timers.pop() {
                timer.waker.wake();
            }
        }
        None
    }

    fn publish(&self) {
        self.published
            .done_sum
            .store(self.done_sum.get(), Ordering::Relaxed);
        self.published
            .unknown_sum
            .store(self.unknown_sum.get(), Ordering::Relaxed);
        let mut local = self.latency.borrow_mut();
        if local.is_empty() {
            return;
        }
        lock(&self.published.latency)
            .add(&*local)
            .expect("histograms of equal bounds");
        local.reset();
    }
}

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// One generator thread: its tasks, its open-loop schedule, and parking.
pub(super) fn generate<S: System>(
    index: usize,
    system: &S,
    load: &Load,
    timeline: Timeline,
    published: &Published,
) {
    let local = Local::new(published, timeline, load.timeout);
    let mut rng = Rng::new(load.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut schedule = open_schedule(load, index);
    let thread_waker = Arc::new(ThreadWaker {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(Arc::clone(&thread_waker));
    let mut tasks: FuturesUnordered<Task<'_>> = FuturesUnordered::new();

    start_closed_clients(&mut tasks, index, system, load, &local, &mut rng);

    let mut next_publish = Instant::now() + PUBLISH_EVERY;
    loop {
        thread_waker.woken.store(false, Ordering::SeqCst);
        let mut cx = Context::from_waker(&waker);
        while let Poll::Ready(Some(())) = tasks.poll_next_unpin(&mut cx) {}

        let now = Instant::now();
        let mut wake_at = next_publish.min(timeline.give_up_at);
        // Callers whose deadline came are woken (through `waker`, so the
        // thread does not park) and give up on the next turn.
        if let Some(next) = local.wake_due(now) {
            wake_at = wake_at.min(next);
        }
        if let Some(schedule) = &mut schedule {
            let sent = send_due(schedule, &mut tasks, system, load, &local, &mut rng, now);
            if let Some(next) = sent.next_due {
                wake_at = wake_at.min(next);
            }
            if sent.any {
                // Collect them (and any other outcome) on the next turn.
                thread_waker.woken.store(true, Ordering::SeqCst);
            }
        }
        if now >= next_publish {
            local.publish();
            next_publish = now + PUBLISH_EVERY;
        }
        let sending = schedule
            .as_ref()
            .is_some_and(|s| s.intended(&timeline).is_some());
        if tasks.is_empty() && !sending {
            break;
        }
        if now >= timeline.give_up_at {
            // What is still outstanding now is lost.
            published.gave_up.store(true, Ordering::Relaxed);
            break;
        }
        if !thread_waker.woken.load(Ordering::SeqCst) && wake_at > now {
            std::thread::park_timeout(wake_at - now);
        }
    }
    drop(tasks);
    local.publish();
    published.finished.store(true, Ordering::Release);
}

/// Generator `index`'s share of the closed loop's clients.
fn start_closed_clients<'a, S: System>(
    tasks: &mut FuturesUnordered<Task<'a>>,
    index: usize,
    system: &'a S,
    load: &'a Load,
    local: &'a Local<'a>,
    rng: &mut Rng,
) {
    if let Mode::Closed { clients } = load.mode {
        let mine = clients / load.generators + usize::from(index < clients % load.generators);
        for client in 0..mine {
            let rng = Rng::new(rng.next_u64() ^ client as u64);
            if load.per_call > 1 {
                tasks.push(Box::pin(closed_caller(system, load, local, rng)));
            } else {
                tasks.push(Box::pin(closed_client(system, &load.sampler, local, rng)));
            }
        }
    }
}

/// The open loop's schedule for generator `index`, if the load is open.
fn open_schedule(load: &Load, index: usize) -> Option<OpenSchedule> {
    match load.mode {
        Mode::Closed { .. } => None,
        Mode::Open {
            rate,
            outstanding_max,
        } => {
            crate::base::timing::lower_timer_slack();
            Some(OpenSchedule {
                next: 0,
                index,
                generators: load.generators,
                rate,
                outstanding_max: outstanding_max.max(1),
            })
        }
    }
}

/// What one turn of the open loop sent.
struct Sent {
    /// Any input was sent.
    any: bool,
    /// When the next input is due, if it is not due yet.
    next_due: Option<Instant>,
}

/// Sends the open-loop inputs due by `now`, at most
/// `OPEN_SENDS_PER_TURN_MAX` and while fewer than `outstanding_max` wait.
fn send_due<'a, S: System>(
    schedule: &mut OpenSchedule,
    tasks: &mut FuturesUnordered<Task<'a>>,
    system: &'a S,
    load: &Load,
    local: &'a Local<'a>,
    rng: &mut Rng,
    now: Instant,
) -> Sent {
    let mut sent = Sent {
        any: false,
        next_due: None,
    };
    for _ in 0..OPEN_SENDS_PER_TURN_MAX {
        if tasks.len() >= schedule.outstanding_max {
            break;
        }
        let Some(intended) = schedule.intended(&local.timeline) else {
            break;
        };
        if intended > now {
            sent.next_due = Some(intended);
            break;
        }
        schedule.next += 1;
        let key = load.sampler.sample(rng);
        tasks.push(Box::pin(open_input(
            system,
            local,
            key,
            schedule.next,
            intended,
        )));
        sent.any = true;
    }
    sent
}

/// A closed-loop client: one input outstanding at a time until the window
/// ends.
async fn closed_client<S: System>(
    system: &S,
    sampler: &KeySampler,
    local: &Local<'_>,
    mut rng: Rng,
) {
    let mut counter = 0_u64;
    // The moment the last input was answered is when this client sends its
    // next one (in the same turn), so it is not read twice.
    let mut answered = None;
    loop {
        let sent = answered.take().unwrap_or_else(Instant::now);
        if sent >= local.timeline.stop_at {
            return;
        }
        let key = sampler.sample(&mut rng);
        counter += 1;
        let input = input_of(counter, sent, local.timeout);
        bump(&local.published.submitted, 1);
        let submit = Watched::new(system.submit(key, input));
        let Some((outcome, waited)) = until_deadline(submit, sent, local).await else {
            continue;
        };
        answered = local.count(outcome, input, sent);
        if !waited {
            // Answered without ever waiting (a refusal, or a system with
            // nothing in between): let the other clients have a turn, and
            // read the time again after it.
            answered = None;
            YieldNow::default().await;
        }
    }
}

/// A closed-loop client that hands over `load.per_call` inputs in each
/// call and waits for all of their outcomes before the next; each input's
/// latency runs from its call. Never with a timeout (`Load::per_call`).
async fn closed_caller<S: System>(system: &S, load: &Load, local: &Local<'_>, mut rng: Rng) {
    debug_assert!(
        local.timeout.is_none(),
        "calls of many inputs have no timeout"
    );
    let mut counter = 0_u64;
    let mut inputs = Vec::with_capacity(load.per_call);
    loop {
        let sent = Instant::now();
        if sent >= local.timeline.stop_at {
            return;
        }
        inputs.clear();
        let items: Vec<(u64, u64)> = (0..load.per_call)
            .map(|_| {
                counter += 1;
                inputs.push(counter);
                (load.sampler.sample(&mut rng), counter)
            })
            .collect();
        let calls = load.per_call as u64;
        bump(&local.published.submitted, calls);
        let mut call = system.submit_many(items);
        while let Some((index, outcome)) = call.next().await {
            local.count(outcome, inputs[index], sent);
        }
        // A call answered at once (refused whole, say) must not keep the
        // other clients from their turn.
        YieldNow::default().await;
    }
}

/// An open-loop input, meant to be sent at `intended`.
async fn open_input<S: System>(
    system: &S,
    local: &Local<'_>,
    key: u64,
    input: u64,
    intended: Instant,
) {
    let input = input_of(input, intended, local.timeout);
    bump(&local.published.submitted, 1);
    if let Some(outcome) = until_deadline(system.submit(key, input), intended, local).await {
        local.count(outcome, input, intended);
    }
}

/// The input numbered `counter`, sent at `sent`: with a timeout, carrying
/// its caller's deadline.
fn input_of(counter: u64, sent: Instant, timeout: Option<Duration>) -> u64 {
    if let Some(input) = event_time::input_of(counter) {
        return input; // The event-time scenario runs without a timeout.
    }
    match timeout {
        Some(timeout) => overload::input_until(sent + timeout, counter),
        None => counter,
    }
}

/// `submit`'s outcome, or `None` (counted as timed out) if it has not come
/// by the caller's timeout after `sent`: the future is then dropped.
async fn until_deadline<F: Future + Unpin>(
    submit: F,
    sent: Instant,
    local: &Local<'_>,
) -> Option<F::Output> {
    let Some(timeout) = local.timeout else {
        return Some(submit.await);
    };
    let outcome = GiveUp {
        submit,
        deadline: sent + timeout,
        armed: false,
        local,
    }
    .await;
    if outcome.is_none() {
        local.count_timed_out();
    }
    outcome
}

/// A submit's future raced against its caller's deadline.
struct GiveUp<'a, 'b, F> {
    submit: F,
    deadline: Instant,
    armed: bool,
    local: &'a Local<'b>,
}

impl<F: Future + Unpin> Future for GiveUp<'_, '_, F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(outcome) = Pin::new(&mut self.submit).poll(cx) {
            return Poll::Ready(Some(outcome));
        }
        if Instant::now() >= self.deadline {
            return Poll::Ready(None);
        }
        if !self.armed {
            self.armed = true;
            let timer = Timer {
                at: self.deadline,
                waker: cx.waker().clone(),
            };
            self.local.timers.borrow_mut().push(Reverse(timer));
        }
        Poll::Pending
    }
}

/// An open-loop generator's share of the schedule: inputs
/// `index, index + generators, ...` of the global sequence, input `n` of
/// which is due `n / rate` seconds after the start.
struct OpenSchedule {
    /// How many of this generator's inputs were sent.
    next: u64,
    index: usize,
    generators: usize,
    rate: f64,
    outstanding_max: usize,
}

impl OpenSchedule {
    /// When the next input is due, or `None` once the window is over.
    fn intended(&self, timeline: &Timeline) -> Option<Instant> {
        let global = self.next * self.generators as u64 + self.index as u64;
        let at = timeline.start + Duration::from_secs_f64(global as f64 / self.rate);
        (at < timeline.stop_at).then_some(at)
    }
}

/// Unparks the generator thread; remembers the wake until it looks.
struct ThreadWaker {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.woken.swap(true, Ordering::SeqCst) {
            self.thread.unpark();
        }
    }
}

/// A future's output, and whether it ever had to wait.
struct Watched<F> {
    inner: F,
    waited: bool,
}

impl<F> Watched<F> {
    fn new(inner: F) -> Self {
        Self {
            inner,
            waited: false,
        }
    }
}

impl<F: Future + Unpin> Future for Watched<F> {
    type Output = (F::Output, bool);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.inner).poll(cx) {
            Poll::Ready(output) => Poll::Ready((output, self.waited)),
            Poll::Pending => {
                self.waited = true;
                Poll::Pending
            }
        }
    }
}

/// Gives the executor one turn.
#[derive(Default)]
struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            Poll::Ready(())
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}
