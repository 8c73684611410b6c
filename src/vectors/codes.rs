//! Binary sign codes: bit `j` of a row's code is set when `vector[j] - centre[j] > 0`.

use rayon::prelude::*;

use super::part::*;
use crate::Result;

/// Bits per code word.
pub const WORD_BITS: usize = 64;

/// Code words per row for vectors of dimension `dim`.
pub fn words_for(dim: usize) -> usize {
    dim.div_ceil(WORD_BITS)
}

/// Writes the sign code of `v - centre` into `out` (`words_for(v.len())` words).
pub(super) fn sign_code(v: &[f32], centre: &[f32], out: &mut [u64]) {
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
/// [`Error::InvalidParameter`](crate::Error::InvalidParameter) / [`Error::LengthMismatch`](crate::Error::LengthMismatch) for inconsistent shapes.
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
