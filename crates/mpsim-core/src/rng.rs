//! Deterministic random streams. Each component draws from its own stream
//! derived from the scenario seed and a stable component id, so adding a
//! component never perturbs the draws of another.

/// xoshiro256** seeded through SplitMix64.
#[derive(Clone, Debug)]
pub struct SimRng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SimRng {
    /// The stream of component `stream` under scenario seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut x = seed ^ splitmix64(&mut stream.wrapping_mul(0xD6E8_FEB8_6659_FD93).clone());
        let mut s = [0u64; 4];
        for v in &mut s {
            *v = splitmix64(&mut x);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        SimRng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p_frac`.
    pub fn bernoulli(&mut self, p_frac: f64) -> bool {
        p_frac > 0.0 && self.next_f64() < p_frac
    }

    /// Uniform integer in [0, n); n > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_give_the_same_draws() {
        let mut a = SimRng::new(7, 3);
        let mut b = SimRng::new(7, 3);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn streams_differ() {
        let mut a = SimRng::new(7, 3);
        let mut b = SimRng::new(7, 4);
        let mut c = SimRng::new(8, 3);
        let x = a.next_u64();
        assert_ne!(x, b.next_u64());
        assert_ne!(x, c.next_u64());
    }

    #[test]
    fn bernoulli_frequency_is_close_to_p() {
        let mut r = SimRng::new(1, 1);
        let hits = (0..100_000).filter(|_| r.bernoulli(0.1)).count();
        assert!((9_500..10_500).contains(&hits), "{hits}");
    }
}
