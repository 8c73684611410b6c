//! 4-bit quantisation of a part's centred rows (one scale per dimension) and of a query
//! for the 4-bit stage.

use rayon::prelude::*;

use super::part::*;
use super::simd::*;
use crate::Result;

/// Largest magnitude of a 4-bit value: symmetric, so `-x` is always representable.
pub(super) const INT4_MAX: f32 = 7.0;
/// Largest magnitude of the quantised query of the 4-bit stage.
pub(super) const QUERY_MAX: f32 = 127.0;
/// The stored nibble of the value 0: values `-7..=7` are stored as `1..=15`.
pub(super) const NIBBLE_ZERO: u8 = 8;

/// Bytes of a 4-bit row of dimension `dim`: two dimensions per byte.
pub fn int4_bytes(dim: usize) -> usize {
    dim.div_ceil(2)
}

/// `x / scale` rounded to the nearest integer and clamped to `-max..=max` (0 for a zero,
/// NaN or infinite scale).
#[inline]
pub(super) fn quantise(x: f32, inv_scale: f32, max: f32) -> i16 {
    // `as` saturates and maps NaN to 0; the clamp keeps the range symmetric.
    (x * inv_scale).round().clamp(-max, max) as i16
}

/// `1 / scale`, or 0 where the scale is 0 or not finite (a constant dimension).
#[inline]
pub(super) fn inverse(scale: f32) -> f32 {
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
/// [`Error::InvalidParameter`](crate::Error::InvalidParameter) / [`Error::LengthMismatch`](crate::Error::LengthMismatch) for inconsistent shapes.
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
pub(super) struct Query4 {
    /// The `2 h` values as `i16` (the portable dot product and every row's tail).
    pub(super) wide: Vec<i16>,
    /// The same values as `i8` in 16-byte blocks, for the multiply-add of unsigned nibbles
    /// by signed bytes: the `h / 16` blocks of the low half, then those of the high half
    /// (the last `h % 16` of each half are only in `wide`).
    pub(super) blocks: Vec<[i8; STEP4]>,
}

impl Query4 {
    /// Bytes of the rows this query scores.
    pub(super) fn width(&self) -> usize {
        self.wide.len() / 2
    }
}

pub(super) fn quantised_query(q: &[f32], scales: &[f32], out: &mut Query4) {
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
