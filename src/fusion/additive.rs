//! Seed 003's additive merge of graph-sourced chunks into the hybrid results.

use super::common::*;
use super::types::*;
use crate::batch::*;
use crate::{Error, Result};

/// Seed 003's merge of graph-sourced chunks into the hybrid results, for a batch of queries.
///
/// "The graph expansion is additive: it never removes results from the existing hybrid search,
/// it only adds graph-sourced chunks and potentially re-scores existing results that also have
/// graph connections." Every id gets `combined = alpha * base + beta * graph` (a side that
/// lacks the id contributes `0.0`). The output of a query is **every** base id, whatever its
/// score, plus the best `max_new` ids found only in the graph list (by combined score, ties by
/// id ascending), all sorted by combined score descending, ties by id ascending. A repeated id
/// within one input list keeps its largest score.
///
/// `base_offsets` and `graph_offsets` each hold `n_queries + 1` entries.
///
/// # Errors
/// `InvalidParameter` for bad offsets, `alpha` or `beta` (finite, `>= 0`); `LengthMismatch`
/// for misaligned columns or a different number of queries on the two sides; `InvalidValue`
/// for a non-finite score; `InvalidQuery` when a combined score overflows.
#[allow(clippy::too_many_arguments)]
pub fn additive_merge_batch(
    base_ids: &[i64],
    base_scores: &[f64],
    base_offsets: &[usize],
    graph_ids: &[i64],
    graph_scores: &[f64],
    graph_offsets: &[usize],
    alpha: f64,
    beta: f64,
    max_new: usize,
) -> Result<Merged> {
    check_len("base", "scores", base_ids.len(), base_scores.len())?;
    check_len("graph", "scores", graph_ids.len(), graph_scores.len())?;
    check_offsets(base_offsets, "base_offsets", base_ids.len())?;
    check_offsets(graph_offsets, "graph_offsets", graph_ids.len())?;
    check_len(
        "queries",
        "graph_offsets",
        base_offsets.len(),
        graph_offsets.len(),
    )?;
    check_weight(alpha, "alpha")?;
    check_weight(beta, "beta")?;
    check_finite(base_scores, "base", "scores")?;
    check_finite(graph_scores, "graph", "scores")?;
    let n_queries = base_offsets.len() - 1;
    let work = base_ids.len() + graph_ids.len();
    let per_query = per_query(n_queries, work, |q| {
        let pairs = |ids: &[i64], scores: &[f64], offsets: &[usize]| {
            let rows = span(offsets, q);
            let mut items: Vec<(i64, f64)> = ids[rows.clone()]
                .iter()
                .copied()
                .zip(scores[rows].iter().copied())
                .collect();
            dedupe_max_sorted(&mut items);
            items
        };
        let base = pairs(base_ids, base_scores, base_offsets);
        let graph = pairs(graph_ids, graph_scores, graph_offsets);
        let mut kept: Vec<(i64, f64, u8)> = Vec::with_capacity(base.len() + max_new);
        let mut graph_only: Vec<(i64, f64)> = Vec::new();
        // Merge-join of two id-sorted lists.
        let (mut b, mut g) = (base.iter().peekable(), graph.iter().peekable());
        loop {
            match (b.peek().copied(), g.peek().copied()) {
                (Some(&(bid, bs)), Some(&(gid, gs))) if bid == gid => {
                    kept.push((bid, alpha * bs + beta * gs, SOURCE_BOTH));
                    b.next();
                    g.next();
                }
                (Some(&(bid, bs)), Some(&(gid, _))) if bid < gid => {
                    kept.push((bid, alpha * bs + beta * 0.0, SOURCE_BASE));
                    b.next();
                }
                (Some(&(bid, bs)), None) => {
                    kept.push((bid, alpha * bs + beta * 0.0, SOURCE_BASE));
                    b.next();
                }
                (_, Some(&(gid, gs))) => {
                    graph_only.push((gid, alpha * 0.0 + beta * gs));
                    g.next();
                }
                (None, None) => break,
            }
        }
        rank_and_truncate(&mut graph_only, Some(max_new));
        kept.extend(graph_only.into_iter().map(|(id, s)| (id, s, SOURCE_GRAPH)));
        if let Some(&(id, s, _)) = kept.iter().find(|item| !item.1.is_finite()) {
            return Err(Error::query(
                q,
                format!(
                    "the combined score of id {id} overflows to {s}; scale alpha, beta or the \
                     scores down"
                ),
            ));
        }
        kept.sort_unstable_by(|a, b| by_rank(&(a.0, a.1), &(b.0, b.1)));
        Ok(kept)
    });
    let per_query = per_query.into_iter().collect::<Result<Vec<_>>>()?;
    let total = per_query.iter().map(Vec::len).sum();
    let mut merged = Merged {
        ids: Vec::with_capacity(total),
        scores: Vec::with_capacity(total),
        sources: Vec::with_capacity(total),
        offsets: Vec::with_capacity(n_queries + 1),
    };
    merged.offsets.push(0);
    for items in per_query {
        for (id, score, source) in items {
            merged.ids.push(id);
            merged.scores.push(score);
            merged.sources.push(source);
        }
        merged.offsets.push(merged.ids.len());
    }
    Ok(merged)
}

/// [`additive_merge_batch`] for one query: `(id, combined score, source)` triples.
///
/// # Errors
/// As [`additive_merge_batch`].
pub fn additive_merge(
    base: (&[i64], &[f64]),
    graph: (&[i64], &[f64]),
    alpha: f64,
    beta: f64,
    max_new: usize,
) -> Result<Vec<(i64, f64, u8)>> {
    let merged = additive_merge_batch(
        base.0,
        base.1,
        &[0, base.0.len()],
        graph.0,
        graph.1,
        &[0, graph.0.len()],
        alpha,
        beta,
        max_new,
    )?;
    Ok(merged
        .ids
        .into_iter()
        .zip(merged.scores)
        .zip(merged.sources)
        .map(|((id, s), src)| (id, s, src))
        .collect())
}
