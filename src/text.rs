//! Keyword retrieval: the query side of BM25 over precomputed postings
//! (`graphrecall.anchors.keyword.BM25Index`). Pyo3-free, numbers only.
//!
//! The index (built in Python) orders its postings by (tenant, term, row); a posting holds
//! its row's position among the tenant's rows and its whole BM25 contribution
//! `IDF * (f * (k1 + 1)) / (f + norm)`. A *group* is the postings of one term in one
//! tenant: `postings[offsets[g]..offsets[g + 1]]`, positions strictly ascending. A query is
//! a list of term ids, one FTS5 phrase each (a repeated term counts twice); a row's score
//! is the sum of its contributions **in phrase order, from `0.0`**, the order of FTS5's
//! loop, so scores equal FTS5's `-bm25()` bit for bit.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::Range;

use crate::{Error, Result};

/// Dense accumulation (one `f64` per row of the tenant) when `postings * DENSE_FACTOR >=
/// rows`; below, the postings are sorted by position and summed run by run. Both add each
/// row's contributions in phrase order.
pub const DENSE_FACTOR: usize = 32;
/// Rows per block of the dense scan.
const SCAN_BLOCK: usize = 16;

/// Every posting of an index: its row's position within its tenant and its contribution.
#[derive(Debug, Clone, Copy)]
pub struct Postings<'a> {
    pub positions: &'a [u32],
    pub scores: &'a [f64],
}

/// One tenant's groups: term ids ascending, and `terms.len() + 1` offsets into the
/// postings (`offsets[g]..offsets[g + 1]` are term `terms[g]`'s postings).
#[derive(Debug, Clone, Copy)]
pub struct Groups<'a> {
    pub terms: &'a [i64],
    pub offsets: &'a [i64],
}

/// How a query's phrases combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Rows holding any phrase (FTS5 `"a" OR "b"`).
    Any,
    /// Rows holding every phrase (FTS5 `"a" AND "b"`).
    All,
}

fn bad_posting(row: usize, value: u32, n_rows: usize) -> Error {
    Error::InvalidValue {
        table: "postings",
        row,
        column: "positions",
        value: value.to_string(),
        problem: format!("outside the tenant's {n_rows} rows"),
    }
}

/// The posting range of each phrase, in phrase order (`None`: the term has no postings in
/// the tenant; a term id below 0 is a token outside the vocabulary).
fn phrase_ranges(
    postings: &Postings<'_>,
    groups: &Groups<'_>,
    terms: &[i64],
) -> Result<Vec<Option<Range<usize>>>> {
    if groups.offsets.len() != groups.terms.len() + 1 {
        return Err(Error::LengthMismatch {
            table: "groups",
            column: "group_offsets",
            expected: groups.terms.len() + 1,
            got: groups.offsets.len(),
        });
    }
    terms
        .iter()
        .map(|&t| {
            if t < 0 {
                return Ok(None);
            }
            let Ok(g) = groups.terms.binary_search(&t) else {
                return Ok(None);
            };
            let (a, b) = (groups.offsets[g], groups.offsets[g + 1]);
            if a < 0 || b < a || b as usize > postings.positions.len() {
                return Err(Error::InvalidValue {
                    table: "groups",
                    row: g,
                    column: "group_offsets",
                    value: format!("{a}..{b}"),
                    problem: format!("not a range of the {} postings", postings.positions.len()),
                });
            }
            Ok(Some(a as usize..b as usize))
        })
        .collect()
}

/// A candidate of the top-k heap: the greatest is the worst (lowest score, then the
/// largest position).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f64,
    position: usize,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.position.cmp(&other.position))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// The best `k` of `(position, score)` pairs offered in strictly ascending position order,
/// keeping only scores `> 0.0` (NaN never): score descending, ties by position. Positions
/// ascend, so a later pair tying the worst kept one never displaces it: a pair enters
/// exactly when its score beats `threshold` (0.0 until `k` are kept, then the worst kept
/// score), one comparison for most pairs.
struct TopK {
    k: usize,
    threshold: f64,
    heap: BinaryHeap<Candidate>,
}

impl TopK {
    fn new(k: usize, expected: usize) -> Self {
        Self {
            k,
            threshold: if k == 0 { f64::INFINITY } else { 0.0 },
            heap: BinaryHeap::with_capacity(k.min(expected)),
        }
    }

    #[inline]
    fn offer(&mut self, position: usize, score: f64) {
        if score > self.threshold {
            self.keep(Candidate { score, position });
        }
    }

    fn keep(&mut self, candidate: Candidate) {
        if self.heap.len() < self.k {
            self.heap.push(candidate);
            if self.heap.len() < self.k {
                return;
            }
        } else if let Some(mut worst) = self.heap.peek_mut() {
            *worst = candidate;
        }
        if let Some(worst) = self.heap.peek() {
            self.threshold = worst.score;
        }
    }

    fn finish(self) -> Vec<Candidate> {
        // Ascending by `Ord` is best first.
        self.heap.into_sorted_vec()
    }
}

/// `Match::Any`, one `f64` per row: contributions added in phrase order into zeros, then
/// the rows scanned in order.
fn any_dense(
    postings: &Postings<'_>,
    ranges: &[Range<usize>],
    n_rows: usize,
    top: &mut TopK,
) -> Result<()> {
    let mut acc = vec![0.0f64; n_rows];
    for r in ranges {
        for (j, (&p, &s)) in postings.positions[r.clone()]
            .iter()
            .zip(&postings.scores[r.clone()])
            .enumerate()
        {
            let slot = acc
                .get_mut(p as usize)
                .ok_or_else(|| bad_posting(r.start + j, p, n_rows))?;
            *slot += s;
        }
    }
    // Most rows fall below the threshold: test a block at once (one vectorised comparison
    // per block) and offer its rows only when one of them passes.
    for (b, block) in acc.chunks(SCAN_BLOCK).enumerate() {
        let threshold = top.threshold;
        if block.iter().fold(false, |any, &x| any | (x > threshold)) {
            for (j, &score) in block.iter().enumerate() {
                top.offer(b * SCAN_BLOCK + j, score);
            }
        }
    }
    Ok(())
}

/// `Match::Any` over few postings: sorted by position (a stable sort keeps phrase order
/// within a row) and summed run by run.
fn any_sparse(
    postings: &Postings<'_>,
    ranges: &[Range<usize>],
    n_rows: usize,
    n_post: usize,
    top: &mut TopK,
) -> Result<()> {
    let mut items: Vec<(usize, f64)> = Vec::with_capacity(n_post);
    for r in ranges {
        for (j, (&p, &s)) in postings.positions[r.clone()]
            .iter()
            .zip(&postings.scores[r.clone()])
            .enumerate()
        {
            if p as usize >= n_rows {
                return Err(bad_posting(r.start + j, p, n_rows));
            }
            items.push((p as usize, s));
        }
    }
    items.sort_by_key(|&(i, _)| i);
    let mut run = 0;
    while run < items.len() {
        let position = items[run].0;
        let mut sum = 0.0;
        while run < items.len() && items[run].0 == position {
            sum += items[run].1;
            run += 1;
        }
        top.offer(position, sum);
    }
    Ok(())
}

/// First index `>= from` of `sorted` whose value is `>= target` (galloping search).
#[inline]
fn gallop(sorted: &[u32], from: usize, target: u32) -> usize {
    let n = sorted.len();
    if from >= n || sorted[from] >= target {
        return from;
    }
    // sorted[lo] < target throughout.
    let (mut lo, mut step) = (from, 1);
    while lo + step < n && sorted[lo + step] < target {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(n);
    lo + 1 + sorted[lo + 1..hi].partition_point(|&v| v < target)
}

/// `Match::All`: the positions of the rarest phrase looked up in every phrase's postings
/// (galloping, positions ascending); a row found in all of them sums its contributions in
/// phrase order.
fn all_intersect(
    postings: &Postings<'_>,
    ranges: &[Range<usize>],
    n_rows: usize,
    top: &mut TopK,
) -> Result<()> {
    let Some(rarest) = ranges.iter().min_by_key(|r| r.len()) else {
        return Ok(());
    };
    let lists: Vec<(&[u32], &[f64])> = ranges
        .iter()
        .map(|r| (&postings.positions[r.clone()], &postings.scores[r.clone()]))
        .collect();
    let mut cursors = vec![0usize; lists.len()];
    'candidates: for (j, &p) in postings.positions[rarest.clone()].iter().enumerate() {
        let position = p as usize;
        if position >= n_rows {
            return Err(bad_posting(rarest.start + j, p, n_rows));
        }
        let mut sum = 0.0;
        for ((positions, scores), cursor) in lists.iter().zip(cursors.iter_mut()) {
            *cursor = gallop(positions, *cursor, p);
            match positions.get(*cursor) {
                Some(&q) if q == p => sum += scores[*cursor],
                _ => continue 'candidates,
            }
        }
        top.offer(position, sum);
    }
    Ok(())
}

/// The best `k` rows of one tenant for a query: its phrases' postings summed per row in
/// phrase order from `0.0` (FTS5's `bm25()`, positive), rows whose sum is not `> 0.0` left
/// out, score descending, ties by row position (so by row, as `rows` ascends).
///
/// * `postings`: every posting of the index.
/// * `groups`: the tenant's groups (term ids ascending; each group's positions strictly
///   ascending).
/// * `rows`: the tenant's rows (its positions map to `rows[position]`).
/// * `terms`: the query's term ids in phrase order (below 0: a token outside the
///   vocabulary, which matches nothing).
/// * `how`: any or every phrase.
///
/// Returns `(rows, scores)`, at most `k`; empty when nothing matches (under `Match::All`,
/// as soon as one term has no postings in the tenant).
///
/// # Errors
/// `LengthMismatch` when `positions` and `scores` (or the groups' terms and offsets)
/// disagree; `InvalidValue` for a group range outside the postings or a position outside
/// `rows`.
pub fn bm25_top_k(
    postings: Postings<'_>,
    groups: Groups<'_>,
    rows: &[i64],
    terms: &[i64],
    k: usize,
    how: Match,
) -> Result<(Vec<i64>, Vec<f64>)> {
    if postings.positions.len() != postings.scores.len() {
        return Err(Error::LengthMismatch {
            table: "postings",
            column: "scores",
            expected: postings.positions.len(),
            got: postings.scores.len(),
        });
    }
    let found = phrase_ranges(&postings, &groups, terms)?;
    let ranges: Vec<Range<usize>> = match how {
        Match::All if found.iter().any(Option::is_none) => Vec::new(),
        _ => found.into_iter().flatten().collect(),
    };
    let n_rows = rows.len();
    let n_post: usize = ranges.iter().map(ExactSizeIterator::len).sum();
    let mut top = TopK::new(k, n_post.min(n_rows));
    if !ranges.is_empty() && k > 0 {
        match how {
            Match::All => all_intersect(&postings, &ranges, n_rows, &mut top)?,
            Match::Any if n_post.saturating_mul(DENSE_FACTOR) >= n_rows => {
                any_dense(&postings, &ranges, n_rows, &mut top)?;
            }
            Match::Any => any_sparse(&postings, &ranges, n_rows, n_post, &mut top)?,
        }
    }
    // Positions were checked against `rows` when they were read.
    Ok(top
        .finish()
        .into_iter()
        .map(|c| (rows[c.position], c.score))
        .unzip())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::float_cmp)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One tenant's index from rows of term ids: (positions, scores, terms, offsets).
    fn index_of(docs: &[Vec<i64>], weight: impl Fn(i64, usize, usize) -> f64) -> Built {
        let mut pairs: Vec<(i64, usize, usize)> = Vec::new(); // (term, row, tf)
        for (row, doc) in docs.iter().enumerate() {
            let mut terms = doc.clone();
            terms.sort_unstable();
            terms.dedup();
            for t in terms {
                pairs.push((t, row, doc.iter().filter(|&&x| x == t).count()));
            }
        }
        pairs.sort_unstable();
        let mut b = Built::default();
        for &(t, row, tf) in &pairs {
            if b.terms.last() != Some(&t) {
                b.terms.push(t);
                b.offsets.push(b.positions.len() as i64);
            }
            b.positions.push(row as u32);
            b.scores.push(weight(t, row, tf));
        }
        b.offsets.push(b.positions.len() as i64);
        b
    }

    #[derive(Default, Debug)]
    struct Built {
        positions: Vec<u32>,
        scores: Vec<f64>,
        terms: Vec<i64>,
        offsets: Vec<i64>,
    }

    impl Built {
        fn run(
            &self,
            rows: &[i64],
            q: &[i64],
            k: usize,
            how: Match,
        ) -> Result<(Vec<i64>, Vec<f64>)> {
            bm25_top_k(
                Postings {
                    positions: &self.positions,
                    scores: &self.scores,
                },
                Groups {
                    terms: &self.terms,
                    offsets: &self.offsets,
                },
                rows,
                q,
                k,
                how,
            )
        }
    }

    /// The obvious form: every row's sum over the query's phrases in order, then a full
    /// sort.
    fn reference(b: &Built, n_rows: usize, q: &[i64], k: usize, how: Match) -> Vec<(i64, f64)> {
        let mut out = Vec::new();
        for row in 0..n_rows {
            let mut sum = 0.0;
            let mut present = 0;
            for &t in q {
                if let Ok(g) = b.terms.binary_search(&t) {
                    let r = b.offsets[g] as usize..b.offsets[g + 1] as usize;
                    if let Some(j) = b.positions[r.clone()]
                        .iter()
                        .position(|&p| p as usize == row)
                    {
                        sum += b.scores[r.start + j];
                        present += 1;
                    }
                }
            }
            let ok = match how {
                Match::Any => present > 0,
                Match::All => present == q.len() && !q.is_empty(),
            };
            if ok && sum > 0.0 {
                out.push((row as i64, sum));
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        out
    }

    fn weight(t: i64, row: usize, tf: usize) -> f64 {
        // Few distinct values (many ties), none exact in binary.
        ((t as usize * 7 + row % 3 + tf) % 5 + 1) as f64 / 3.0
    }

    #[test]
    fn hand_built_index() {
        let docs = vec![vec![1, 2], vec![2, 2, 3], vec![], vec![1, 3], vec![4]];
        let b = index_of(&docs, weight);
        let rows: Vec<i64> = vec![10, 11, 12, 13, 14];
        for how in [Match::Any, Match::All] {
            for q in [
                vec![1],
                vec![2, 3],
                vec![3, 2, 2],
                vec![1, 9],
                vec![-1, 4],
                vec![],
            ] {
                for k in [0, 1, 2, 10] {
                    let (r, s) = b.run(&rows, &q, k, how).unwrap();
                    let want = reference(&b, docs.len(), &q, k, how);
                    let got: Vec<(i64, f64)> = r.iter().map(|x| x - 10).zip(s).collect();
                    assert_eq!(got, want, "{q:?} {k} {how:?}");
                }
            }
        }
        // Every phrase must be present under All; an unknown one (-1 or absent) empties it.
        assert!(b.run(&rows, &[1, -1], 5, Match::All).unwrap().0.is_empty());
        assert!(b.run(&rows, &[1, 99], 5, Match::All).unwrap().0.is_empty());
        assert_eq!(
            b.run(&rows, &[1, 99], 5, Match::Any).unwrap().0,
            vec![10, 13]
        );
    }

    #[test]
    fn sums_in_phrase_order() {
        // 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in binary: the phrase order decides.
        let b = Built {
            positions: vec![0, 0, 0],
            scores: vec![0.1, 0.2, 0.3],
            terms: vec![5, 6, 7],
            offsets: vec![0, 1, 2, 3],
        };
        assert_ne!(0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1);
        for how in [Match::Any, Match::All] {
            let (_, s) = b.run(&[0], &[5, 6, 7], 1, how).unwrap();
            assert_eq!(s, vec![0.0 + 0.1 + 0.2 + 0.3]);
            let (_, s) = b.run(&[0], &[7, 6, 5], 1, how).unwrap();
            assert_eq!(s, vec![0.0 + 0.3 + 0.2 + 0.1]);
        }
    }

    #[test]
    fn non_positive_sums_are_left_out() {
        let b = Built {
            positions: vec![0, 1, 2],
            scores: vec![0.0, -1.0, f64::NAN],
            terms: vec![1],
            offsets: vec![0, 3],
        };
        assert!(b.run(&[0, 1, 2], &[1], 3, Match::Any).unwrap().0.is_empty());
        assert!(b.run(&[0, 1, 2], &[1], 3, Match::All).unwrap().0.is_empty());
    }

    #[test]
    fn errors_name_the_bad_input() {
        let good = index_of(&[vec![1], vec![1, 2]], weight);
        let rows = [0, 1];
        let mut b = Built {
            scores: vec![1.0],
            ..index_of(&[vec![1], vec![1, 2]], weight)
        };
        let err = b.run(&rows, &[1], 2, Match::Any).unwrap_err();
        assert_eq!(err.to_string(), "postings.scores has 1 rows, expected 3");
        b.scores = good.scores.clone();
        b.offsets.pop();
        let err = b.run(&rows, &[1], 2, Match::Any).unwrap_err();
        assert_eq!(
            err.to_string(),
            "groups.group_offsets has 2 rows, expected 3"
        );
        b.offsets = vec![0, 2, 9];
        let err = b.run(&rows, &[2], 2, Match::Any).unwrap_err();
        assert_eq!(
            err.to_string(),
            "groups row 1: group_offsets = 2..9 is not a range of the 3 postings"
        );
        b.offsets = vec![0, -1, 3];
        assert!(b.run(&rows, &[1], 2, Match::Any).is_err());
        // A position outside the tenant's rows, on every path (dense, sparse, intersection).
        for how in [Match::Any, Match::All] {
            for n_rows in [1, 1000] {
                let b = Built {
                    positions: vec![0, 5000],
                    scores: vec![1.0, 1.0],
                    terms: vec![1],
                    offsets: vec![0, 2],
                };
                let rows: Vec<i64> = (0..n_rows).collect();
                let err = b.run(&rows, &[1], 2, how).unwrap_err();
                assert_eq!(
                    err.to_string(),
                    format!(
                        "postings row 1: positions = 5000 is outside the tenant's {n_rows} rows"
                    )
                );
            }
        }
    }

    #[test]
    fn gallop_finds_the_lower_bound() {
        let v = [1, 3, 3, 5, 8, 13, 21, 34, 55];
        for from in 0..=v.len() {
            for target in 0..60 {
                let want = from + v[from..].partition_point(|&x| x < target);
                assert_eq!(gallop(&v, from, target), want, "{from} {target}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every path (dense, sparse, intersection) equals the obvious per-row sum in phrase
        /// order and a full sort, bit for bit.
        #[test]
        fn equals_the_obvious_form(
            docs in prop::collection::vec(prop::collection::vec(0i64..8, 0..6), 0..80),
            q in prop::collection::vec(-1i64..9, 0..6),
            k in 0usize..30,
            all in any::<bool>(),
        ) {
            let b = index_of(&docs, weight);
            let rows: Vec<i64> = (0..docs.len() as i64).map(|r| 3 * r + 1).collect();
            let how = if all { Match::All } else { Match::Any };
            let (r, s) = b.run(&rows, &q, k, how).unwrap();
            let want: Vec<(i64, f64)> = reference(&b, docs.len(), &q, k, how)
                .into_iter()
                .map(|(row, s)| (3 * row + 1, s))
                .collect();
            let got: Vec<(i64, f64)> = r.into_iter().zip(s).collect();
            prop_assert_eq!(&got, &want);
            // The sparse path gives the dense path's answer: pad the tenant with empty rows
            // so that the postings fall below the dense threshold.
            if !all {
                let n_pad = (b.positions.len() + 1) * DENSE_FACTOR + docs.len();
                let rows_pad: Vec<i64> = (0..n_pad as i64).map(|r| 3 * r + 1).collect();
                let (r2, s2) = b.run(&rows_pad, &q, k, how).unwrap();
                let got2: Vec<(i64, f64)> = r2.into_iter().zip(s2).collect();
                prop_assert_eq!(&got2, &want);
            }
        }
    }
}
