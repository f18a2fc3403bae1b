//! Numbers as the report writes them.

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Microseconds: one decimal below 100, whole and grouped above.
pub fn micros(us: f64) -> String {
    if us < 100.0 {
        format!("{us:.1}")
    } else {
        thousands(us.round() as u64)
    }
}
