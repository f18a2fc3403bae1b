//! Durations as the command line writes them: a number and a unit,
//! `500us`, `2ms`, `1.5s`, `1m`, or a bare `0`.
//!
//! A decimal is read as given (`1.5s` is 1,500 ms, down to whole
//! nanoseconds); durations are written back whole, in the largest unit that
//! keeps them so (`1500ms`), so a value reads the same in a result file and
//! in the docs.

use std::fmt;
use std::time::Duration;

/// Parses `"<number><unit>"` with unit `ns`, `us` (or `µs`), `ms`, `s` or
/// `m`, the number whole or decimal; `"0"` alone means zero.
///
/// ```
/// use ferry_bench::base::duration::parse_duration;
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
/// assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
/// assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
/// assert!(parse_duration("2").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with("--") {
        return Err(DurationError::new(
            text,
            "is a flag, not a duration: the duration is missing",
        ));
    }
    if text.starts_with('-') {
        return Err(DurationError::new(
            text,
            "a duration cannot be negative (use 0 or more, e.g. 500us)",
        ));
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(|| DurationError::new(text, "needs a unit: ns, us, ms, s or m"))?;
    let (number, unit) = text.split_at(split);
    let unit_ns: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        _ => {
            return Err(DurationError::new(
                text,
                "unknown unit (use ns, us, ms, s or m, e.g. 500us or 1.5s)",
            ))
        }
    };
    let nanos = nanos_of(text, number, unit_ns)?;
    let nanos = u64::try_from(nanos).map_err(|_| DurationError::new(text, "number too large"))?;
    Ok(Duration::from_nanos(nanos))
}

/// `number` (whole, or with one decimal point) of a unit of `unit_ns`
/// nanoseconds, in nanoseconds, refused if not whole.
fn nanos_of(text: &str, number: &str, unit_ns: u128) -> Result<u128, DurationError> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) {
        return Err(DurationError::new(
            text,
            "must start with a number, whole or decimal (e.g. 2ms, 1.5s)",
        ));
    }
    if fraction.contains('.') {
        return Err(DurationError::new(text, "has two decimal points"));
    }
    // 30 digits in all keep the arithmetic inside u128.
    if whole.len() + fraction.len() > 30 {
        return Err(DurationError::new(text, "number too large"));
    }
    let digits: u128 = format!("{whole}{fraction}")
        .parse()
        .map_err(|_| DurationError::new(text, "number too large"))?;
    let scale = 10u128.pow(fraction.len() as u32);
    let nanos = digits
        .checked_mul(unit_ns)
        .ok_or_else(|| DurationError::new(text, "number too large"))?;
    if nanos % scale != 0 {
        return Err(DurationError::new(text, "is finer than a nanosecond"));
    }
    Ok(nanos / scale)
}

/// Writes `duration` the way [`parse_duration`] reads it, in the largest
/// unit that keeps it whole.
///
/// ```
/// use ferry_bench::base::duration::format_duration;
/// use std::time::Duration;
///
/// assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
/// assert_eq!(format_duration(Duration::from_secs(5)), "5s");
/// assert_eq!(format_duration(Duration::ZERO), "0");
/// ```
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0".to_string();
    }
    for (unit, size) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if nanos.is_multiple_of(size) {
            return format!("{}{unit}", nanos / size);
        }
    }
    format!("{nanos}ns")
}

/// A duration the command line could not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError {
    text: String,
    problem: &'static str,
}

impl DurationError {
    fn new(text: &str, problem: &'static str) -> Self {
        Self {
            text: text.to_string(),
            problem,
        }
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.text, self.problem)
    }
}

impl std::error::Error for DurationError {}
