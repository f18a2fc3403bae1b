//! Durations as the command line writes them: a whole number and a unit,
//! `500us`, `2ms`, `10s`, `1m`, or a bare `0`.
//!
//! Whole numbers only, so a value reads the same in `--help`, in a result
//! file and in the docs; `1.5ms` is written `1500us`.

use std::fmt;
use std::time::Duration;

/// Parses `"<number><unit>"` with unit `ns`, `us` (or `µs`), `ms`, `s` or
/// `m`; `"0"` alone means zero.
///
/// ```
/// use ferry_bench::duration::parse_duration;
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
/// assert_eq!(parse_duration("2ms"), Ok(Duration::from_millis(2)));
/// assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
/// assert!(parse_duration("2").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| DurationError::new(text, "needs a unit: ns, us, ms, s or m"))?;
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(DurationError::new(text, "must start with a whole number"));
    }
    let number: u64 = number
        .parse()
        .map_err(|_| DurationError::new(text, "number too large"))?;
    let duration = match unit {
        "ns" => Duration::from_nanos(number),
        "us" | "µs" => Duration::from_micros(number),
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(
            number
                .checked_mul(60)
                .ok_or_else(|| DurationError::new(text, "number too large"))?,
        ),
        _ => {
            return Err(DurationError::new(
                text,
                "unknown unit (use ns, us, ms, s or m, e.g. 500us)",
            ))
        }
    };
    Ok(duration)
}

/// Writes `duration` the way [`parse_duration`] reads it, in the largest
/// unit that keeps it whole.
///
/// ```
/// use ferry_bench::duration::format_duration;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_unit() {
        let cases = [
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("750ns", Duration::from_nanos(750)),
            ("500us", Duration::from_micros(500)),
            ("500µs", Duration::from_micros(500)),
            ("2ms", Duration::from_millis(2)),
            ("10s", Duration::from_secs(10)),
            ("2m", Duration::from_secs(120)),
            (" 3ms ", Duration::from_millis(3)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for text in [
            "",
            "5",
            "ms",
            "1.5ms",
            "-1s",
            "3h",
            "2 ms",
            "99999999999999999999s",
        ] {
            assert!(parse_duration(text).is_err(), "{text:?} should be refused");
        }
    }

    #[test]
    fn formatting_reads_back() {
        for text in ["0", "1s", "250ms", "1500us", "7ns"] {
            let duration = parse_duration(text).unwrap();
            assert_eq!(format_duration(duration), text);
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
    }
}
