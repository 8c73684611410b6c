//! Seed 004's composite score: match × 1 / (1 + hop) × confidence.

use super::common::*;
use crate::batch::*;
use crate::Result;

/// Seed 004's `GraphFact.composite_score()`: `match * (1.0 / (1 + hop)) * confidence`, in that
/// order (`hop` = 0 for a fact of the matched entity itself).
#[inline]
pub fn composite(match_score: f64, hop: u32, confidence: f64) -> f64 {
    match_score * (1.0 / (1.0 + f64::from(hop))) * confidence
}

/// [`composite`] over columns (table `facts`), written into `out`.
///
/// # Errors
/// `LengthMismatch`; `InvalidValue` for a non-finite match score or confidence.
pub fn composite_batch(
    match_score: &[f64],
    hop: &[u32],
    confidence: &[f64],
    out: &mut [f64],
) -> Result<()> {
    let n = match_score.len();
    check_len("facts", "hop", n, hop.len())?;
    check_len("facts", "confidence", n, confidence.len())?;
    check_len("facts", "out", n, out.len())?;
    check_finite(match_score, "facts", "match_score")?;
    check_finite(confidence, "facts", "confidence")?;
    fill(out, |i| composite(match_score[i], hop[i], confidence[i]));
    Ok(())
}

/// [`composite_batch`] into a new vector.
///
/// # Errors
/// As [`composite_batch`].
pub fn composite_scores(match_score: &[f64], hop: &[u32], confidence: &[f64]) -> Result<Vec<f64>> {
    let mut out = vec![0.0; match_score.len()];
    composite_batch(match_score, hop, confidence, &mut out)?;
    Ok(out)
}
