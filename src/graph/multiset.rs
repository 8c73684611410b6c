//! Multiset fingerprints: whether two lists of small tuples hold the same tuples, checked
//! in sequential passes instead of the random reads of a join.
//!
//! A list of tuples `(a, b, c)` is fingerprinted as the product of `r - (a + s·b + t·c)`
//! over its tuples, modulo the prime `2^61 - 1`, at random `r`, `s`, `t` drawn per check
//! from the operating system's randomness (a crafted payload cannot aim at them). Two lists
//! holding the same tuples (in any order) always give the same fingerprint; two that differ
//! are polynomials that differ, so by the Schwartz-Zippel lemma they agree at the random
//! point with probability at most `len / (2^61 - 1)`: below `5e-11` for 100M tuples.
//! The product is associative and commutative, so each thread folds its own chunk.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// The Mersenne prime `2^61 - 1`.
const P: u64 = (1 << 61) - 1;

/// `x mod P`.
#[inline]
fn reduce(x: u128) -> u64 {
    let folded = (x as u64 & P) + ((x >> 61) as u64 & P) + (x >> 122) as u64;
    let once = (folded & P) + (folded >> 61);
    if once >= P {
        once - P
    } else {
        once
    }
}

/// `a * b mod P` for `a, b < P`.
#[inline]
pub(crate) fn mul(a: u64, b: u64) -> u64 {
    reduce(u128::from(a) * u128::from(b))
}

/// The random evaluation point of one check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fingerprint {
    r: u64,
    s: u64,
    t: u64,
}

/// A number below `P` drawn from the process's random hash keys (seeded by the OS).
fn random_below_p(state: &RandomState, i: u64) -> u64 {
    let mut h = state.build_hasher();
    h.write_u64(i);
    h.finish() % P
}

impl Fingerprint {
    /// A fresh random point.
    pub(crate) fn random() -> Self {
        let state = RandomState::new();
        Fingerprint {
            r: random_below_p(&state, 1),
            s: random_below_p(&state, 2),
            t: random_below_p(&state, 3),
        }
    }

    /// The factor of the tuple `(a, b, c)`: `r - (a + s·b + t·c) mod P`.
    #[inline]
    pub(crate) fn factor(&self, a: u32, b: u32, c: u32) -> u64 {
        let x = reduce(
            u128::from(a) + u128::from(self.s) * u128::from(b) + u128::from(self.t) * u128::from(c),
        );
        if self.r >= x {
            self.r - x
        } else {
            self.r + P - x
        }
    }

    /// The product of `factor(tuple(i))` for `i` in `range`, with four independent
    /// accumulators so that the multiplications overlap.
    #[inline]
    pub(crate) fn product(
        &self,
        range: std::ops::Range<usize>,
        tuple: impl Fn(usize) -> (u32, u32, u32),
    ) -> u64 {
        let mut acc = [1u64; 4];
        let mut i = range.start;
        while i + 4 <= range.end {
            for (k, a) in acc.iter_mut().enumerate() {
                let (x, y, z) = tuple(i + k);
                *a = mul(*a, self.factor(x, y, z));
            }
            i += 4;
        }
        while i < range.end {
            let (x, y, z) = tuple(i);
            acc[0] = mul(acc[0], self.factor(x, y, z));
            i += 1;
        }
        mul(mul(acc[0], acc[1]), mul(acc[2], acc[3]))
    }
}

/// A product folded by one task of a parallel pass (four lanes, so that the
/// multiplications overlap), multiplied into a shared total when dropped: for passes whose
/// main output is collected elsewhere.
pub(crate) struct Lanes<'a> {
    acc: [u64; 4],
    total: &'a AtomicU64,
}

impl<'a> Lanes<'a> {
    pub(crate) fn new(total: &'a AtomicU64) -> Self {
        Lanes { acc: [1; 4], total }
    }

    #[inline]
    pub(crate) fn push(&mut self, factor: u64) {
        let [a, b, c, d] = self.acc;
        self.acc = [b, c, d, mul(a, factor)];
    }
}

impl Drop for Lanes<'_> {
    fn drop(&mut self) {
        let [a, b, c, d] = self.acc;
        let v = mul(mul(a, b), mul(c, d));
        let mut t = self.total.load(Ordering::Relaxed);
        while let Err(now) =
            self.total
                .compare_exchange_weak(t, mul(t, v), Ordering::Relaxed, Ordering::Relaxed)
        {
            t = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn of(f: &Fingerprint, items: &[(u32, u32, u32)]) -> u64 {
        f.product(0..items.len(), |i| items[i])
    }

    #[test]
    fn reduce_matches_the_remainder() {
        for x in [
            0u128,
            1,
            P as u128,
            P as u128 + 1,
            (1u128 << 122) - 1,
            u128::from(u64::MAX) * 3,
        ] {
            assert_eq!(u128::from(reduce(x)), x % P as u128);
        }
    }

    proptest! {
        /// Any order of the same tuples gives the same fingerprint; one changed value a
        /// different one (at a random point: a false match has probability ~1e-17).
        #[test]
        fn order_free_and_sensitive(items in proptest::collection::vec(any::<(u32, u32, u32)>(), 0..40), seed in any::<u64>(), at in any::<usize>(), v in any::<u32>()) {
            let f = Fingerprint::random();
            let mut shuffled = items.clone();
            let n = shuffled.len();
            if n > 1 {
                shuffled.swap((seed as usize) % n, at % n);
            }
            prop_assert_eq!(of(&f, &items), of(&f, &shuffled));
            if n > 0 {
                let mut changed = items.clone();
                let i = at % n;
                if changed[i].1 != v {
                    changed[i].1 = v;
                    prop_assert_ne!(of(&f, &items), of(&f, &changed));
                }
            }
        }
    }
}
