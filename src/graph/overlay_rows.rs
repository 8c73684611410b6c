//! Rows of an overlay generation as runs of positions (or in-row indices).
//!
//! A row the overlay touched is a short list of runs `(start, end)` over the generation's
//! index space (base, then appended): a short row is rewritten to one appended run, a long
//! one (a hub's) keeps its base runs and gets the changed entries spliced in as appended
//! runs, so a change costs its own entries, not the row. Walking the runs in order gives
//! the row's entries in the build's order.

use std::ops::Range;

/// Rows up to this many entries are rewritten whole into the appended part (one run);
/// longer rows take delta runs. Small: a rewritten row moves its facts, and every moved
/// fact is an entry to move in its object's in-row too (`benches/results/live.md`,
/// "Delta rows", has the measurements that chose these two).
pub(crate) const DELTA_ROW_MIN: usize = 4;
/// A delta row whose runs would average fewer entries than this is rewritten whole
/// instead, so that rows do not fragment into single entries between compactions.
pub(crate) const DELTA_RUN_MIN: usize = 2;

/// When a changed row is rewritten whole and when it takes delta runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowRule {
    /// Rows of at most this many entries are rewritten.
    pub(crate) min_len: usize,
    /// Rows whose runs would average fewer entries than this are rewritten.
    pub(crate) min_run: usize,
}

impl Default for RowRule {
    fn default() -> Self {
        RowRule {
            min_len: DELTA_ROW_MIN,
            min_run: DELTA_RUN_MIN,
        }
    }
}

impl RowRule {
    /// Whether a row of `len` entries in about `runs` runs is rewritten whole.
    pub(crate) fn rewrite(self, len: usize, runs: usize) -> bool {
        len <= self.min_len || runs.saturating_mul(self.min_run) > len
    }
}

/// A touched row: one run held inline (`n == 1`, the common case: no second read), or
/// `n` runs from `first` in the overlay's run list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowRef {
    pub(crate) first: u32,
    pub(crate) n: u32,
    pub(crate) one: (u32, u32),
}

impl RowRef {
    /// The row of `runs`, appending them to `pool` unless there is one.
    pub(crate) fn of(runs: &[(u32, u32)], pool: &mut Vec<(u32, u32)>) -> Self {
        match runs {
            [one] => RowRef {
                first: 0,
                n: 1,
                one: *one,
            },
            _ => {
                let first = pool.len() as u32;
                pool.extend_from_slice(runs);
                RowRef {
                    first,
                    n: runs.len() as u32,
                    one: (0, 0),
                }
            }
        }
    }

    /// The row's runs.
    #[inline]
    pub(crate) fn runs<'a>(&'a self, pool: &'a [(u32, u32)]) -> &'a [(u32, u32)] {
        match self.n {
            1 => std::slice::from_ref(&self.one),
            n => &pool[self.first as usize..self.first as usize + n as usize],
        }
    }
}

/// The entries of one row, in order: the current run, then the rest.
#[derive(Debug, Clone)]
pub(crate) struct Segs<'a> {
    cur: Range<usize>,
    rest: std::slice::Iter<'a, (u32, u32)>,
}

impl<'a> Segs<'a> {
    /// A row of one run.
    #[inline]
    pub(crate) fn one(r: Range<usize>) -> Self {
        Segs {
            cur: r,
            rest: [].iter(),
        }
    }
    /// A row of several runs.
    #[inline]
    pub(crate) fn runs(runs: &'a [(u32, u32)]) -> Self {
        Segs {
            cur: 0..0,
            rest: runs.iter(),
        }
    }
}

impl Iterator for Segs<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if let Some(x) = self.cur.next() {
                return Some(x);
            }
            let &(a, b) = self.rest.next()?;
            self.cur = a as usize..b as usize;
        }
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.cur.len()
            + self
                .rest
                .as_slice()
                .iter()
                .map(|&(a, b)| (b - a) as usize)
                .sum::<usize>();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segs<'_> {}

/// Entries in a run list.
pub(crate) fn runs_len(runs: &[(u32, u32)]) -> usize {
    runs.iter().map(|&(a, b)| (b - a) as usize).sum()
}

/// The index of the first entry whose key is `>= key`, as (run, index), or None when every
/// key is below it. The runs hold entries in ascending key order.
fn find(runs: &[(u32, u32)], key: u64, key_at: &impl Fn(u32) -> u64) -> Option<(usize, u32)> {
    for (k, &(a, b)) in runs.iter().enumerate() {
        if a == b || key_at(b - 1) < key {
            continue;
        }
        let (mut lo, mut hi) = (a, b - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key_at(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return Some((k, lo));
    }
    None
}

/// Drop the entry with key `key` from the runs; false when no entry has it.
pub(crate) fn remove_key(
    runs: &mut Vec<(u32, u32)>,
    key: u64,
    key_at: &impl Fn(u32) -> u64,
) -> bool {
    match find(runs, key, key_at) {
        Some((k, x)) if key_at(x) == key => {
            remove_at(runs, k, x);
            true
        }
        _ => false,
    }
}

/// Drop entry `x` (an index the runs hold) from the runs; false when they do not hold it.
pub(crate) fn remove(runs: &mut Vec<(u32, u32)>, x: u32) -> bool {
    match runs.iter().position(|&(a, b)| a <= x && x < b) {
        Some(k) => {
            remove_at(runs, k, x);
            true
        }
        None => false,
    }
}

fn remove_at(runs: &mut Vec<(u32, u32)>, k: usize, x: u32) {
    let (a, b) = runs[k];
    match (x == a, x + 1 == b) {
        (true, true) => {
            runs.remove(k);
        }
        (true, false) => runs[k].0 = x + 1,
        (false, true) => runs[k].1 = x,
        (false, false) => {
            runs[k].1 = x;
            runs.insert(k + 1, (x + 1, b));
        }
    }
}

/// Put entry `y` (key `key`, absent from the runs) in its place by key. An entry appended
/// right after the previous one's run extends it.
pub(crate) fn insert(runs: &mut Vec<(u32, u32)>, y: u32, key: u64, key_at: &impl Fn(u32) -> u64) {
    let (k, split) = match find(runs, key, key_at) {
        Some((k, x)) if x == runs[k].0 => (k, None),
        Some((k, x)) => (k + 1, Some(x)),
        None => (runs.len(), None),
    };
    if let Some(x) = split {
        let b = runs[k - 1].1;
        runs[k - 1].1 = x;
        runs.insert(k, (x, b));
    }
    if k > 0 && runs[k - 1].1 == y {
        runs[k - 1].1 += 1;
    } else {
        runs.insert(k, (y, y + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Removing and inserting by key keeps the runs' entries those of a sorted list.
        #[test]
        fn runs_follow_a_sorted_list(
            n in 0usize..40,
            ops in proptest::collection::vec((any::<bool>(), any::<u16>()), 0..30),
        ) {
            // Entry i has key keys[i]; entries 0..n form the starting row.
            let mut keys: Vec<u64> = (0..n as u64).map(|k| 10 * k).collect();
            let mut runs: Vec<(u32, u32)> = if n > 0 { vec![(0, n as u32)] } else { vec![] };
            let mut want: Vec<u64> = keys.clone();
            for &(add, r) in &ops {
                if add {
                    let key = u64::from(r) * 7 + 3;
                    if want.contains(&key) {
                        continue;
                    }
                    keys.push(key);
                    let y = (keys.len() - 1) as u32;
                    let ks = keys.clone();
                    insert(&mut runs, y, key, &|i| ks[i as usize]);
                    want.push(key);
                    want.sort_unstable();
                } else if !want.is_empty() {
                    let key = want[r as usize % want.len()];
                    let ks = keys.clone();
                    prop_assert!(remove_key(&mut runs, key, &|i| ks[i as usize]));
                    want.retain(|&k| k != key);
                }
                let got: Vec<u64> = Segs::runs(&runs).map(|i| keys[i]).collect();
                prop_assert_eq!(&got, &want);
                prop_assert_eq!(runs_len(&runs), want.len());
                prop_assert_eq!(Segs::runs(&runs).len(), want.len());
                prop_assert!(runs.iter().all(|&(a, b)| a < b));
            }
        }
    }

    #[test]
    fn remove_by_index() {
        let mut runs = vec![(0, 5), (9, 10)];
        assert!(remove(&mut runs, 2));
        assert_eq!(runs, vec![(0, 2), (3, 5), (9, 10)]);
        assert!(remove(&mut runs, 9));
        assert!(!remove(&mut runs, 9));
        assert_eq!(runs, vec![(0, 2), (3, 5)]);
    }
}
