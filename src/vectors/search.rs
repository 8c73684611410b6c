//! The search itself: Hamming scan, 4-bit rescore, exact rerank, top `k`; and the exact
//! search over every row.

use std::cmp::Ordering;

use rayon::prelude::*;

use super::codes::*;
use super::part::*;
use super::quant::*;
use super::simd::*;
use crate::{Error, Result};

/// Top-k results of a batch of queries: query `i` owns entries `i * k .. (i + 1) * k` of
/// `positions` (part positions, best first, padded with -1) and `scores` (padded with NaN),
/// and `counts[i]` of them are filled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SketchMatches {
    pub positions: Vec<i64>,
    pub scores: Vec<f32>,
    pub counts: Vec<i64>,
}

impl SketchMatches {
    /// `k` padded result slots (-1, NaN) for each of `nq` queries and zero counts; an
    /// error instead of an abort when the memory cannot be had (an absurd `k` through the
    /// bindings).
    fn padded(nq: usize, k: usize) -> Result<Self> {
        let cells = nq.checked_mul(k).ok_or(Error::Capacity {
            what: "queries x k",
            value: usize::MAX,
            limit: isize::MAX as usize,
        })?;
        let too_big = || {
            Error::param(
                "k",
                format!("{cells} result cells (queries x k) cannot be allocated"),
            )
        };
        let mut positions = Vec::new();
        positions.try_reserve_exact(cells).map_err(|_| too_big())?;
        positions.resize(cells, -1);
        let mut scores = Vec::new();
        scores.try_reserve_exact(cells).map_err(|_| too_big())?;
        scores.resize(cells, f32::NAN);
        Ok(Self {
            positions,
            scores,
            counts: vec![0; nq],
        })
    }

    /// Fills every query's `k` slots with `one(scratch, query, positions, scores)`, which
    /// returns how many it found: a batch of fewer than `parallel_from` queries one after
    /// the other on this thread with one scratch, a bigger one in parallel across queries
    /// with one scratch per worker.
    fn fill<S: Default + Send>(
        &mut self,
        queries: &[f32],
        dim: usize,
        k: usize,
        parallel_from: usize,
        one: impl Fn(&mut S, &[f32], &mut [i64], &mut [f32]) -> usize + Sync,
    ) {
        if self.counts.len() < parallel_from.max(2) {
            let mut s = S::default();
            let slots = self.positions.chunks_mut(k).zip(self.scores.chunks_mut(k));
            for ((q, (p, sc)), c) in queries.chunks(dim).zip(slots).zip(&mut self.counts) {
                *c = one(&mut s, q, p, sc) as i64;
            }
        } else {
            queries
                .par_chunks(dim)
                .zip(self.positions.par_chunks_mut(k))
                .zip(self.scores.par_chunks_mut(k))
                .zip(self.counts.par_iter_mut())
                .for_each_init(S::default, |s, (((q, p), sc), c)| {
                    *c = one(s, q, p, sc) as i64
                });
        }
    }
}

/// The fewest queries of a sketch search that run in parallel. Waking the pool and its
/// idle spinning cost ~70 us of CPU per call, most of a sketch query's ~90 us: smaller
/// batches (a service's coalesced queries) cost less CPU one after the other, bigger ones
/// gain the cores.
pub const SKETCH_PARALLEL_FROM: usize = 8;

/// Reads one byte of every 64-byte line of each row at `positions` (and its last byte: a
/// row need not start on a line), so that the lines are on their way from memory before
/// they are scored: a portable, safe prefetch. The rows are scattered, so their cache
/// misses must overlap; a loop of loads alone, with no arithmetic waiting on them, lets the
/// processor keep as many in flight as it can track.
#[inline]
pub(super) fn touch(rows: &[u8], width: usize, positions: &[u32]) {
    let mut sink = 0u8;
    for &p in positions {
        let row = &rows[p as usize * width..(p as usize + 1) * width];
        sink ^= row.iter().step_by(64).fold(0, |a, x| a ^ x);
        sink ^= row.last().copied().unwrap_or(0);
    }
    std::hint::black_box(sink);
}

/// [`touch`] for `f32` rows of `dim` values (16 to a line).
#[inline]
pub(super) fn touch_f32(rows: &[f32], dim: usize, positions: &[u32]) {
    let mut sink = 0u32;
    for &p in positions {
        let row = &rows[p as usize * dim..(p as usize + 1) * dim];
        sink ^= row.iter().step_by(16).fold(0, |a, x| a ^ x.to_bits());
        sink ^= row.last().map_or(0, |x| x.to_bits());
    }
    std::hint::black_box(sink);
}

/// Approximate 4-bit scores of the rows at `positions` into `out` as `(score, position)`,
/// after touching every row first: the cache misses of scattered rows overlap, which beats
/// both scoring with no touching and touching a few rows ahead of the scoring.
pub(super) fn score_rows4(q: &Query4, int4: &[u8], positions: &[u32], out: &mut Vec<(i32, u32)>) {
    let width = q.width();
    touch(int4, width, positions);
    out.extend(positions.iter().map(|&p| {
        (
            dot4(q, &int4[p as usize * width..(p as usize + 1) * width]),
            p,
        )
    }));
}

/// Scores the rows at `positions` against `q` into `out` as `(score, position)`.
pub(super) fn score_rows(
    q: &[f32],
    vectors: &[f32],
    dim: usize,
    positions: &[u32],
    out: &mut Vec<(f32, u32)>,
) {
    let row = |p: u32| &vectors[p as usize * dim..(p as usize + 1) * dim];
    touch_f32(vectors, dim, positions);
    let groups = positions.chunks_exact(4);
    let rest = groups.remainder();
    for g in groups {
        let s = dot_many::<4>(q, [row(g[0]), row(g[1]), row(g[2]), row(g[3])]);
        out.extend(s.iter().copied().zip(g.iter().copied()));
    }
    for &p in rest {
        out.push((dot_many::<1>(q, [row(p)])[0], p));
    }
}

/// Hamming distances of every row code to `q` (`N` words per row) into `dist`, with their
/// histogram (`hist[d]` rows at distance `d`).
#[inline]
pub(super) fn scan_fixed<const N: usize>(
    codes: &[u64],
    q: &[u64],
    dist: &mut [u32],
    hist: &mut [u32],
) {
    let mut qa = [0u64; N];
    qa.copy_from_slice(&q[..N]);
    for (row, d) in codes.chunks_exact(N).zip(dist.iter_mut()) {
        let mut h = 0u32;
        for i in 0..N {
            h += (row[i] ^ qa[i]).count_ones();
        }
        *d = h;
        hist[h as usize] += 1;
    }
}

pub(super) fn scan(codes: &[u64], q: &[u64], dist: &mut [u32], hist: &mut [u32]) {
    match q.len() {
        2 => scan_fixed::<2>(codes, q, dist, hist),
        4 => scan_fixed::<4>(codes, q, dist, hist),
        6 => scan_fixed::<6>(codes, q, dist, hist),
        8 => scan_fixed::<8>(codes, q, dist, hist),
        12 => scan_fixed::<12>(codes, q, dist, hist),
        16 => scan_fixed::<16>(codes, q, dist, hist),
        words => {
            for (row, d) in codes.chunks_exact(words).zip(dist.iter_mut()) {
                let h: u32 = row.iter().zip(q).map(|(a, b)| (a ^ b).count_ones()).sum();
                *d = h;
                hist[h as usize] += 1;
            }
        }
    }
}

/// Set lanes of each 4-bit mask, in order, padded with 0: the packing table of [`nearest`].
const PACK: [[u32; 4]; 16] = {
    let mut t = [[0u32; 4]; 16];
    let mut m = 0;
    while m < 16 {
        let mut n = 0;
        let mut lane = 0;
        while lane < 4 {
            if m & (1 << lane) != 0 {
                t[m][n] = lane as u32;
                n += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// Positions of the `rerank` rows nearest by Hamming distance into `idx`, from their
/// distances and histogram (`rerank` below the row count): every row below the smallest
/// distance `t` with at least `rerank` rows at or below it, and the first rows at `t` by
/// position until `rerank` are taken, in position order.
///
/// The rows at or below `t` are gathered 4 at a time with no branch on the distances
/// (which rows pass is as good as random to a branch predictor): each group's passing
/// positions are written packed and the end advances by their count; the surplus rows at
/// `t`, if any, are then dropped from the end of the few gathered.
pub(super) fn nearest(dist: &[u32], hist: &[u32], rerank: usize, idx: &mut Vec<u32>) {
    let mut below = 0usize;
    let mut t = 0usize;
    for (d, &c) in hist.iter().enumerate() {
        if below + c as usize >= rerank {
            t = d;
            break;
        }
        below += c as usize;
    }
    let at_t = hist.get(t).map_or(0, |&c| c as usize);
    let t = t as u32;
    idx.clear();
    // Room for every row at or below `t` and one group's unused slots.
    idx.resize(below + at_t + 4, 0);
    let mut len = 0usize;
    let groups = dist.chunks_exact(4);
    let rest = groups.remainder();
    let mut base = 0u32;
    for g in groups {
        let m = usize::from(g[0] <= t)
            | usize::from(g[1] <= t) << 1
            | usize::from(g[2] <= t) << 2
            | usize::from(g[3] <= t) << 3;
        if let Some(out) = idx.get_mut(len..len + 4) {
            for (o, &lane) in out.iter_mut().zip(&PACK[m]) {
                *o = base + lane;
            }
        }
        len += m.count_ones() as usize;
        base += 4;
    }
    for &d in rest {
        if d <= t {
            if let Some(o) = idx.get_mut(len) {
                *o = base;
            }
            len += 1;
        }
        base += 1;
    }
    idx.truncate(len.min(idx.len()));
    let surplus = (below + at_t).saturating_sub(rerank);
    if surplus > 0 {
        // Keep the first `at_t - surplus` rows at `t`, every row below it.
        let mut ties = at_t - surplus;
        idx.retain(|&p| {
            let d = dist.get(p as usize).copied().unwrap_or(u32::MAX);
            if d < t {
                true
            } else if ties > 0 {
                ties -= 1;
                true
            } else {
                false
            }
        });
    }
}

/// Best first: score descending, then position ascending (`-0.0 == 0.0`).
pub(super) fn better(a: &(f32, u32), b: &(f32, u32)) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then(a.1.cmp(&b.1))
}

thread_local! {
    /// The scratch of [`sketch_search`]'s small batches on this thread.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Reusable per-thread buffers of one query.
#[derive(Default)]
pub(super) struct Scratch {
    code: Vec<u64>,
    dist: Vec<u32>,
    hist: Vec<u32>,
    idx: Vec<u32>,
    q4: Query4,
    approx: Vec<(i32, u32)>,
    cand: Vec<(f32, u32)>,
}

/// One query: writes up to `k` results into `pos` / `score` (length `k`, pre-padded) and
/// returns how many.
pub(super) fn search_one(
    part: &SketchPart<'_>,
    query: &[f32],
    rerank: usize,
    refine: usize,
    s: &mut Scratch,
    pos: &mut [i64],
    score: &mut [f32],
) -> usize {
    let dim = part.dim;
    let n = part.vectors.len() / dim;
    s.cand.clear();
    s.idx.clear();
    if rerank >= n {
        s.idx.extend(0..n as u32);
    } else {
        let words = words_for(dim);
        s.code.resize(words, 0);
        sign_code(query, part.centre, &mut s.code);
        s.dist.resize(n, 0);
        s.hist.clear();
        s.hist.resize(words * WORD_BITS + 1, 0);
        scan(part.codes, &s.code, &mut s.dist, &mut s.hist);
        nearest(&s.dist, &s.hist, rerank, &mut s.idx);
        if refine < s.idx.len() {
            // The 4-bit stage: keep the `refine` best approximate scores, ties by position.
            quantised_query(query, part.scales, &mut s.q4);
            s.approx.clear();
            score_rows4(&s.q4, part.int4, &s.idx, &mut s.approx);
            s.approx
                .select_nth_unstable_by(refine - 1, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            s.idx.clear();
            s.idx.extend(s.approx[..refine].iter().map(|&(_, p)| p));
        }
    }
    score_rows(query, part.vectors, dim, &s.idx, &mut s.cand);
    take_best(&mut s.cand, pos, score)
}

/// Top `k` rows of one part for each query (see the module docs).
///
/// `queries` (`q * dim`) are unit vectors; `rerank` rows are re-scored with the 4-bit rows
/// and the best `refine` of them exactly, per query (at least `k` are kept at each stage).
/// Batches of [`SKETCH_PARALLEL_FROM`] queries or more run in parallel across queries.
///
/// # Errors
/// [`Error::InvalidParameter`] for `k`, `rerank` or `refine` of 0 or inconsistent shapes,
/// [`Error::LengthMismatch`] for codes, centre, 4-bit rows or scales of the wrong length,
/// [`Error::Capacity`] for parts of more than `u32::MAX` rows.
pub fn sketch_search(
    part: &SketchPart<'_>,
    queries: &[f32],
    k: usize,
    rerank: usize,
    refine: usize,
) -> Result<SketchMatches> {
    let n = part.rows()?;
    let dim = part.dim;
    if n > u32::MAX as usize {
        return Err(Error::Capacity {
            what: "sketch part rows",
            value: n,
            limit: u32::MAX as usize,
        });
    }
    if k == 0 {
        return Err(Error::param("k", "k must be >= 1"));
    }
    if rerank == 0 {
        return Err(Error::param("rerank", "rerank must be >= 1"));
    }
    if refine == 0 {
        return Err(Error::param("refine", "refine must be >= 1"));
    }
    if !queries.len().is_multiple_of(dim) {
        return Err(Error::param(
            "queries",
            format!(
                "{} values are not whole queries of dimension {dim}",
                queries.len()
            ),
        ));
    }
    let nq = queries.len() / dim;
    let mut out = SketchMatches::padded(nq, k)?;
    if n == 0 || nq == 0 {
        return Ok(out);
    }
    let rerank = rerank.max(k);
    let refine = refine.max(k);
    let one = |s: &mut Scratch, q: &[f32], p: &mut [i64], sc: &mut [f32]| {
        search_one(part, q, rerank, refine, s, p, sc)
    };
    if nq < SKETCH_PARALLEL_FROM {
        // This thread's scratch, kept between calls: its buffers (a distance per row) are
        // already the part's size, so a small batch allocates and clears nothing.
        let reused = SCRATCH.with(|cell| {
            let Ok(mut s) = cell.try_borrow_mut() else {
                return false;
            };
            let slots = out.positions.chunks_mut(k).zip(out.scores.chunks_mut(k));
            for ((q, (p, sc)), c) in queries.chunks(dim).zip(slots).zip(&mut out.counts) {
                *c = one(&mut s, q, p, sc) as i64;
            }
            true
        });
        if reused {
            return Ok(out);
        }
    }
    out.fill(queries, dim, k, SKETCH_PARALLEL_FROM, one);
    Ok(out)
}

/// The `k` best of `cand` (by [`better`]) into `pos` / `score` (length `k`, pre-padded),
/// best first; returns how many.
pub(super) fn take_best(cand: &mut Vec<(f32, u32)>, pos: &mut [i64], score: &mut [f32]) -> usize {
    let width = pos.len().min(cand.len());
    if width == 0 {
        return 0;
    }
    if width < cand.len() {
        cand.select_nth_unstable_by(width - 1, better);
        cand.truncate(width);
    }
    cand.sort_unstable_by(better);
    for (j, &(sc, i)) in cand.iter().enumerate() {
        pos[j] = i64::from(i);
        score[j] = sc;
    }
    width
}

/// Exact top `k` rows of `vectors` (`n * dim`, row-major) by dot product with each query
/// (`queries`: `q * dim`), over every row or only over `positions` (row indices, each below
/// `n`; repeats are scored once each time they appear): best first, ties by row, with the
/// dot product of [`dot`] (a fixed order of `f32` operations, so a row's score never
/// depends on the other rows or on the batch).
///
/// One thread per query, batches in parallel across queries: unlike a BLAS matrix-vector
/// product, a single query never starts threads, so its latency does not depend on what
/// else runs on the machine (a threaded BLAS `sgemv` has a long latency tail when another
/// process is busy).
///
/// # Errors
/// [`Error::InvalidParameter`] for `dim` or `k` of 0, vectors or queries that are not whole
/// rows, and positions out of range; [`Error::Capacity`] beyond `u32::MAX` rows.
///
/// # Examples
/// ```
/// use graphrecall::vectors::exact_search;
///
/// // Three unit rows of dimension 2; the query is nearest row 1, then row 2.
/// let rows = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8];
/// let found = exact_search(&rows, 2, &[0.0, 1.0], 2, None)?;
/// assert_eq!(found.positions, vec![1, 2]);
/// assert_eq!(found.scores, vec![1.0, 0.8]);
/// assert_eq!(found.counts, vec![2]);
/// # Ok::<(), graphrecall::Error>(())
/// ```
pub fn exact_search(
    vectors: &[f32],
    dim: usize,
    queries: &[f32],
    k: usize,
    positions: Option<&[u32]>,
) -> Result<SketchMatches> {
    if dim == 0 {
        return Err(Error::param("dim", "dim must be >= 1"));
    }
    if k == 0 {
        return Err(Error::param("k", "k must be >= 1"));
    }
    for (name, len) in [("vectors", vectors.len()), ("queries", queries.len())] {
        if len % dim != 0 {
            return Err(Error::param(
                name,
                format!("{len} values are not whole rows of dimension {dim}"),
            ));
        }
    }
    let n = vectors.len() / dim;
    if n > u32::MAX as usize {
        return Err(Error::Capacity {
            what: "exact search rows",
            value: n,
            limit: u32::MAX as usize,
        });
    }
    if let Some(bad) = positions.and_then(|ps| ps.iter().find(|&&p| p as usize >= n)) {
        return Err(Error::param(
            "positions",
            format!("position {bad} is out of range for {n} rows"),
        ));
    }
    let nq = queries.len() / dim;
    let mut out = SketchMatches::padded(nq, k)?;
    out.fill(
        queries,
        dim,
        k,
        2,
        |cand: &mut Vec<(f32, u32)>, q, p, sc| {
            cand.clear();
            match positions {
                Some(ps) => score_rows(q, vectors, dim, ps, cand),
                // Every row, in memory order (the hardware prefetcher streams them), four at
                // a time so that four sums are in flight.
                None => {
                    let fours = vectors.chunks_exact(4 * dim);
                    let rest = fours.remainder();
                    let mut i = 0u32;
                    for f in fours {
                        let (r0, r1) = f.split_at(dim);
                        let (r1, r2) = r1.split_at(dim);
                        let (r2, r3) = r2.split_at(dim);
                        let s = dot_many::<4>(q, [r0, r1, r2, r3]);
                        cand.extend(s.iter().copied().zip(i..));
                        i += 4;
                    }
                    for row in rest.chunks_exact(dim) {
                        cand.push((dot(q, row), i));
                        i += 1;
                    }
                }
            }
            take_best(cand, p, sc)
        },
    );
    Ok(out)
}
