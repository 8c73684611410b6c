//! Sketch vector search: binary sign codes, a Hamming scan, a 4-bit rescore, an exact
//! cosine rerank. Pyo3-free, numbers only.
//!
//! One *part* (a tenant's rows, [`SketchPart`]) is `n` unit vectors of dimension `dim`
//! stored row-major in `f32`, a `centre` (the mean of the part's rows), one sign code per
//! row: bit `j` of word `w` is set when `vector[64 w + j] - centre[64 w + j] > 0` (unused
//! bits of the last word are 0), `words = ceil(dim / 64)` `u64` per row, rows contiguous;
//! and the centred rows quantised to 4 bits with one scale per dimension (see
//! [`sketch_int4`]), [`int4_bytes`]`(dim)` bytes per row, rows contiguous.
//!
//! A query is centred and signed the same way; the `rerank` rows whose codes are nearest in
//! Hamming distance (ties by position) are re-scored approximately with the 4-bit rows
//! (an integer dot product with the query quantised to `-127..=127`, an eighth of the `f32`
//! rows' memory traffic), the best `refine` of those (ties by position) are re-scored with
//! the exact `f32` dot product and the best `k` returned, best first, ties by position
//! ascending. With `refine >= rerank` the 4-bit stage is skipped; with `rerank >= n` the
//! scan and the 4-bit stage are skipped and every row is scored: the result is the exact
//! top `k`.
//! A part's search reads only its own arrays, so tenant isolation holds by construction.
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
    /// returns how many it found: a single query on this thread, a batch in parallel
    /// across queries with one scratch per worker.
    fn fill<S: Default + Send>(
        &mut self,
        queries: &[f32],
        dim: usize,
        k: usize,
        one: impl Fn(&mut S, &[f32], &mut [i64], &mut [f32]) -> usize + Sync,
    ) {
        if self.counts.len() == 1 {
            self.counts[0] = one(
                &mut S::default(),
                queries,
                &mut self.positions,
                &mut self.scores,
            ) as i64;
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

/// One part's arrays (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct SketchPart<'a> {
    /// Sign codes, `n * words_for(dim)` words.
    pub codes: &'a [u64],
    /// Unit rows, `n * dim` values.
    pub vectors: &'a [f32],
    /// The centre the codes and the 4-bit rows were made around, `dim` values.
    pub centre: &'a [f32],
    /// Centred rows quantised to 4 bits by [`sketch_int4`], `n * int4_bytes(dim)` bytes.
    pub int4: &'a [u8],
    /// The per-dimension scales of `int4`, `dim` values.
    pub scales: &'a [f32],
    /// The dimension.
    pub dim: usize,
}

impl SketchPart<'_> {
    /// Checks the shapes of every array. Returns `n`.
    fn rows(&self) -> Result<usize> {
        let n = part_rows(self.vectors, Some(self.codes), self.centre, self.dim)?;
        for (column, got, expected) in [
            ("int4", self.int4.len(), n * int4_bytes(self.dim)),
            ("scales", self.scales.len(), self.dim),
        ] {
            if got != expected {
                return Err(Error::LengthMismatch {
                    table: "sketch",
                    column,
                    expected,
                    got,
                });
            }
        }
        Ok(n)
    }
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

/// Largest magnitude of a 4-bit value: symmetric, so `-x` is always representable.
const INT4_MAX: f32 = 7.0;
/// Largest magnitude of the quantised query of the 4-bit stage.
const QUERY_MAX: f32 = 127.0;
/// The stored nibble of the value 0: values `-7..=7` are stored as `1..=15`.
const NIBBLE_ZERO: u8 = 8;

/// Bytes of a 4-bit row of dimension `dim`: two dimensions per byte.
pub fn int4_bytes(dim: usize) -> usize {
    dim.div_ceil(2)
}

/// `x / scale` rounded to the nearest integer and clamped to `-max..=max` (0 for a zero,
/// NaN or infinite scale).
#[inline]
fn quantise(x: f32, inv_scale: f32, max: f32) -> i16 {
    // `as` saturates and maps NaN to 0; the clamp keeps the range symmetric.
    (x * inv_scale).round().clamp(-max, max) as i16
}

/// `1 / scale`, or 0 where the scale is 0 or not finite (a constant dimension).
#[inline]
fn inverse(scale: f32) -> f32 {
    if scale > 0.0 && scale.is_finite() {
        1.0 / scale
    } else {
        0.0
    }
}

/// The 4-bit rows of a part: `vectors - centre` quantised with one scale per dimension,
/// `scales[j] = max_i |vectors[i, j] - centre[j]| / 7` (so every value fits), each value
/// `round((v - c) / scale)` in `-7..=7` stored as the nibble `value + 8`. Row `i` is
/// [`int4_bytes`]`(dim)` bytes; with `h = int4_bytes(dim)`, byte `j` holds dimension `j`
/// in its low nibble and dimension `j + h` in its high nibble (8, the value 0, past `dim`),
/// so that a query's two halves meet the low and the high nibbles of a run of bytes.
/// Returns `(int4, scales)`: `n * h` bytes row after row and `dim` scales.
///
/// Per-dimension scales make the most of the 4 bits where dimensions have different
/// spreads (text embeddings do); the query folds them in (see [`quantised_query`]).
///
/// # Errors
/// [`Error::InvalidParameter`] / [`Error::LengthMismatch`] for inconsistent shapes.
pub fn sketch_int4(vectors: &[f32], centre: &[f32], dim: usize) -> Result<(Vec<u8>, Vec<f32>)> {
    let n = part_rows(vectors, None, centre, dim)?;
    let mut scales = vec![0f32; dim];
    for row in vectors.chunks_exact(dim) {
        for ((m, x), c) in scales.iter_mut().zip(row).zip(centre) {
            let a = (x - c).abs();
            if a > *m {
                *m = a;
            }
        }
    }
    scales.iter_mut().for_each(|m| *m /= INT4_MAX);
    let inv: Vec<f32> = scales.iter().map(|&s| inverse(s)).collect();
    let h = int4_bytes(dim);
    let mut int4 = vec![0u8; n * h];
    let nibble = |v: &[f32], j: usize| -> u8 {
        match v.get(j) {
            // In -7..=7, so the sum is in 1..=15.
            Some(x) => (quantise(x - centre[j], inv[j], INT4_MAX) + i16::from(NIBBLE_ZERO)) as u8,
            None => NIBBLE_ZERO,
        }
    };
    let work = |(v, out): (&[f32], &mut [u8])| {
        for (j, o) in out.iter_mut().enumerate() {
            *o = nibble(v, j) | (nibble(v, j + h) << 4);
        }
    };
    if n * dim > 1 << 20 {
        vectors
            .par_chunks(dim)
            .zip(int4.par_chunks_mut(h))
            .for_each(work);
    } else {
        vectors.chunks(dim).zip(int4.chunks_mut(h)).for_each(work);
    }
    Ok((int4, scales))
}

/// The query of the 4-bit stage: `q[j] * scales[j]` quantised to `-127..=127` with one
/// scale, laid out as the nibbles are: `2 h` values (`h = int4_bytes(dim)`), dimension `j`
/// at `j` and dimension `j + h` at `h + j`, 0 past `dim`. Then
/// `sum_j wide[j] * (nibble[i, j] - 8)` is proportional (up to rounding) to
/// `q . (vectors[i] - centre)`, which ranks rows as `q . vectors[i]` does; the `- 8` adds
/// the same `-8 sum_j wide[j]` to every row, so rows are ranked by
/// `sum_j wide[j] * nibble[i, j]` alone.
#[derive(Default)]
struct Query4 {
    /// The `2 h` values as `i16` (the portable dot product and every row's tail).
    wide: Vec<i16>,
    /// The same values as `i8` in 16-byte blocks, for the multiply-add of unsigned nibbles
    /// by signed bytes: the `h / 16` blocks of the low half, then those of the high half
    /// (the last `h % 16` of each half are only in `wide`).
    blocks: Vec<[i8; STEP4]>,
}

impl Query4 {
    /// Bytes of the rows this query scores.
    fn width(&self) -> usize {
        self.wide.len() / 2
    }
}

fn quantised_query(q: &[f32], scales: &[f32], out: &mut Query4) {
    let wide = &mut out.wide;
    wide.clear();
    let peak = q
        .iter()
        .zip(scales)
        .map(|(x, s)| (x * s).abs())
        .fold(0f32, f32::max);
    let inv = inverse(peak / QUERY_MAX);
    wide.extend(
        q.iter()
            .zip(scales)
            .map(|(x, s)| quantise(x * s, inv, QUERY_MAX)),
    );
    let h = int4_bytes(q.len());
    wide.resize(2 * h, 0);
    out.blocks.clear();
    let body = h - h % STEP4;
    for half in [&wide[..body], &wide[h..h + body]] {
        out.blocks.extend(half.chunks_exact(STEP4).map(|c| {
            // In -127..=127 (QUERY_MAX), so every value fits an i8.
            std::array::from_fn(|i| c[i] as i8)
        }));
    }
}

/// Bytes of a 4-bit row per step of [`dot4`] (32 dimensions).
const STEP4: usize = 16;
/// Steps whose products the portable [`dot4`] sums in `i16` before widening to `i32`: a
/// step adds at most `2 * 127 * 15 = 3,810` to a lane, so 8 steps stay below `i16::MAX`.
const RUN4: usize = 8;

/// The 4-bit dot product `sum_j wide[j] * nibble[j]` (nibbles unsigned `0..=15`) of `q`
/// with `row` (`q.width()` bytes): exact integer sums, whichever way it is computed
/// (wrapping, which cannot happen below a million dimensions: |sum| <= 127 * 15 * dim).
#[inline]
fn dot4(q: &Query4, row: &[u8]) -> i32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "ssse3"))]
    {
        dot4_ssse3(q, row)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "ssse3")))]
    {
        dot4_portable(&q.wide, row)
    }
}

/// [`dot4`] with SSSE3's multiply-add of unsigned by signed bytes (`pmaddubsw`): per 16
/// bytes of a row, its low and high nibbles times the query's two halves, 8 `i16` pair
/// sums each (at most `2 * 15 * 127 = 3,810`, so the instruction's saturation never
/// applies and the sums are exact), accumulated in `i16` for 4 steps (< 32,767) and then
/// widened to `i32` by a multiply-add with 1s. Measured on 1,024 scattered 192-byte rows
/// (384-d): 23 us against the portable form's 33 us with the rows in memory, 13.5 against
/// 16.5 in cache. `safe_arch` wraps the intrinsics in safe functions where the target
/// feature is enabled at compile time (`.cargo/config.toml`: x86-64-v2).
#[cfg(all(target_arch = "x86_64", target_feature = "ssse3"))]
#[inline]
fn dot4_ssse3(q: &Query4, row: &[u8]) -> i32 {
    use safe_arch::{
        add_i16_m128i, add_i32_m128i, bitand_m128i, m128i, mul_i16_horizontal_add_m128i,
        mul_u8i8_add_horizontal_saturating_m128i, set_splat_i16_m128i, set_splat_i8_m128i,
        shr_imm_u16_m128i,
    };
    /// Steps summed in `i16` lanes: 4 * 2 * 3,810 = 30,480 < 32,767.
    const RUN: usize = 4;
    let h = row.len();
    let body = h - h % STEP4;
    let (lo_q, hi_q) = q.blocks.split_at(body / STEP4);
    let mut blocks = row[..body].chunks_exact(STEP4);
    let nibble = set_splat_i8_m128i(15);
    let ones = set_splat_i16_m128i(1);
    let mut acc = set_splat_i8_m128i(0);
    for (ql, qh) in lo_q.chunks(RUN).zip(hi_q.chunks(RUN)) {
        let r = blocks.by_ref().take(ql.len());
        let mut part = set_splat_i8_m128i(0);
        for ((r, ql), qh) in r.zip(ql).zip(qh) {
            // Always 16 bytes (`chunks_exact`); the fallback is never taken.
            let bytes = m128i::from(<[u8; STEP4]>::try_from(r).unwrap_or_default());
            let lo = bitand_m128i(bytes, nibble);
            let hi = bitand_m128i(shr_imm_u16_m128i::<4>(bytes), nibble);
            let a = mul_u8i8_add_horizontal_saturating_m128i(lo, m128i::from(*ql));
            let b = mul_u8i8_add_horizontal_saturating_m128i(hi, m128i::from(*qh));
            part = add_i16_m128i(part, add_i16_m128i(a, b));
        }
        acc = add_i32_m128i(acc, mul_i16_horizontal_add_m128i(part, ones));
    }
    let lanes: [i32; 4] = acc.into();
    let (qlo, qhi) = q.wide.split_at(h);
    let tail = row[body..]
        .iter()
        .zip(qlo[body..].iter().zip(&qhi[body..]))
        .fold(0i32, |t, (b, (x, y))| {
            t.wrapping_add(i32::from(*x) * i32::from(b & 15))
                .wrapping_add(i32::from(*y) * i32::from(b >> 4))
        });
    lanes.iter().fold(tail, |t, x| t.wrapping_add(*x))
}

/// The portable [`dot4`] on the `i16` query (`2 * row.len()` values): integer sums in 16
/// `i16` lanes, widened to `i32` every [`RUN4`] steps.
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "ssse3"),
    allow(dead_code)
)]
#[inline]
fn dot4_portable(q: &[i16], row: &[u8]) -> i32 {
    let h = row.len();
    let (qlo, qhi) = q.split_at(h);
    let body = h - h % STEP4;
    let mut acc = [0i32; STEP4];
    let runs = row[..body]
        .chunks(STEP4 * RUN4)
        .zip(qlo[..body].chunks(STEP4 * RUN4))
        .zip(qhi[..body].chunks(STEP4 * RUN4));
    for ((rr, lr), hr) in runs {
        let mut part = [0i16; STEP4];
        let steps = rr
            .chunks_exact(STEP4)
            .zip(lr.chunks_exact(STEP4))
            .zip(hr.chunks_exact(STEP4));
        for ((rc, ql), qh) in steps {
            for i in 0..STEP4 {
                let low = ql[i].wrapping_mul(i16::from(rc[i] & 15));
                let high = qh[i].wrapping_mul(i16::from(rc[i] >> 4));
                part[i] = part[i].wrapping_add(low).wrapping_add(high);
            }
        }
        for (a, p) in acc.iter_mut().zip(part) {
            *a = a.wrapping_add(i32::from(p));
        }
    }
    let lo = body;
    let tail =
        row[lo..]
            .iter()
            .zip(qlo[lo..].iter().zip(&qhi[lo..]))
            .fold(0i32, |t, (b, (x, y))| {
                t.wrapping_add(i32::from(*x) * i32::from(b & 15))
                    .wrapping_add(i32::from(*y) * i32::from(b >> 4))
            });
    acc.iter().fold(tail, |t, x| t.wrapping_add(*x))
}

/// Reads one byte of every 64-byte line of each row at `positions` (and its last byte: a
/// row need not start on a line), so that the lines are on their way from memory before
/// they are scored: a portable, safe prefetch. The rows are scattered, so their cache
/// misses must overlap; a loop of loads alone, with no arithmetic waiting on them, lets the
/// processor keep as many in flight as it can track.
#[inline]
fn touch(rows: &[u8], width: usize, positions: &[u32]) {
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
fn touch_f32(rows: &[f32], dim: usize, positions: &[u32]) {
    let mut sink = 0u32;
    for &p in positions {
        let row = &rows[p as usize * dim..(p as usize + 1) * dim];
        sink ^= row.iter().step_by(16).fold(0, |a, x| a ^ x.to_bits());
        sink ^= row.last().map_or(0, |x| x.to_bits());
    }
    std::hint::black_box(sink);
}

/// Approximate 4-bit scores of the rows at `positions` into `out` as `(score, position)`,
/// after touching every row first (measured cold, 1,024 rows of 192 bytes, 384-d, in the
/// whole search: 80-86 us against 90-96 us when each group of 8 rows was scored while the
/// next 16 rows were touched, and 126-144 us with no touching at all; the int8 rows of 384
/// bytes had taken ~63-85 us in this stage alone).
fn score_rows4(q: &Query4, int4: &[u8], positions: &[u32], out: &mut Vec<(i32, u32)>) {
    let width = q.width();
    touch(int4, width, positions);
    out.extend(positions.iter().map(|&p| {
        (
            dot4(q, &int4[p as usize * width..(p as usize + 1) * width]),
            p,
        )
    }));
}

/// Lanes of the dot product's partial sums.
const LANES: usize = 8;

/// `R` dot products of `q` with `rows` (each `q.len()` long), interleaved so that the loads
/// of `R` rows are in flight at once (rows come from scattered places in memory). Each is
/// computed in one fixed order: [`LANES`] lane sums, then a fixed pairwise reduction, so a
/// row's score never depends on which rows it was computed with.
#[inline]
fn dot_many<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        dot_many_sse(q, rows)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        dot_many_portable(q, rows)
    }
}

/// [`dot_many`] with SSE's 4-lane multiply and add (the lanes 0-3 and 4-7 of
/// [`dot_many_portable`] in two registers per row): the same operations in the same order,
/// so the same bits, in 19 instead of 26 us for 1,000 rows of 384 (the compiler's own
/// vectorisation of the portable loop mixes scalar and 2-lane operations).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline]
fn dot_many_sse<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
    use safe_arch::{add_m128, m128, mul_m128, set_splat_m128};
    let body = q.len() - q.len() % LANES;
    let mut lo = [set_splat_m128(0.0); R];
    let mut hi = [set_splat_m128(0.0); R];
    let mut chunks = rows.map(|r| r[..body].chunks_exact(LANES));
    let four = |c: &[f32], at: usize| m128::from([c[at], c[at + 1], c[at + 2], c[at + 3]]);
    for qc in q[..body].chunks_exact(LANES) {
        let (ql, qh) = (four(qc, 0), four(qc, 4));
        for ((l, h), rows) in lo.iter_mut().zip(hi.iter_mut()).zip(chunks.iter_mut()) {
            if let Some(rc) = rows.next() {
                *l = add_m128(*l, mul_m128(ql, four(rc, 0)));
                *h = add_m128(*h, mul_m128(qh, four(rc, 4)));
            }
        }
    }
    let mut out = [0f32; R];
    for (((o, l), h), row) in out.iter_mut().zip(lo).zip(hi).zip(rows.iter()) {
        let l: [f32; 4] = l.into();
        let h: [f32; 4] = h.into();
        let lanes = [l[0], l[1], l[2], l[3], h[0], h[1], h[2], h[3]];
        *o = finish_lanes(lanes, &q[body..], &row[body..]);
    }
    out
}

/// One row's dot product from its [`LANES`] lane sums: the tail past the last whole chunk
/// added lane by lane, then the fixed pairwise reduction (4, 2, 1).
#[inline]
fn finish_lanes(mut a: [f32; LANES], q_tail: &[f32], row_tail: &[f32]) -> f32 {
    for (i, (x, y)) in q_tail.iter().zip(row_tail).enumerate() {
        a[i] += x * y;
    }
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            a[i] += a[i + width];
        }
        width /= 2;
    }
    a[0]
}

/// The portable [`dot_many`]: [`LANES`] lane sums, then the fixed pairwise reduction.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline]
fn dot_many_portable<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
    let mut acc = [[0f32; LANES]; R];
    let body = q.len() - q.len() % LANES;
    // Chunk iterators, not indexing: no bounds check in the loop, so it vectorises.
    let mut chunks = rows.map(|r| r[..body].chunks_exact(LANES));
    for qc in q[..body].chunks_exact(LANES) {
        for (a, rows) in acc.iter_mut().zip(chunks.iter_mut()) {
            if let Some(rc) = rows.next() {
                for i in 0..LANES {
                    a[i] += qc[i] * rc[i];
                }
            }
        }
    }
    let mut out = [0f32; R];
    for ((o, a), row) in out.iter_mut().zip(acc).zip(rows.iter()) {
        *o = finish_lanes(a, &q[body..], &row[body..]);
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
    q4: Query4,
    approx: Vec<(i32, u32)>,
    cand: Vec<(f32, u32)>,
}

/// One query: writes up to `k` results into `pos` / `score` (length `k`, pre-padded) and
/// returns how many.
fn search_one(
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
/// Batches of several queries run in parallel across queries.
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
    let mut out = SketchMatches::padded(nq, k)?;
    if n == 0 || nq == 0 {
        return Ok(out);
    }
    let rerank = rerank.max(k);
    let refine = refine.max(k);
    out.fill(queries, dim, k, |s: &mut Scratch, q, p, sc| {
        search_one(part, q, rerank, refine, s, p, sc)
    });
    Ok(out)
}

/// The `k` best of `cand` (by [`better`]) into `pos` / `score` (length `k`, pre-padded),
/// best first; returns how many.
fn take_best(cand: &mut Vec<(f32, u32)>, pos: &mut [i64], score: &mut [f32]) -> usize {
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
/// else runs on the machine (OpenBLAS's threaded `sgemv` on 3,333 x 384 took a p50 of 29 us
/// and a p99 of 12 ms here with another process busy).
///
/// # Errors
/// [`Error::InvalidParameter`] for `dim` or `k` of 0, vectors or queries that are not whole
/// rows, and positions out of range; [`Error::Capacity`] beyond `u32::MAX` rows.
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
    out.fill(queries, dim, k, |cand: &mut Vec<(f32, u32)>, q, p, sc| {
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
    });
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A [`Query4`] of given `i16` values (`2 h` of them, in `-127..=127`), blocked as
    /// [`quantised_query`] blocks them.
    fn query4(wide: &[i16]) -> Query4 {
        let h = wide.len() / 2;
        let body = h - h % STEP4;
        let mut blocks = Vec::new();
        for half in [&wide[..body], &wide[h..h + body]] {
            blocks.extend(
                half.chunks_exact(STEP4)
                    .map(|c| std::array::from_fn(|i| c[i] as i8)),
            );
        }
        Query4 {
            wide: wide.to_vec(),
            blocks,
        }
    }

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

    /// A part's arrays built from `v` (owned, for [`Built::part`]).
    struct Built {
        v: Vec<f32>,
        centre: Vec<f32>,
        codes: Vec<u64>,
        int4: Vec<u8>,
        scales: Vec<f32>,
        dim: usize,
    }

    impl Built {
        fn new(v: &[f32], dim: usize) -> Self {
            let centre = mean(v, dim);
            let codes = sketch_codes(v, &centre, dim).unwrap();
            let (int4, scales) = sketch_int4(v, &centre, dim).unwrap();
            Built {
                v: v.to_vec(),
                centre,
                codes,
                int4,
                scales,
                dim,
            }
        }

        fn part(&self) -> SketchPart<'_> {
            SketchPart {
                codes: &self.codes,
                vectors: &self.v,
                centre: &self.centre,
                int4: &self.int4,
                scales: &self.scales,
                dim: self.dim,
            }
        }
    }

    fn run_refine(
        v: &[f32],
        dim: usize,
        q: &[f32],
        k: usize,
        rerank: usize,
        refine: usize,
    ) -> SketchMatches {
        sketch_search(&Built::new(v, dim).part(), q, k, rerank, refine).unwrap()
    }

    /// Without the 4-bit stage (`refine = rerank`).
    fn run(v: &[f32], dim: usize, q: &[f32], k: usize, rerank: usize) -> SketchMatches {
        run_refine(v, dim, q, k, rerank, rerank)
    }

    /// Deterministic pseudo-random values in `[-1, 1)`.
    fn noise(len: usize, seed: u64) -> Vec<f32> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
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
    fn int4_rows_are_scaled_centred_values() {
        let v = [1.0, -2.0, 0.5, 3.0, 0.0, 0.5];
        let (int4, scales) = sketch_int4(&v, &[0.0, 1.0, 0.5], 3).unwrap();
        // Column maxima of |v - c|: 3, 3, 0 (a constant column quantises to 0).
        assert_eq!(scales, vec![3.0 / 7.0, 3.0 / 7.0, 0.0]);
        // Values (2, -7, 0) and (7, -2, 0), stored + 8; h = 2: byte 0 holds dimensions 0
        // and 2, byte 1 dimension 1 and the padding (8).
        assert_eq!(int4, vec![10 | 8 << 4, 1 | 8 << 4, 15 | 8 << 4, 6 | 8 << 4]);
        let mut q4 = Query4::default();
        quantised_query(&[0.25, -1.0, 9.0], &scales, &mut q4);
        // q * scales = (0.75, -3, 0) / 7: the peak 3 / 7 maps to 127; padded to 2 h = 4.
        assert_eq!(q4.wide, vec![32, -127, 0, 0]);
        assert!(q4.blocks.is_empty()); // h = 2: no whole 16-byte block
        quantised_query(&[1.0, 1.0, 1.0], &[0.0, 0.0, 0.0], &mut q4);
        assert_eq!(q4.wide, vec![0, 0, 0, 0]);
        // 40 dimensions: h = 20, one block per half, dimensions 0..16 and 20..36.
        let q: Vec<f32> = (0..40).map(|j| j as f32 - 20.0).collect();
        quantised_query(&q, &[1.0; 40], &mut q4);
        assert_eq!(q4.blocks.len(), 2);
        for i in 0..16 {
            assert_eq!(i16::from(q4.blocks[0][i]), q4.wide[i]);
            assert_eq!(i16::from(q4.blocks[1][i]), q4.wide[20 + i]);
        }
    }

    #[test]
    fn int4_dot_matches_the_plain_sum() {
        for dim in [1usize, 2, 37, 64, 75, 384] {
            let h = int4_bytes(dim);
            let wide: Vec<i16> = (0..2 * h).map(|i| (i * 7 % 255) as i16 - 127).collect();
            let q = query4(&wide);
            let rows: Vec<Vec<u8>> = (0..3)
                .map(|r| (0..h).map(|i| ((i * 13 + r * 31) % 256) as u8).collect())
                .collect();
            for row in &rows {
                let want: i32 = (0..h)
                    .map(|j| {
                        i32::from(wide[j]) * i32::from(row[j] & 15)
                            + i32::from(wide[h + j]) * i32::from(row[j] >> 4)
                    })
                    .sum();
                assert_eq!(dot4(&q, row), want, "dim {dim}");
                assert_eq!(dot4_portable(&wide, row), want, "dim {dim}");
            }
        }
    }

    #[test]
    fn empty_part_and_empty_batch() {
        let empty = SketchPart {
            codes: &[],
            vectors: &[],
            centre: &[0.0, 0.0],
            int4: &[],
            scales: &[0.0, 0.0],
            dim: 2,
        };
        let m = sketch_search(&empty, &[1.0, 0.0], 3, 8, 4).unwrap();
        assert_eq!(m.counts, vec![0]);
        assert_eq!(m.positions, vec![-1; 3]);
        let v = unit_rows(&[1.0, 0.0], 2);
        let m = run(&v, 2, &[], 3, 8);
        assert!(m.counts.is_empty() && m.positions.is_empty());
    }

    #[test]
    fn errors_not_panics() {
        let b = Built::new(&[1.0f32, 0.0], 2);
        let ok = b.part();
        let q = [1.0, 0.0];
        assert!(sketch_search(&ok, &q, 1, 4, 4).is_ok());
        assert!(sketch_search(&ok, &q, 0, 4, 4).is_err());
        assert!(sketch_search(&ok, &q, 1, 0, 4).is_err());
        assert!(sketch_search(&ok, &q, 1, 4, 0).is_err());
        assert!(sketch_search(&ok, &[1.0], 1, 4, 4).is_err());
        let bad = [
            SketchPart { codes: &[], ..ok },
            SketchPart {
                centre: &[0.0],
                ..ok
            },
            SketchPart {
                int4: &[1, 2],
                ..ok
            },
            SketchPart {
                scales: &[1.0],
                ..ok
            },
            SketchPart { dim: 0, ..ok },
        ];
        for part in &bad {
            assert!(sketch_search(part, &q, 1, 4, 4).is_err());
        }
        assert!(sketch_codes(&[1.0, 2.0, 3.0], &[0.0, 0.0], 2).is_err());
        assert!(sketch_int4(&[1.0, 2.0, 3.0], &[0.0, 0.0], 2).is_err());
        assert!(sketch_int4(&[1.0, 2.0], &[0.0], 2).is_err());
    }

    /// Embedding-like rows: a rank-8 signal plus a little noise, unit length.
    fn structured(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let basis = noise(8 * dim, 1);
        let mix = noise(n * 8, seed);
        let eps = noise(n * dim, seed + 1);
        let mut raw = vec![0f32; n * dim];
        for (i, row) in raw.chunks_exact_mut(dim).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = (0..8)
                    .map(|b| mix[i * 8 + b] * basis[b * dim + j])
                    .sum::<f32>()
                    + 0.2 * eps[i * dim + j];
            }
        }
        unit_rows(&raw, dim)
    }

    #[test]
    fn int4_stage_keeps_recall_on_structured_data() {
        // 2,000 rows of dimension 96, 40 queries from the same distribution: the 4-bit
        // stage (rerank 400 -> refine 40) finds what the exact rerank of 400 finds.
        let (n, dim, k) = (2000, 96, 10);
        let v = structured(n, dim, 10);
        let qs = structured(40, dim, 20);
        let b = Built::new(&v, dim);
        let with = sketch_search(&b.part(), &qs, k, 400, 40).unwrap();
        let without = sketch_search(&b.part(), &qs, k, 400, 400).unwrap();
        let (mut hits, mut same) = (0, 0);
        for (i, q) in qs.chunks_exact(dim).enumerate() {
            let want: Vec<i64> = exact(&v, dim, q, k)
                .iter()
                .map(|x| i64::from(x.1))
                .collect();
            let got = &with.positions[i * k..(i + 1) * k];
            hits += got.iter().filter(|p| want.contains(p)).count();
            same += got
                .iter()
                .filter(|p| without.positions[i * k..(i + 1) * k].contains(p))
                .count();
        }
        assert!(hits >= 396, "recall@10 {hits} / 400");
        assert!(same >= 396, "4-bit stage agrees on {same} / 400");
    }

    #[test]
    fn scan_keeps_the_nearest_codes() {
        // 200 rows: the query equals row 123; with rerank 1 only Hamming distance 0 rows
        // (row 123 and any other row with its exact code) can be returned.
        let dim = 64;
        let v = unit_rows(&noise(200 * dim, 0), dim);
        let q = v[123 * dim..124 * dim].to_vec();
        let m = run(&v, dim, &q, 1, 1);
        assert_eq!(m.positions, vec![123]);
        // Through the 4-bit stage too: 20 candidates, the best 1 by 4-bit score.
        let m = run_refine(&v, dim, &q, 1, 20, 1);
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

    #[test]
    fn exact_search_errors_not_panics() {
        let v = [1.0f32, 0.0, 0.0, 1.0];
        let err = |r: Result<SketchMatches>| r.unwrap_err().to_string();
        assert!(err(exact_search(&v, 0, &v[..2], 1, None)).contains("dim must be >= 1"));
        assert!(err(exact_search(&v, 2, &v[..2], 0, None)).contains("k must be >= 1"));
        assert!(err(exact_search(&v[..3], 2, &v[..2], 1, None))
            .contains("vectors: 3 values are not whole rows of dimension 2"));
        assert!(err(exact_search(&v, 2, &v[..1], 1, None))
            .contains("queries: 1 values are not whole rows of dimension 2"));
        assert!(err(exact_search(&v, 2, &v[..2], 1, Some(&[0, 2])))
            .contains("positions: position 2 is out of range for 2 rows"));
        let none = exact_search(&[], 2, &v[..2], 3, None).unwrap();
        assert_eq!(none.counts, vec![0]);
        assert_eq!(none.positions, vec![-1, -1, -1]);
        // An absurd k is an error, not an allocation that aborts the process.
        assert!(err(exact_search(&v, 2, &v[..2], 1 << 60, None)).contains("invalid parameter k: 1152921504606846976 result cells (queries x k) cannot be allocated"));
        let empty = exact_search(&v, 2, &[], 3, Some(&[])).unwrap();
        assert!(empty.counts.is_empty() && empty.positions.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Exact search equals the obvious sort by (score desc, row), bit for bit, over
        /// every row or a subset; a batch equals its queries one by one.
        #[test]
        fn exact_search_is_the_sorted_scores(
            (dim, raw, qraw) in part(), k in 1usize..12, pick in prop::collection::vec(any::<u16>(), 0..20),
        ) {
            let n = raw.len() / dim;
            let all = exact_search(&raw, dim, &qraw, k, None).unwrap();
            let subset: Vec<u32> = pick.iter().map(|&p| u32::from(p) % n as u32).collect();
            let some = exact_search(&raw, dim, &qraw, k, Some(&subset)).unwrap();
            for (i, q) in qraw.chunks_exact(dim).enumerate() {
                let want = exact(&raw, dim, q, k);
                let got: Vec<(f32, u32)> = (0..all.counts[i] as usize)
                    .map(|j| (all.scores[i * k + j], all.positions[i * k + j] as u32))
                    .collect();
                prop_assert_eq!(got, want);
                let mut sub: Vec<(f32, u32)> = subset
                    .iter()
                    .map(|&r| (dot(q, &raw[r as usize * dim..(r as usize + 1) * dim]), r))
                    .collect();
                sub.sort_by(better);
                sub.truncate(k);
                let got: Vec<(f32, u32)> = (0..some.counts[i] as usize)
                    .map(|j| (some.scores[i * k + j], some.positions[i * k + j] as u32))
                    .collect();
                prop_assert_eq!(got, sub);
                let single = exact_search(&raw, dim, q, k, None).unwrap();
                prop_assert_eq!(&single.positions[..], &all.positions[i * k..(i + 1) * k]);
            }
        }

        /// The SSE dot products (where compiled) are the portable ones, bit for bit, for
        /// any length (whole 8-lane chunks and tails) and any number of rows at once.
        #[test]
        fn dot_forms_agree(
            (q, rows) in (0usize..70).prop_flat_map(|d| (
                prop::collection::vec(-4.0f32..4.0, d),
                prop::collection::vec(prop::collection::vec(-4.0f32..4.0, d), 4),
            )),
        ) {
            let r: [&[f32]; 4] = [&rows[0], &rows[1], &rows[2], &rows[3]];
            let many = dot_many::<4>(&q, r);
            prop_assert_eq!(many.map(f32::to_bits), dot_many_portable::<4>(&q, r).map(f32::to_bits));
            for (j, row) in rows.iter().enumerate() {
                prop_assert_eq!(dot(&q, row).to_bits(), many[j].to_bits());
            }
        }

        /// The SIMD 4-bit dot product (where compiled) equals the portable one and the
        /// plain sum, for every width (whole 16-byte blocks and tails) and extreme values.
        #[test]
        fn dot4_forms_agree(
            (wide, row) in (1usize..200).prop_flat_map(|h| (
                prop::collection::vec(-127i16..=127, 2 * h),
                prop::collection::vec(any::<u8>(), h),
            )),
        ) {
            let h = row.len();
            let want: i32 = (0..h)
                .map(|j| i32::from(wide[j]) * i32::from(row[j] & 15)
                    + i32::from(wide[h + j]) * i32::from(row[j] >> 4))
                .sum();
            prop_assert_eq!(dot4(&query4(&wide), &row), want);
            prop_assert_eq!(dot4_portable(&wide, &row), want);
            let peak = vec![-127i16; 2 * h];
            let full = vec![0xffu8; h];
            prop_assert_eq!(dot4(&query4(&peak), &full), -127 * 30 * h as i32);
        }

        /// With `rerank >= n` the result is the exact top-k, ties by row, bit for bit.
        #[test]
        fn full_rerank_is_exact(
            (dim, raw, qraw) in part(), k in 1usize..50, extra in 0usize..5, refine in 1usize..60,
        ) {
            let v: Vec<f32> = raw.chunks_exact(dim).flat_map(|r| {
                if r.iter().all(|x| *x == 0.0) { let mut r = r.to_vec(); r[0] = 1.0; r } else { r.to_vec() }
            }).collect();
            let n = v.len() / dim;
            // `rerank >= n` scores every row exactly whatever `refine` is.
            let m = run_refine(&v, dim, &qraw, k, n + extra, refine);
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
        fn partial_rerank_is_consistent(
            (dim, raw, qraw) in part(), k in 1usize..20, rerank in 1usize..30, refine in 1usize..30,
        ) {
            let n = raw.len() / dim;
            let m = run_refine(&raw, dim, &qraw, k, rerank, refine);
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
                let single = run_refine(&raw, dim, q, k, rerank, refine);
                prop_assert_eq!(&single.positions[..], &m.positions[i * k..(i + 1) * k]);
            }
        }

        /// Every nibble holds a value in `-7..=7` plus 8 within half a scale of the centred
        /// value; the high nibbles past `dim` (odd `dim`) hold 8, the value 0.
        #[test]
        fn int4_nibbles_round_the_centred_values((dim, raw, _q) in part()) {
            let n = raw.len() / dim;
            let centre = mean(&raw, dim);
            let (int4, scales) = sketch_int4(&raw, &centre, dim).unwrap();
            let h = int4_bytes(dim);
            prop_assert_eq!(int4.len(), n * h);
            for (row, v) in int4.chunks_exact(h).zip(raw.chunks_exact(dim)) {
                for j in 0..2 * h {
                    let nibble = if j < h { row[j] & 15 } else { row[j - h] >> 4 };
                    if j >= dim {
                        prop_assert_eq!(nibble, NIBBLE_ZERO);
                        continue;
                    }
                    prop_assert!((1..=15).contains(&nibble));
                    let back = f32::from(i8::try_from(nibble).unwrap() - 8) * scales[j];
                    let x = v[j] - centre[j];
                    prop_assert!((back - x).abs() <= scales[j] * 0.5001 + 1e-6, "{back} vs {x}");
                }
            }
        }

        /// `refine >= rerank`: the 4-bit stage is skipped, the answer is the f32 rerank's.
        #[test]
        fn refine_beyond_rerank_skips_int4(
            (dim, raw, qraw) in part(), k in 1usize..20, rerank in 1usize..30, extra in 0usize..5,
        ) {
            let a = run_refine(&raw, dim, &qraw, k, rerank, rerank + extra);
            let b = run(&raw, dim, &qraw, k, rerank);
            prop_assert_eq!(a.positions, b.positions);
            prop_assert_eq!(
                a.scores.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                b.scores.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
        }

        /// The 4-bit stage keeps the `refine` best approximate scores (ties by position):
        /// checked against the stages written out by hand (signed values, no offset).
        #[test]
        fn int4_stage_matches_reference(
            (dim, raw, qraw) in part(), k in 1usize..10, rerank in 1usize..40, refine in 1usize..40,
        ) {
            let n = raw.len() / dim;
            let b = Built::new(&raw, dim);
            let m = sketch_search(&b.part(), &qraw, k, rerank, refine).unwrap();
            let (rerank, refine) = (rerank.max(k), refine.max(k));
            for (i, q) in qraw.chunks_exact(dim).enumerate() {
                let mut keep: Vec<u32> = (0..n as u32).collect();
                if rerank < n {
                    let mut code = vec![0u64; words_for(dim)];
                    sign_code(q, &b.centre, &mut code);
                    let words = code.len();
                    let ham = |r: u32| -> u32 {
                        let c = &b.codes[r as usize * words..(r as usize + 1) * words];
                        c.iter().zip(&code).map(|(x, y)| (x ^ y).count_ones()).sum()
                    };
                    keep.sort_by_key(|&r| (ham(r), r));
                    keep.truncate(rerank);
                    if refine < rerank {
                        // Signed values of the quantised query and rows, dimension by
                        // dimension; the stored + 8 offset must not change the ranking.
                        let h = int4_bytes(dim);
                        let mut q4 = Query4::default();
                        quantised_query(q, &b.scales, &mut q4);
                        let q4 = q4.wide;
                        let approx = |r: u32| -> i32 {
                            let row = &b.int4[r as usize * h..(r as usize + 1) * h];
                            // Dimension j sits at q4[j] and in byte j (low) or j - h (high).
                            (0..dim).map(|j| {
                                let nibble = if j < h { row[j] & 15 } else { row[j - h] >> 4 };
                                i32::from(q4[j]) * (i32::from(nibble) - 8)
                            }).sum()
                        };
                        keep.sort_by_key(|&r| (std::cmp::Reverse(approx(r)), r));
                        keep.truncate(refine);
                    }
                }
                let mut want: Vec<(f32, u32)> = keep
                    .iter()
                    .map(|&r| (dot(q, &raw[r as usize * dim..(r as usize + 1) * dim]), r))
                    .collect();
                want.sort_by(better);
                want.truncate(k);
                let got: Vec<i64> = m.positions[i * k..i * k + want.len()].to_vec();
                prop_assert_eq!(got, want.iter().map(|x| i64::from(x.1)).collect::<Vec<_>>());
            }
        }
    }
}
