//! Which key each input goes to: uniform and zipf spread as their weights say.

use ferry_bench::sources::dist::*;

fn histogram(sampler: &KeySampler, draws: usize) -> Vec<usize> {
    let mut rng = Rng::new(42);
    let mut counts = vec![0; sampler.keys() as usize];
    for _ in 0..draws {
        counts[sampler.sample(&mut rng) as usize] += 1;
    }
    counts
}

#[test]
fn zipf_one_follows_the_harmonic_weights() {
    let keys = 1_000;
    let sampler = KeySampler::new(KeyDist::Zipf { exponent: 1.0 }, keys).unwrap();
    let harmonic: f64 = (1..=keys).map(|k| 1.0 / k as f64).sum();
    let draws = 400_000;
    let counts = histogram(&sampler, draws);
    // The hottest keys, each within 5% of its expected share.
    for (k, &count) in counts.iter().enumerate().take(5) {
        let expected = draws as f64 / ((k + 1) as f64 * harmonic);
        let got = count as f64;
        assert!(
            (got - expected).abs() < 0.05 * expected,
            "key {k}: got {got}, expected {expected:.0}"
        );
        assert!((sampler.probability(k as u64) - expected / draws as f64).abs() < 1e-9);
    }
    // Key 0 about twice key 1, ten times key 9.
    assert!((counts[0] as f64 / counts[1] as f64 - 2.0).abs() < 0.1);
    assert!((counts[0] as f64 / counts[9] as f64 - 10.0).abs() < 1.0);
    // And the cold half still gets its share.
    let cold: usize = counts[500..].iter().sum();
    let cold_expected: f64 = (501..=keys).map(|k| 1.0 / k as f64).sum::<f64>() / harmonic;
    assert!((cold as f64 / draws as f64 - cold_expected).abs() < 0.01);
}

#[test]
fn uniform_and_zipf_zero_spread_evenly() {
    for dist in [KeyDist::Uniform, KeyDist::Zipf { exponent: 0.0 }] {
        let sampler = KeySampler::new(dist, 10).unwrap();
        let counts = histogram(&sampler, 100_000);
        for (k, &count) in counts.iter().enumerate() {
            assert!(
                (9_000..11_000).contains(&count),
                "{dist}: key {k} drawn {count} times"
            );
        }
    }
}

#[test]
fn one_key_is_always_that_key() {
    for dist in [KeyDist::Uniform, KeyDist::Zipf { exponent: 1.2 }] {
        let sampler = KeySampler::new(dist, 1).unwrap();
        assert!(histogram(&sampler, 1_000).iter().all(|&c| c == 1_000));
    }
}

#[test]
fn parses_and_prints() {
    assert_eq!("zipf:0.99".parse(), Ok(KeyDist::Zipf { exponent: 0.99 }));
    assert_eq!(KeyDist::Zipf { exponent: 1.0 }.to_string(), "zipf:1.0");
    assert_eq!(KeyDist::Uniform.to_string(), "uniform");
    for bad in ["zipf", "zipf:", "zipf:x", "zipf:NaN", "normal"] {
        assert!(bad.parse::<KeyDist>().is_err(), "{bad}");
    }
    assert!(KeySampler::new(KeyDist::Uniform, 0).is_err());
    assert!(KeySampler::new(KeyDist::Zipf { exponent: 1.0 }, ZIPF_KEYS_MAX + 1).is_err());
}
