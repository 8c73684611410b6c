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

mod codes;
mod part;
mod quant;
mod search;
mod simd;

pub use codes::{sketch_codes, words_for, WORD_BITS};
pub use part::SketchPart;
pub use quant::{int4_bytes, sketch_int4};
pub use search::{exact_search, sketch_search, SketchMatches, SKETCH_PARALLEL_FROM};
pub use simd::dot;

#[cfg(test)]
mod tests;
