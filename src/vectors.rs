//! Sketch vector search: binary sign codes, a Hamming scan, an exact cosine rerank.
//! Pyo3-free, numbers only.
//!
//! One *part* (a tenant's rows) is `n` unit vectors of dimension `dim` stored row-major in
//! `f32`, a `centre` (the mean of the part's rows) and one sign code per row: bit `j` of
//! word `w` is set when `vector[64 w + j] - centre[64 w + j] > 0` (unused bits of the last
//! word are 0), `words = ceil(dim / 64)` `u64` per row, rows contiguous.
//!
//! A query is centred and signed the same way; the `rerank` rows whose codes are nearest in
//! Hamming distance (ties by position) are re-scored with the exact `f32` dot product and the
//! best `k` returned, best first, ties by position ascending. With `rerank >= n` the scan is
//! skipped and every row is scored: the result is the exact top `k`. A part's search reads
//! only its own codes and vectors, so tenant isolation holds by construction.
//!
//! # Determinism
//! Scores are one fixed-order `f32` dot product (16 lanes, then a fixed reduction), so a row
//! scores the same whatever the batch, the thread or the candidate set. `-0.0` and `0.0`
//! compare equal (then tie by position).

use std::cmp::Ordering;

use rayon::prelude::*;

use crate::{Error, Result};

/// Bits per code word.
pub const WORD_BITS: usize = 64;

/// Code words per row for vectors of dimension `dim`.
pub fn words_for(dim: usize) -> usize {
    dim.div_ceil(WORD_BITS)
}

/// Top-k results of a batch of queries: query `i` owns entries `i * k .. (i + 1) * k` of
/// `positions` (part positions, best first, padded with -1) and `scores` (padded with NaN),
/// and `counts[i]` of them are filled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SketchMatches {
    pub positions: Vec<i64>,
    pub scores: Vec<f32>,
    pub counts: Vec<i64>,
}

/// Checks the shapes of a part: `vectors` holds `n * dim` finite-length rows, `codes`
/// `n * words_for(dim)` words, `centre` `dim` values. Returns `n`.
fn part_rows(vectors: &[f32], codes: Option<&[u64]>, centre: &[f32], dim: usize) -> Result<usize> {
    if dim == 0 {
        return Err(Error::param("dim", "the vectors have dimension 0"));
    }
    if vectors.len() % dim != 0 {
        return Err(Error::param(
            "vectors",
            format!(
                "{} values are not whole rows of dimension {dim}",
                vectors.len()
            ),
        ));
    }
    let n = vectors.len() / dim;
    if centre.len() != dim {
        return Err(Error::LengthMismatch {
            table: "sketch",
            column: "centre",
            expected: dim,
            got: centre.len(),
        });
    }
    if let Some(codes) = codes {
        let expected = n * words_for(dim);
        if codes.len() != expected {
            return Err(Error::LengthMismatch {
                table: "sketch",
                column: "codes",
                expected,
                got: codes.len(),
            });
        }
    }
    Ok(n)
}

/// Writes the sign code of `v - centre` into `out` (`words_for(v.len())` words).
fn sign_code(v: &[f32], centre: &[f32], out: &mut [u64]) {
    out.fill(0);
    for (w, (vs, cs)) in out
        .iter_mut()
        .zip(v.chunks(WORD_BITS).zip(centre.chunks(WORD_BITS)))
    {
        let mut word = 0u64;
        for (j, (x, c)) in vs.iter().zip(cs).enumerate() {
            word |= u64::from(x - c > 0.0) << j;
        }
        *w = word;
    }
}

/// The sign codes of `vectors` (`n * dim` row-major) around `centre` (`dim`):
/// `n * words_for(dim)` words, row after row.
///
/// # Errors
/// [`Error::InvalidParameter`] / [`Error::LengthMismatch`] for inconsistent shapes.
pub fn sketch_codes(vectors: &[f32], centre: &[f32], dim: usize) -> Result<Vec<u64>> {
    let n = part_rows(vectors, None, centre, dim)?;
    let words = words_for(dim);
    let mut codes = vec![0u64; n * words];
    let work = |(v, out): (&[f32], &mut [u64])| sign_code(v, centre, out);
    if n * dim > 1 << 20 {
        vectors
            .par_chunks(dim)
            .zip(codes.par_chunks_mut(words))
            .for_each(work);
    } else {
        vectors
            .chunks(dim)
            .zip(codes.chunks_mut(words))
            .for_each(work);
    }
    Ok(codes)
}

/// Lanes of the dot product's partial sums.
const LANES: usize = 8;

/// `R` dot products of `q` with `rows` (each `q.len()` long), interleaved so that the loads
/// of `R` rows are in flight at once (rows come from scattered places in memory). Each is
/// computed in one fixed order: [`LANES`] lane sums, then a fixed pairwise reduction, so a
/// row's score never depends on which rows it was computed with.
#[inline]
fn dot_many<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
    let mut acc = [[0f32; LANES]; R];
    let chunks = q.len() / LANES;
    for c in 0..chunks {
        let lo = c * LANES;
        let qc = &q[lo..lo + LANES];
        for (a, row) in acc.iter_mut().zip(rows.iter()) {
            let rc = &row[lo..lo + LANES];
            for i in 0..LANES {
                a[i] += qc[i] * rc[i];
            }
        }
    }
    let lo = chunks * LANES;
    for (a, row) in acc.iter_mut().zip(rows.iter()) {
        for (i, (x, y)) in q[lo..].iter().zip(&row[lo..]).enumerate() {
            a[i] += x * y;
        }
    }
    let mut out = [0f32; R];
    for (o, a) in out.iter_mut().zip(acc.iter_mut()) {
        let mut width = LANES / 2;
        while width > 0 {
            for i in 0..width {
                a[i] += a[i + width];
            }
            width /= 2;
        }
        *o = a[0];
    }
    out
}

/// `f32` dot product in the fixed order of [`dot_many`].
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    dot_many::<1>(&a[..n], [&b[..n]])[0]
}

/// Scores the rows at `positions` against `q` into `out` as `(score, position)`.
fn score_rows(
    q: &[f32],
    vectors: &[f32],
    dim: usize,
    positions: &[u32],
    out: &mut Vec<(f32, u32)>,
) {
    let row = |p: u32| &vectors[p as usize * dim..(p as usize + 1) * dim];
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
fn scan_fixed<const N: usize>(codes: &[u64], q: &[u64], dist: &mut [u32], hist: &mut [u32]) {
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

fn scan(codes: &[u64], q: &[u64], dist: &mut [u32], hist: &mut [u32]) {
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

/// Best first: score descending, then position ascending (`-0.0 == 0.0`).
fn better(a: &(f32, u32), b: &(f32, u32)) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then(a.1.cmp(&b.1))
}

/// Reusable per-thread buffers of one query.
#[derive(Default)]
struct Scratch {
    code: Vec<u64>,
    dist: Vec<u32>,
    hist: Vec<u32>,
    idx: Vec<u32>,
    cand: Vec<(f32, u32)>,
}

/// One query: writes up to `k` results into `pos` / `score` (length `k`, pre-padded) and
/// returns how many.
#[allow(clippy::too_many_arguments)]
fn search_one(
    codes: &[u64],
    vectors: &[f32],
    centre: &[f32],
    dim: usize,
    query: &[f32],
    rerank: usize,
    s: &mut Scratch,
    pos: &mut [i64],
    score: &mut [f32],
) -> usize {
    let n = vectors.len() / dim;
    let k = pos.len();
    s.cand.clear();
    s.idx.clear();
    if rerank >= n {
        s.idx.extend(0..n as u32);
    } else {
        let words = words_for(dim);
        s.code.resize(words, 0);
        sign_code(query, centre, &mut s.code);
        s.dist.resize(n, 0);
        s.hist.clear();
        s.hist.resize(words * WORD_BITS + 1, 0);
        scan(codes, &s.code, &mut s.dist, &mut s.hist);
        // The smallest distance `t` with at least `rerank` rows at or below it: every row
        // below `t` is kept, and rows at `t` by position until `rerank` are taken.
        let mut below = 0usize;
        let mut t = 0usize;
        for (d, &c) in s.hist.iter().enumerate() {
            if below + c as usize >= rerank {
                t = d;
                break;
            }
            below += c as usize;
        }
        let mut at_t = rerank - below;
        let t = t as u32;
        for (i, &d) in (0u32..).zip(s.dist.iter()) {
            let keep = d < t || (d == t && at_t > 0);
            if keep {
                if d == t {
                    at_t -= 1;
                }
                s.idx.push(i);
            }
        }
    }
    score_rows(query, vectors, dim, &s.idx, &mut s.cand);
    let width = k.min(s.cand.len());
    if width < s.cand.len() {
        s.cand.select_nth_unstable_by(width - 1, better);
        s.cand.truncate(width);
    }
    s.cand.sort_unstable_by(better);
    for (j, &(sc, i)) in s.cand.iter().enumerate() {
        pos[j] = i64::from(i);
        score[j] = sc;
    }
    width
}

/// Top `k` rows of one part for each query (see the module docs).
///
/// `codes` (`n * words_for(dim)`), `vectors` (`n * dim`, unit rows) and `centre` (`dim`) are
/// the part; `queries` (`q * dim`) are unit vectors; `rerank` rows are re-scored exactly per
/// query. Batches of several queries run in parallel across queries.
///
/// # Errors
/// [`Error::InvalidParameter`] for `k == 0`, `rerank == 0` or inconsistent shapes,
/// [`Error::LengthMismatch`] for codes or centre of the wrong length, [`Error::Capacity`]
/// for parts of more than `u32::MAX` rows.
pub fn sketch_search(
    codes: &[u64],
    vectors: &[f32],
    centre: &[f32],
    dim: usize,
    queries: &[f32],
    k: usize,
    rerank: usize,
) -> Result<SketchMatches> {
    let n = part_rows(vectors, Some(codes), centre, dim)?;
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
    if queries.len() % dim != 0 {
        return Err(Error::param(
            "queries",
            format!(
                "{} values are not whole queries of dimension {dim}",
                queries.len()
            ),
        ));
    }
    let nq = queries.len() / dim;
    let cells = nq.checked_mul(k).ok_or(Error::Capacity {
        what: "queries x k",
        value: usize::MAX,
        limit: isize::MAX as usize,
    })?;
    let mut out = SketchMatches {
        positions: vec![-1; cells],
        scores: vec![f32::NAN; cells],
        counts: vec![0; nq],
    };
    if n == 0 || nq == 0 {
        return Ok(out);
    }
    let rerank = rerank.max(k);
    let one = |s: &mut Scratch, q: &[f32], p: &mut [i64], sc: &mut [f32], c: &mut i64| {
        *c = search_one(codes, vectors, centre, dim, q, rerank, s, p, sc) as i64;
    };
    if nq == 1 {
        let mut s = Scratch::default();
        one(
            &mut s,
            queries,
            &mut out.positions,
            &mut out.scores,
            &mut out.counts[0],
        );
    } else {
        queries
            .par_chunks(dim)
            .zip(out.positions.par_chunks_mut(k))
            .zip(out.scores.par_chunks_mut(k))
            .zip(out.counts.par_iter_mut())
            .for_each_init(Scratch::default, |s, (((q, p), sc), c)| one(s, q, p, sc, c));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The obvious exact top-k: every row scored with [`dot`], sorted by (score desc, row).
    fn exact(vectors: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<(f32, u32)> {
        let mut all: Vec<(f32, u32)> = vectors
            .chunks_exact(dim)
            .zip(0u32..)
            .map(|(v, i)| (dot(q, v), i))
            .collect();
        all.sort_by(better);
        all.truncate(k);
        all
    }

    fn unit_rows(raw: &[f32], dim: usize) -> Vec<f32> {
        let mut out = raw.to_vec();
        for row in out.chunks_exact_mut(dim) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            row.iter_mut().for_each(|x| *x /= norm);
        }
        out
    }

    fn mean(vectors: &[f32], dim: usize) -> Vec<f32> {
        let n = (vectors.len() / dim).max(1) as f32;
        let mut c = vec![0f32; dim];
        for row in vectors.chunks_exact(dim) {
            c.iter_mut().zip(row).for_each(|(a, b)| *a += b);
        }
        c.iter_mut().for_each(|a| *a /= n);
        c
    }

    fn run(v: &[f32], dim: usize, q: &[f32], k: usize, rerank: usize) -> SketchMatches {
        let centre = mean(v, dim);
        let codes = sketch_codes(v, &centre, dim).unwrap();
        sketch_search(&codes, v, &centre, dim, q, k, rerank).unwrap()
    }

    #[test]
    fn codes_are_signs_of_centred_values() {
        let v = [1.0, -2.0, 3.0, 0.0, 0.5, 0.5];
        let codes = sketch_codes(&v, &[0.0, 0.0, 1.0], 3).unwrap();
        assert_eq!(codes, vec![0b101, 0b010]);
        let wide: Vec<f32> = (0..130)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let codes = sketch_codes(&wide, &[0.0; 130], 130).unwrap();
        assert_eq!(codes.len(), 3);
        assert_eq!(codes[0], 0x5555_5555_5555_5555);
        assert_eq!(codes[2], 0b01);
    }

    #[test]
    fn dot_matches_naive_sum_closely() {
        let a: Vec<f32> = (0..37).map(|i| (i as f32).sin()).collect();
        let b: Vec<f32> = (0..37).map(|i| (i as f32 * 0.3).cos()).collect();
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
        assert!((f64::from(dot(&a, &b)) - naive).abs() < 1e-5);
    }

    #[test]
    fn padding_ties_and_k_beyond_size() {
        // Rows 0 and 2 are the same vector: a tie broken by position.
        let v = unit_rows(&[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, -1.0, 0.0], 2);
        let m = run(&v, 2, &[1.0, 0.0], 6, 100);
        assert_eq!(m.counts, vec![4]);
        assert_eq!(&m.positions[..4], &[0, 2, 1, 3]);
        assert_eq!(&m.positions[4..], &[-1, -1]);
        assert!(m.scores[4].is_nan() && m.scores[5].is_nan());
        assert_eq!(m.scores[0], 1.0);
    }

    #[test]
    fn empty_part_and_empty_batch() {
        let m = sketch_search(&[], &[], &[0.0, 0.0], 2, &[1.0, 0.0], 3, 8).unwrap();
        assert_eq!(m.counts, vec![0]);
        assert_eq!(m.positions, vec![-1; 3]);
        let v = unit_rows(&[1.0, 0.0], 2);
        let m = run(&v, 2, &[], 3, 8);
        assert!(m.counts.is_empty() && m.positions.is_empty());
    }

    #[test]
    fn errors_not_panics() {
        let v = [1.0f32, 0.0];
        let c = [0.0f32, 0.0];
        let codes = sketch_codes(&v, &c, 2).unwrap();
        assert!(sketch_search(&codes, &v, &c, 2, &[1.0, 0.0], 0, 4).is_err());
        assert!(sketch_search(&codes, &v, &c, 2, &[1.0, 0.0], 1, 0).is_err());
        assert!(sketch_search(&codes, &v, &c, 2, &[1.0], 1, 4).is_err());
        assert!(sketch_search(&[], &v, &c, 2, &[1.0, 0.0], 1, 4).is_err());
        assert!(sketch_search(&codes, &v, &[0.0], 2, &[1.0, 0.0], 1, 4).is_err());
        assert!(sketch_search(&codes, &v, &c, 0, &[1.0, 0.0], 1, 4).is_err());
        assert!(sketch_codes(&[1.0, 2.0, 3.0], &c, 2).is_err());
    }

    #[test]
    fn scan_keeps_the_nearest_codes() {
        // 200 rows: the query equals row 123; with rerank 1 only Hamming distance 0 rows
        // (row 123 and any other row with its exact code) can be returned.
        let dim = 64;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let raw: Vec<f32> = (0..200 * dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect();
        let v = unit_rows(&raw, dim);
        let q = v[123 * dim..124 * dim].to_vec();
        let m = run(&v, dim, &q, 1, 1);
        assert_eq!(m.positions, vec![123]);
    }

    fn part() -> impl Strategy<Value = (usize, Vec<f32>, Vec<f32>)> {
        (1usize..80, 1usize..40, 1usize..4).prop_flat_map(|(dim, n, q)| {
            (
                Just(dim),
                // Small integer grids make exact score ties likely.
                prop::collection::vec((-3i8..=3).prop_map(f32::from), n * dim),
                prop::collection::vec((-3i8..=3).prop_map(f32::from), q * dim),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// With `rerank >= n` the result is the exact top-k, ties by row, bit for bit.
        #[test]
        fn full_rerank_is_exact((dim, raw, qraw) in part(), k in 1usize..50, extra in 0usize..5) {
            let v: Vec<f32> = raw.chunks_exact(dim).flat_map(|r| {
                if r.iter().all(|x| *x == 0.0) { let mut r = r.to_vec(); r[0] = 1.0; r } else { r.to_vec() }
            }).collect();
            let n = v.len() / dim;
            let m = run(&v, dim, &qraw, k, n + extra);
            for (i, q) in qraw.chunks_exact(dim).enumerate() {
                let want = exact(&v, dim, q, k);
                prop_assert_eq!(m.counts[i] as usize, want.len());
                for (j, (s, r)) in want.iter().enumerate() {
                    prop_assert_eq!(m.positions[i * k + j], i64::from(*r));
                    prop_assert_eq!(m.scores[i * k + j].to_bits(), s.to_bits());
                }
                for j in want.len()..k {
                    prop_assert_eq!(m.positions[i * k + j], -1);
                    prop_assert!(m.scores[i * k + j].is_nan());
                }
            }
        }

        /// Any rerank: results are distinct rows, sorted best first (ties by row), each with
        /// its exact score, and a batch answers as its queries one by one.
        #[test]
        fn partial_rerank_is_consistent((dim, raw, qraw) in part(), k in 1usize..20, rerank in 1usize..30) {
            let n = raw.len() / dim;
            let m = run(&raw, dim, &qraw, k, rerank);
            for (i, q) in qraw.chunks_exact(dim).enumerate() {
                let c = m.counts[i] as usize;
                prop_assert_eq!(c, k.min(n));
                let got: Vec<(f32, u32)> = (0..c)
                    .map(|j| (m.scores[i * k + j], m.positions[i * k + j] as u32))
                    .collect();
                for w in got.windows(2) {
                    prop_assert_eq!(better(&w[0], &w[1]), Ordering::Less);
                }
                for (s, r) in &got {
                    let r = *r as usize;
                    prop_assert_eq!(s.to_bits(), dot(q, &raw[r * dim..(r + 1) * dim]).to_bits());
                }
                let single = run(&raw, dim, q, k, rerank);
                prop_assert_eq!(&single.positions[..], &m.positions[i * k..(i + 1) * k]);
            }
        }
    }
}
