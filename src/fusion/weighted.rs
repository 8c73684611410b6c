//! Weighted linear fusion of scored lists.

use super::common::*;
use super::rrf::{into_pairs, one_query};
use super::types::*;
use crate::batch::*;
use crate::{Error, Result};

/// Weighted linear fusion of a batch of queries: `score(d) = Σ_i w_i * s_i(d)`, a list that
/// lacks `d` contributing 0.
///
/// Within one list a repeated id keeps its largest score. With `normalize`, each list's
/// (deduplicated) scores are min-max normalised first, `(s - min) / (max - min)`, and a list
/// whose scores are all equal maps every score to 1.0. `scores` is aligned with `ids`; the
/// layout, `weights` and `top_k` are as in [`rrf_batch`](super::rrf_batch).
///
/// # Errors
/// As [`rrf_batch`](super::rrf_batch); `InvalidValue` for a non-finite score (row = position in `scores`) or
/// for a list whose `max - min` overflows when normalising.
pub fn weighted_batch(
    ids: &[i64],
    scores: &[f64],
    list_offsets: &[usize],
    query_offsets: &[usize],
    weights: &[f64],
    normalize: bool,
    top_k: Option<usize>,
) -> Result<Fused> {
    check_len("lists", "scores", ids.len(), scores.len())?;
    let n_queries = check_lists(ids.len(), list_offsets, query_offsets, weights)?;
    check_finite(scores, "lists", "scores")?;
    let per_query = per_query(n_queries, ids.len(), |q| {
        let mut contributions = Vec::new();
        let mut list_items: Vec<(i64, f64)> = Vec::new();
        for list in span(query_offsets, q) {
            let rows = span(list_offsets, list);
            let start = rows.start;
            list_items.clear();
            list_items.extend(
                ids[rows.clone()]
                    .iter()
                    .copied()
                    .zip(scores[rows].iter().copied()),
            );
            dedupe_max_sorted(&mut list_items);
            if normalize && !list_items.is_empty() {
                let (lo, hi) = list_items
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(_, s)| {
                        (lo.min(s), hi.max(s))
                    });
                let range = hi - lo;
                if !range.is_finite() {
                    return Err(Error::InvalidValue {
                        table: "lists",
                        row: start,
                        column: "scores",
                        value: format!("{lo}..{hi}"),
                        problem: format!(
                            "a range too wide to normalise (list {list}: max - min overflows)"
                        ),
                    });
                }
                for item in &mut list_items {
                    item.1 = if hi > lo { (item.1 - lo) / range } else { 1.0 };
                }
            }
            let weight = weights[list];
            contributions.extend(list_items.iter().map(|&(id, s)| (id, weight * s)));
        }
        let mut fused = sum_contributions(contributions);
        check_fused(q, &fused)?;
        rank_and_truncate(&mut fused, top_k);
        Ok(fused)
    });
    flatten(per_query)
}

/// [`weighted_batch`] for one query; each list is `(ids, scores)`. `weights` defaults to 1.
///
/// # Errors
/// As [`weighted_batch`].
pub fn weighted(
    lists: &[(&[i64], &[f64])],
    weights: Option<&[f64]>,
    normalize: bool,
    top_k: Option<usize>,
) -> Result<Vec<(i64, f64)>> {
    let id_lists: Vec<&[i64]> = lists.iter().map(|l| l.0).collect();
    let score_lists: Vec<&[f64]> = lists.iter().map(|l| l.1).collect();
    for (i, (ids, scores)) in lists.iter().enumerate() {
        if ids.len() != scores.len() {
            return Err(Error::param(
                "lists",
                format!("list {i} has {} ids but {} scores", ids.len(), scores.len()),
            ));
        }
    }
    let (ids, list_offsets, query_offsets) = one_query(&id_lists);
    let (scores, _, _) = one_query(&score_lists);
    let ones = vec![1.0; lists.len()];
    let weights = weights.unwrap_or(&ones);
    weighted_batch(
        &ids,
        &scores,
        &list_offsets,
        &query_offsets,
        weights,
        normalize,
        top_k,
    )
    .map(into_pairs)
}
