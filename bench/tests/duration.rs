//! Durations as the command line writes them: read and written back.

use ferry_bench::base::duration::*;
use std::time::Duration;

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
        ".5ms",
        "1.ms",
        "1.2.3s",
        "1.5ns",
        "-1s",
        "3h",
        "2 ms",
        "99999999999999999999s",
    ] {
        assert!(parse_duration(text).is_err(), "{text:?} should be refused");
    }
}

#[test]
fn reads_decimals_down_to_the_nanosecond() {
    let cases = [
        ("1.5s", Duration::from_millis(1500)),
        ("0.25ms", Duration::from_micros(250)),
        ("2.0s", Duration::from_secs(2)),
        ("1.5m", Duration::from_secs(90)),
        ("0.001us", Duration::from_nanos(1)),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_duration(text), Ok(expected), "{text}");
    }
}

#[test]
fn says_why_a_negative_duration_or_a_flag_is_refused() {
    let negative = parse_duration("-1s").unwrap_err().to_string();
    assert!(negative.contains("cannot be negative"), "{negative}");
    let flag = parse_duration("--warmup").unwrap_err().to_string();
    assert!(
        flag.contains("is a flag") && flag.contains("missing"),
        "{flag}"
    );
    let unit = parse_duration("3h").unwrap_err().to_string();
    assert!(
        unit.contains("unknown unit") && unit.contains("1.5s"),
        "{unit}"
    );
}

#[test]
fn formatting_reads_back() {
    for text in ["0", "1s", "250ms", "1500us", "7ns"] {
        let duration = parse_duration(text).unwrap();
        assert_eq!(format_duration(duration), text);
        assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
    }
}
