//! The article's deterministic randomness: `mulberry32` and the `keyed` draw.
//!
//! Both follow the script's JavaScript bit for bit. JavaScript numbers are doubles, but every
//! operation the script does on them is an int32/uint32 operation (`|0`, `>>>`, `Math.imul`), so
//! wrapping `u32` arithmetic gives the same bits, and the final division by 2^32 is exact.

use std::fmt::{self, Display, Write};

/// The `mulberry32` generator the script seeds with the run's seed.
#[derive(Debug, Clone)]
pub struct Mulberry32 {
    state: u32,
}

impl Mulberry32 {
    /// A generator in the state `mulberry32(seed)` returns in the script.
    pub fn new(seed: u32) -> Self {
        Self { state: seed }
    }

    /// The next draw in `[0, 1)`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x6d2b_79f5);
        let a = self.state;
        let mut t = (a ^ (a >> 15)).wrapping_mul(1 | a);
        t = t.wrapping_add((t ^ (t >> 7)).wrapping_mul(61 | t)) ^ t;
        f64::from(t ^ (t >> 14)) / 4_294_967_296.0
    }
}

/// The script's `keyed(...parts)`: a draw in `[0, 1)` fixed by the seed and the parts, joined
/// with `|` as JavaScript's `Array.prototype.join` would, so that every handler (and every real
/// run) sees the same fault for the same event and attempt, whatever order it processes them in.
///
/// Parts are written with their `Display`, which for strings and integers is what JavaScript's
/// `String(part)` gives.
pub fn keyed(seed: u32, parts: &[&dyn Display]) -> f64 {
    let mut hasher = KeyHasher { h: seed };
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.h = step(hasher.h, u32::from(b'|'));
        }
        // Writing into the hasher cannot fail: `write_str` always returns Ok.
        let _ = write!(hasher, "{part}");
    }
    Mulberry32::new(hasher.h).next()
}

fn step(h: u32, unit: u32) -> u32 {
    (h ^ unit).wrapping_mul(2_654_435_761)
}

/// Folds text into the key hash without building the joined string.
struct KeyHasher {
    h: u32,
}

impl Write for KeyHasher {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // `for (const ch of str)` walks code points and `ch.charCodeAt(0)` takes the first
        // UTF-16 unit of each; for ASCII that is the byte.
        for ch in s.chars() {
            let mut units = [0u16; 2];
            let first = ch.encode_utf16(&mut units)[0];
            self.h = step(self.h, u32::from(first));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mulberry32_matches_the_reference_sequence() {
        // mulberry32(1) in JavaScript: 0.6270739405881613, 0.002735721180215478, 0.5274470399599522
        let mut rng = Mulberry32::new(1);
        assert_eq!(rng.next(), 0.627_073_940_588_161_3);
        assert_eq!(rng.next(), 0.002_735_721_180_215_478);
        assert_eq!(rng.next(), 0.527_447_039_959_952_2);
    }

    #[test]
    fn keyed_joins_parts_with_a_bar() {
        let joined = keyed(7, &[&"evt_000001|3|retryAt"]);
        let parts = keyed(7, &[&"evt_000001", &3u32, &"retryAt"]);
        assert_eq!(joined, parts);
        assert_ne!(parts, keyed(8, &[&"evt_000001", &3u32, &"retryAt"]));
        assert!((0.0..1.0).contains(&parts));
    }

    #[test]
    fn keyed_matches_the_script() {
        // keyed(...) printed by the script's own function with SEED = 20261023.
        assert_eq!(keyed(20_261_023, &[&"evt_000132", &"concurrent"]), 0.001_996_389_823_034_405_7);
        assert_eq!(
            keyed(20_261_023, &[&"ret", &"Svix published schedule", &17u32, &"manual", &"lost"]),
            0.478_966_522_030_532_36
        );
    }
}
