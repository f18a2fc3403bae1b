//! The feature `tracing`: a `ferry_batch` span per batch with its fields,
//! a `WARN` event inside the span of a failing batch, a `DEBUG` event per
//! refusal. A layer records what the engine emits.
//!
//! One test in this file: the subscriber is global to the process.

use std::sync::{Arc, Mutex};

use ferry::{Engine, FerryError, Refused};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// What the layer saw.
#[derive(Debug, Default)]
struct Seen {
    /// Each span's name and fields, as `name=value` pairs.
    spans: Vec<(String, Vec<String>)>,
    /// Each event's level, message and the name of its span, if any.
    events: Vec<(Level, String, Option<String>)>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Seen>>);

struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut fields = Fields(Vec::new());
        attrs.record(&mut fields);
        let name = attrs.metadata().name().to_string();
        self.0.lock().unwrap().spans.push((name, fields.0));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        let span = ctx.event_span(event).map(|span| span.name().to_string());
        let message = fields.0.join(" ");
        let level = *event.metadata().level();
        self.0.lock().unwrap().events.push((level, message, span));
    }
}

#[test]
fn batches_have_spans_and_faults_and_refusals_have_events() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(recorder.clone()))
        .expect("the only subscriber");
    run_batches();
    let seen = recorder.0.lock().unwrap();
    assert_spans(&seen);
    assert_events(&seen);
}

/// One good batch (key 1, input 5), one failing batch (key 13), one input
/// refused `TooHeavy`; the engine closed and joined.
fn run_batches() {
    let engine: Engine<u32, u64, u64, String> = Engine::builder()
        .shards(1)
        .pin(false)
        .weigh(|input: &u64| *input)
        .max_batch_weight(100)
        .start(|_shard| {
            |key: u32, inputs: Vec<u64>| async move {
                if key == 13 {
                    Err("the store refused the write".to_string())
                } else {
                    Ok(inputs)
                }
            }
        })
        .expect("start");
    assert_eq!(engine.submit_blocking(1, 5), Ok(5));
    assert!(matches!(
        engine.submit_blocking(13, 1),
        Err(FerryError::Failed(_))
    ));
    let refused = engine.submit_blocking(2, 101);
    assert!(matches!(
        refused,
        Err(FerryError::Refused {
            reason: Refused::TooHeavy,
            ..
        })
    ));
    engine.close();
    engine.join();
}

/// One `ferry_batch` span per batch, with its fields.
fn assert_spans(seen: &Seen) {
    let batches: Vec<&Vec<String>> = seen
        .spans
        .iter()
        .filter(|(name, _)| name == "ferry_batch")
        .map(|(_, fields)| fields)
        .collect();
    assert_eq!(batches.len(), 2, "one span per batch: {seen:?}");
    let first = batches[0];
    for field in ["shard=0", "size=1", "weight=5"] {
        assert!(first.iter().any(|f| f == field), "{field} in {first:?}");
    }
    let key_hash = format!("key_hash={}", ferry_shard::key_hash(&1_u32));
    assert!(first.contains(&key_hash), "{key_hash} in {first:?}");
    assert!(
        first.iter().any(|f| f.starts_with("oldest_wait_ns=")),
        "{first:?}"
    );
}

/// A warning inside the failing batch's span, a debug event for the
/// refusal, and no other warning.
fn assert_events(seen: &Seen) {
    let fault = seen
        .events
        .iter()
        .find(|(level, message, _)| *level == Level::WARN && message.contains("failed"))
        .unwrap_or_else(|| panic!("a warning for the failed batch: {seen:?}"));
    assert_eq!(
        fault.2.as_deref(),
        Some("ferry_batch"),
        "inside the batch's span"
    );
    let refusal = seen
        .events
        .iter()
        .find(|(level, message, _)| *level == Level::DEBUG && message.contains("refused"));
    let refusal = refusal.unwrap_or_else(|| panic!("a debug event for the refusal: {seen:?}"));
    assert!(refusal.1.contains("TooHeavy"), "{refusal:?}");
    let warnings = seen
        .events
        .iter()
        .filter(|(level, ..)| *level == Level::WARN);
    assert_eq!(
        warnings.count(),
        1,
        "only the failed batch is a fault: {seen:?}"
    );
}
