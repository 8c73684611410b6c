//! `dedupe_max` and `top_k` over batches of scored ids.

use super::common::*;
use super::types::*;
use crate::batch::*;
use crate::Result;

pub(super) fn check_scored(ids: &[i64], scores: &[f64], offsets: &[usize]) -> Result<usize> {
    check_len("results", "scores", ids.len(), scores.len())?;
    check_offsets(offsets, "offsets", ids.len())?;
    check_finite(scores, "results", "scores")?;
    Ok(offsets.len() - 1)
}

/// Per query, the distinct ids with their largest score, sorted by score descending, ties by
/// id ascending. `offsets` holds `n_queries + 1` entries cutting `ids`/`scores`.
///
/// # Errors
/// `LengthMismatch`, `InvalidParameter` for bad offsets, `InvalidValue` for a non-finite score.
pub fn dedupe_max_batch(ids: &[i64], scores: &[f64], offsets: &[usize]) -> Result<Fused> {
    let n_queries = check_scored(ids, scores, offsets)?;
    flatten(per_query(n_queries, ids.len(), |q| {
        let rows = span(offsets, q);
        let mut items: Vec<(i64, f64)> = ids[rows.clone()]
            .iter()
            .copied()
            .zip(scores[rows].iter().copied())
            .collect();
        dedupe_max_sorted(&mut items);
        items.sort_unstable_by(by_rank);
        Ok(items)
    }))
}

/// Per query, the best `k` entries by score descending, ties by id ascending (a partial
/// selection, `O(n + k log k)`). Ids are not deduplicated: use [`dedupe_max_batch`] first
/// when they may repeat.
///
/// # Errors
/// As [`dedupe_max_batch`].
pub fn top_k_batch(ids: &[i64], scores: &[f64], offsets: &[usize], k: usize) -> Result<Fused> {
    let n_queries = check_scored(ids, scores, offsets)?;
    flatten(per_query(n_queries, ids.len(), |q| {
        let rows = span(offsets, q);
        let mut items: Vec<(i64, f64)> = ids[rows.clone()]
            .iter()
            .copied()
            .zip(scores[rows].iter().copied())
            .collect();
        rank_and_truncate(&mut items, Some(k));
        Ok(items)
    }))
}
