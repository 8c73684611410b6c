//! Seed 003's host search merge of vector and BM25 results.

use std::cmp::Ordering;

use super::common::*;
use super::types::*;
use crate::batch::*;
use crate::{Error, Result};

/// How [`hybrid_merge_batch`] turns a query's BM25 scores into text scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextScore {
    /// `bm25 / best` (the query's first, best, BM25 score; 0.0 when it is not > 0).
    Max,
    /// OpenClaw's `1 / (1 + max(0, rank))` on FTS5's negative ranks: 1.0 for every hit.
    OpenClaw,
}

/// Score descending (`-0.0` equal to `0.0`, NaN after every number), then id ascending: the
/// order of numpy's `lexsort((ids, -scores))`.
#[inline]
pub(super) fn by_rank_nan_last(a: &(i64, f64), b: &(i64, f64)) -> Ordering {
    match (a.1.is_nan(), b.1.is_nan()) {
        (false, false) => by_rank(a, b),
        (true, true) => a.0.cmp(&b.0),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

/// A list's `(id, score)` pairs by id, the last of each id kept (as a dict built in order).
pub(super) fn last_by_id(ids: &[i64], scores: impl Iterator<Item = f64>) -> Vec<(i64, f64)> {
    let mut items: Vec<(i64, f64)> = ids.iter().copied().zip(scores).collect();
    // A stable sort keeps each id's pairs in input order: keep the last of each run.
    items.sort_by_key(|item| item.0);
    let mut out: Vec<(i64, f64)> = Vec::with_capacity(items.len());
    for item in items {
        match out.last_mut() {
            Some(last) if last.0 == item.0 => *last = item,
            _ => out.push(item),
        }
    }
    out
}

/// The hybrid search of seed 003's host (OpenClaw's `mergeHybridResults`) for a batch of
/// queries: each query's vector hits and BM25 hits merged into
/// `vector_weight * vector + text_weight * text`, a side that lacks the id contributing
/// `weight * 0.0` (the formula is evaluated as written: `vw * v + tw * t`), and the best `k`
/// kept, by score descending (NaN last), ties by id ascending.
///
/// Text scores come from the BM25 scores (given best first) by `text_score`. Within one
/// list a repeated id keeps its last score. `vector_offsets` / `text_offsets` hold
/// `n_queries + 1` entries each.
///
/// # Errors
/// `InvalidParameter` for bad offsets, a different number of queries on the two sides, or
/// weights that are not finite and `>= 0`; `LengthMismatch` for misaligned columns.
#[allow(clippy::too_many_arguments)]
pub fn hybrid_merge_batch(
    vector_ids: &[i64],
    vector_scores: &[f64],
    vector_offsets: &[usize],
    text_ids: &[i64],
    bm25: &[f64],
    text_offsets: &[usize],
    vector_weight: f64,
    text_weight: f64,
    text_score: TextScore,
    k: usize,
) -> Result<Fused> {
    check_len("vector", "scores", vector_ids.len(), vector_scores.len())?;
    check_len("text", "bm25", text_ids.len(), bm25.len())?;
    check_offsets(vector_offsets, "vector_offsets", vector_ids.len())?;
    check_offsets(text_offsets, "text_offsets", text_ids.len())?;
    if vector_offsets.len() != text_offsets.len() {
        return Err(Error::param(
            "text_offsets",
            format!(
                "holds {} queries but vector_offsets holds {}; they must match",
                text_offsets.len() - 1,
                vector_offsets.len() - 1
            ),
        ));
    }
    check_weight(vector_weight, "vector_weight")?;
    check_weight(text_weight, "text_weight")?;
    let (vw, tw) = (vector_weight, text_weight);
    let n_queries = vector_offsets.len() - 1;
    let work = vector_ids.len() + text_ids.len();
    flatten(per_query(n_queries, work, |q| {
        let v_rows = span(vector_offsets, q);
        let t_rows = span(text_offsets, q);
        let vector = last_by_id(
            &vector_ids[v_rows.clone()],
            vector_scores[v_rows].iter().copied(),
        );
        let bm = &bm25[t_rows.clone()];
        let top = bm.first().copied().unwrap_or(0.0);
        let text = last_by_id(
            &text_ids[t_rows],
            bm.iter().map(|&s| match text_score {
                TextScore::OpenClaw => 1.0,
                TextScore::Max if top > 0.0 => s / top,
                TextScore::Max => 0.0,
            }),
        );
        // Merge-join of the two id-sorted lists.
        let mut merged: Vec<(i64, f64)> = Vec::with_capacity(vector.len() + text.len());
        let (mut a, mut b) = (vector.iter().peekable(), text.iter().peekable());
        loop {
            match (a.peek().copied(), b.peek().copied()) {
                (Some(&(id, v)), Some(&(tid, t))) if id == tid => {
                    merged.push((id, vw * v + tw * t));
                    a.next();
                    b.next();
                }
                (Some(&(id, v)), Some(&(tid, _))) if id < tid => {
                    merged.push((id, vw * v + tw * 0.0));
                    a.next();
                }
                (Some(&(id, v)), None) => {
                    merged.push((id, vw * v + tw * 0.0));
                    a.next();
                }
                (_, Some(&(tid, t))) => {
                    merged.push((tid, vw * 0.0 + tw * t));
                    b.next();
                }
                (None, None) => break,
            }
        }
        if k < merged.len() {
            if k == 0 {
                merged.clear();
            } else {
                merged.select_nth_unstable_by(k - 1, by_rank_nan_last);
                merged.truncate(k);
            }
        }
        merged.sort_unstable_by(by_rank_nan_last);
        Ok(merged)
    }))
}
