//! The dot products: the 4-bit integer dot and the fixed-order `f32` dot, each with an
//! x86 SIMD form and a portable form that give the same result. Every architecture-specific
//! line of the crate is here, so a portability review reads one file.

use super::quant::*;

/// Bytes of a 4-bit row per step of [`dot4`] (32 dimensions).
pub(super) const STEP4: usize = 16;
/// Steps whose products the portable [`dot4`] sums in `i16` before widening to `i32`: a
/// step adds at most `2 * 127 * 15 = 3,810` to a lane, so 8 steps stay below `i16::MAX`.
pub(super) const RUN4: usize = 8;

/// The 4-bit dot product `sum_j wide[j] * nibble[j]` (nibbles unsigned `0..=15`) of `q`
/// with `row` (`q.width()` bytes): exact integer sums, whichever way it is computed
/// (wrapping, which cannot happen below a million dimensions: |sum| <= 127 * 15 * dim).
#[inline]
pub(super) fn dot4(q: &Query4, row: &[u8]) -> i32 {
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
/// widened to `i32` by a multiply-add with 1s: faster than the portable form whether the
/// rows are in memory or in cache. `safe_arch` wraps the intrinsics in safe functions where the target
/// feature is enabled at compile time (`.cargo/config.toml`: x86-64-v2).
#[cfg(all(target_arch = "x86_64", target_feature = "ssse3"))]
#[inline]
pub(super) fn dot4_ssse3(q: &Query4, row: &[u8]) -> i32 {
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
pub(super) fn dot4_portable(q: &[i16], row: &[u8]) -> i32 {
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

/// Lanes of the dot product's partial sums.
pub(super) const LANES: usize = 8;

/// `R` dot products of `q` with `rows` (each `q.len()` long), interleaved so that the loads
/// of `R` rows are in flight at once (rows come from scattered places in memory). Each is
/// computed in one fixed order: [`LANES`] lane sums, then a fixed pairwise reduction, so a
/// row's score never depends on which rows it was computed with.
#[inline]
pub(super) fn dot_many<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
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
/// so the same bits, faster (the compiler's own vectorisation of the portable loop mixes
/// scalar and 2-lane operations).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline]
pub(super) fn dot_many_sse<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
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
pub(super) fn finish_lanes(mut a: [f32; LANES], q_tail: &[f32], row_tail: &[f32]) -> f32 {
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
pub(super) fn dot_many_portable<const R: usize>(q: &[f32], rows: [&[f32]; R]) -> [f32; R] {
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
