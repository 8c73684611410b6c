//! Seed 002's `rerank_memories`: similarity, recency, confidence and access, weighted.

use super::common::*;
use crate::batch::*;
use crate::{Error, Result};

/// Constants of seed 002's `rerank_memories`.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankProfile {
    pub w_similarity: f64,
    pub w_recency: f64,
    pub w_confidence: f64,
    pub w_access: f64,
    /// `recency = recency_base ** days_old`.
    pub recency_base: f64,
    /// Length of a "day" in seconds.
    pub day_seconds: i64,
}

impl Default for RerankProfile {
    fn default() -> Self {
        Self {
            w_similarity: 0.5,
            w_recency: 0.3,
            w_confidence: 0.15,
            w_access: 0.05,
            recency_base: 0.95,
            day_seconds: DAY_SECONDS,
        }
    }
}

impl RerankProfile {
    /// # Errors
    /// `InvalidParameter` unless the weights are finite and `>= 0`, `recency_base` is finite
    /// and `> 0` and `day_seconds > 0`.
    pub fn validate(&self) -> Result<()> {
        check_weight(self.w_similarity, "w_similarity")?;
        check_weight(self.w_recency, "w_recency")?;
        check_weight(self.w_confidence, "w_confidence")?;
        check_weight(self.w_access, "w_access")?;
        check_positive(self.recency_base, "recency_base")?;
        if self.day_seconds <= 0 {
            return Err(Error::param(
                "day_seconds",
                format!("day_seconds = {} must be > 0", self.day_seconds),
            ));
        }
        Ok(())
    }
}

/// Scores of [`rerank_batch`] (in input order) and, per query, the rows sorted by score.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reranked {
    /// One final score per memory, in input order.
    pub scores: Vec<f64>,
    /// Global row indices: `order[offsets[q]..offsets[q + 1]]` is query `q`'s rows sorted by
    /// score descending, equal scores kept in input (vector-rank) order.
    pub order: Vec<usize>,
}

/// Seed 002's recency factor: `recency_base ** days_old` with `days_old` the floor of the age
/// in days (Python's `timedelta.days`: a memory created in the future has a negative age and a
/// recency above 1). A null time gives 1.0.
#[inline]
pub fn recency(created_at: i64, now: i64, p: &RerankProfile) -> f64 {
    if created_at == NULL_TIME {
        return 1.0;
    }
    let age = i128::from(now) - i128::from(created_at);
    let days_old = age.div_euclid(i128::from(p.day_seconds.max(1)));
    p.recency_base.powf(days_old as f64)
}

/// Seed 002's `rerank_memories` over a batch of queries.
///
/// Within query `q` (rows `query_offsets[q]..query_offsets[q + 1]`, in vector-rank order), the
/// memory at position `i` (0-based) scores
///
/// ```text
/// similarity = 1.0 / (i + 1)
/// recency    = 0.95 ** days_old               (1.0 for a null created_at)
/// final      = 0.5 * similarity + 0.3 * recency + 0.15 * confidence + 0.05 * access_score
/// ```
///
/// summed left to right. A `created_at` tens of thousands of days in the future makes
/// `recency_base ** days_old` overflow to infinity (where Python would raise `OverflowError`). `confidence` and `access_score` default to 1.0 per memory when `None`
/// (the source's `getattr(memory, 'confidence', 1.0)` and its constant `access_score = 1.0`);
/// `created_at = None` means every time is null. The source takes a memory's position with
/// `memories.index(memory)`, which gives equal memories the same (first) position; rows here
/// are distinct and each takes its own position.
///
/// # Errors
/// `InvalidParameter` for a bad profile or `query_offsets`; `LengthMismatch` when a column
/// does not hold `query_offsets[last]` rows; `InvalidValue` (table `memories`) for a
/// non-finite confidence or access score.
pub fn rerank_batch(
    query_offsets: &[usize],
    created_at: Option<&[i64]>,
    confidence: Option<&[f64]>,
    access_score: Option<&[f64]>,
    now: i64,
    p: &RerankProfile,
) -> Result<Reranked> {
    p.validate()?;
    let n = query_offsets.last().copied().unwrap_or(0);
    check_offsets(query_offsets, "query_offsets", n)?;
    if let Some(times) = created_at {
        check_len("memories", "created_at", n, times.len())?;
    }
    if let Some(values) = confidence {
        check_len("memories", "confidence", n, values.len())?;
        check_finite(values, "memories", "confidence")?;
    }
    if let Some(values) = access_score {
        check_len("memories", "access_score", n, values.len())?;
        check_finite(values, "memories", "access_score")?;
    }
    let n_queries = query_offsets.len() - 1;
    let per_query = per_query(n_queries, n, |q| {
        let rows = query_offsets[q]..query_offsets[q + 1];
        let start = rows.start;
        let scores: Vec<f64> = rows
            .clone()
            .map(|row| {
                let similarity = 1.0 / ((row - start) as f64 + 1.0);
                let recency = recency(created_at.map_or(NULL_TIME, |t| t[row]), now, p);
                let confidence = confidence.map_or(1.0, |c| c[row]);
                let access = access_score.map_or(1.0, |a| a[row]);
                p.w_similarity * similarity
                    + p.w_recency * recency
                    + p.w_confidence * confidence
                    + p.w_access * access
            })
            .collect();
        let mut order: Vec<usize> = rows.collect();
        // Stable: equal scores keep their input order, as Python's sort(reverse=True) does.
        order.sort_by(|&a, &b| {
            score_key(scores[b - start]).total_cmp(&score_key(scores[a - start]))
        });
        (scores, order)
    });
    let mut out = Reranked {
        scores: Vec::with_capacity(n),
        order: Vec::with_capacity(n),
    };
    for (scores, order) in per_query {
        out.scores.extend(scores);
        out.order.extend(order);
    }
    Ok(out)
}
