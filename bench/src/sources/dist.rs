//! Which key each input goes to: `uniform` over `0..keys`, or `zipf:S`, where
//! key `k` (counting from 0) is drawn with weight `1 / (k + 1)^S`, so key 0
//! is the hottest.
//!
//! The Zipf sampler keeps the cumulative weights (8 bytes per key) and draws
//! by binary search: exact for any exponent, about 20 comparisons for a
//! million keys, and bounded by [`ZIPF_KEYS_MAX`]. Random numbers come from
//! SplitMix64, seeded per generator thread, so a run is repeatable up to
//! thread timing.

use std::fmt;
use std::str::FromStr;

/// The most keys a Zipf distribution may have (its table is 8 bytes a key).
pub const ZIPF_KEYS_MAX: u64 = 10_000_000;

/// How keys are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform,
    /// Key `k` with weight `1 / (k + 1)^exponent`.
    Zipf {
        /// The exponent `S`, at least 0 (0 is uniform).
        exponent: f64,
    },
}

impl FromStr for KeyDist {
    type Err = String;

    /// ```
    /// use ferry_bench::sources::dist::KeyDist;
    ///
    /// assert_eq!("uniform".parse(), Ok(KeyDist::Uniform));
    /// assert_eq!("zipf:1.0".parse(), Ok(KeyDist::Zipf { exponent: 1.0 }));
    /// assert!("zipf:-1".parse::<KeyDist>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "uniform" {
            return Ok(KeyDist::Uniform);
        }
        let Some(exponent) = text.strip_prefix("zipf:") else {
            return Err(format!(
                "`{text}`: expected `uniform` or `zipf:S` (e.g. zipf:1.0)"
            ));
        };
        match exponent.parse::<f64>() {
            Ok(exponent) if exponent.is_finite() && exponent >= 0.0 => {
                Ok(KeyDist::Zipf { exponent })
            }
            _ => Err(format!(
                "`{text}`: the Zipf exponent must be a number of at least 0 (e.g. zipf:1.0)"
            )),
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Zipf { exponent } => write!(f, "zipf:{exponent:?}"),
        }
    }
}

/// Draws keys in `0..keys` from a [`KeyDist`]. Build once and share: drawing
/// only reads it.
///
/// ```
/// use ferry_bench::sources::dist::{KeyDist, KeySampler, Rng};
///
/// let sampler = KeySampler::new(KeyDist::Zipf { exponent: 1.0 }, 1_000).unwrap();
/// let mut rng = Rng::new(7);
/// let key = sampler.sample(&mut rng);
/// assert!(key < 1_000);
/// ```
#[derive(Clone, Debug)]
pub struct KeySampler {
    keys: u64,
    /// Cumulative weights, normalised so the last is 1.0; empty for uniform.
    cumulative: Vec<f64>,
}

impl KeySampler {
    /// A sampler over `0..keys` (at least 1; at most [`ZIPF_KEYS_MAX`] for Zipf).
    pub fn new(dist: KeyDist, keys: u64) -> Result<Self, String> {
        if keys == 0 {
            return Err("there must be at least one key".to_string());
        }
        let cumulative = match dist {
            KeyDist::Uniform => Vec::new(),
            KeyDist::Zipf { exponent } => {
                if keys > ZIPF_KEYS_MAX {
                    return Err(format!(
                        "a Zipf distribution takes at most {ZIPF_KEYS_MAX} keys (got {keys})"
                    ));
                }
                let mut cumulative = Vec::with_capacity(keys as usize);
                let mut sum = 0.0;
                for k in 0..keys {
                    sum += ((k + 1) as f64).powf(-exponent);
                    cumulative.push(sum);
                }
                for c in &mut cumulative {
                    *c /= sum;
                }
                cumulative
            }
        };
        Ok(Self { keys, cumulative })
    }

    /// The number of keys.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// One key.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if self.cumulative.is_empty() {
            return rng.below(self.keys);
        }
        let u = rng.unit();
        let k = self.cumulative.partition_point(|&c| c <= u) as u64;
        // `u < 1.0 == last`, so `k < keys`; the `min` only guards rounding.
        k.min(self.keys - 1)
    }

    /// The probability of key `k` (for checks and docs).
    pub fn probability(&self, k: u64) -> f64 {
        if self.cumulative.is_empty() {
            return 1.0 / self.keys as f64;
        }
        let k = k as usize;
        self.cumulative[k] - if k == 0 { 0.0 } else { self.cumulative[k - 1] }
    }
}

/// SplitMix64: small, fast, and good enough to pick keys.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` at least 1), by multiply and shift.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound >= 1);
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Uniform in `[0, 1)`, 53 bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}
