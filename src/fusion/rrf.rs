//! Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009).

use rustc_hash::FxHashSet;

use super::common::*;
use super::types::*;
use crate::batch::*;
use crate::{Error, Result};

/// Reciprocal rank fusion (Cormack et al. 2009) of a batch of queries.
///
/// `score(d) = Σ_i w_i / (k + rank_i(d))` over the lists `i` of the query that hold `d`, with
/// `rank_i(d)` the 1-based position of `d` in list `i`. An id repeated within one list counts
/// once, at its best (first) position; positions are not renumbered.
///
/// * `ids`: all lists of all queries, concatenated.
/// * `list_offsets`: `n_lists + 1` entries cutting `ids` into lists.
/// * `query_offsets`: `n_queries + 1` entries, in units of lists.
/// * `weights`: one per list, finite and `>= 0`.
/// * `k`: finite and `>= 0` (`k = 0` is allowed: ranks start at 1).
/// * `top_k`: keep at most this many results per query.
///
/// # Errors
/// `InvalidParameter` for bad offsets, weights or `k`; `LengthMismatch` when `weights` does not
/// hold one weight per list; `InvalidQuery` when a fused score overflows.
pub fn rrf_batch(
    ids: &[i64],
    list_offsets: &[usize],
    query_offsets: &[usize],
    weights: &[f64],
    k: f64,
    top_k: Option<usize>,
) -> Result<Fused> {
    let n_queries = check_lists(ids.len(), list_offsets, query_offsets, weights)?;
    if !(k.is_finite() && k >= 0.0) {
        return Err(Error::param(
            "k",
            format!("k = {k} must be finite and >= 0"),
        ));
    }
    let per_query = per_query(n_queries, ids.len(), |q| {
        let mut contributions = Vec::new();
        let mut seen = FxHashSet::default();
        for list in span(query_offsets, q) {
            let weight = weights[list];
            seen.clear();
            for (position, &id) in ids[span(list_offsets, list)].iter().enumerate() {
                if seen.insert(id) {
                    contributions.push((id, weight / (k + (position + 1) as f64)));
                }
            }
        }
        let mut fused = sum_contributions(contributions);
        check_fused(q, &fused)?;
        rank_and_truncate(&mut fused, top_k);
        Ok(fused)
    });
    flatten(per_query)
}

/// Lay out single-query lists as one batch: (flat, list_offsets, query_offsets).
pub(super) fn one_query<T: Copy>(lists: &[&[T]]) -> (Vec<T>, Vec<usize>, Vec<usize>) {
    let mut flat = Vec::with_capacity(lists.iter().map(|l| l.len()).sum());
    let mut offsets = Vec::with_capacity(lists.len() + 1);
    offsets.push(0);
    for list in lists {
        flat.extend_from_slice(list);
        offsets.push(flat.len());
    }
    (flat, offsets, vec![0, lists.len()])
}

pub(super) fn into_pairs(fused: Fused) -> Vec<(i64, f64)> {
    fused.ids.into_iter().zip(fused.scores).collect()
}

/// [`rrf_batch`] for one query. `weights` defaults to 1 for every list.
///
/// # Errors
/// As [`rrf_batch`].
///
/// # Examples
/// ```
/// use graphrecall::fusion::rrf;
///
/// // Ids 3 and 2 are first in one list and third in the other; id 1 is second in both.
/// let fused = rrf(&[&[3, 1, 2], &[2, 1, 3]], None, 60.0, None)?;
/// let ids: Vec<i64> = fused.iter().map(|&(id, _)| id).collect();
/// assert_eq!(ids, vec![2, 3, 1]); // 1/61 + 1/63 > 2/62; the tie breaks by id ascending
/// assert_eq!(fused[2].1, 1.0 / 62.0 + 1.0 / 62.0);
/// # Ok::<(), graphrecall::Error>(())
/// ```
pub fn rrf(
    lists: &[&[i64]],
    weights: Option<&[f64]>,
    k: f64,
    top_k: Option<usize>,
) -> Result<Vec<(i64, f64)>> {
    let (ids, list_offsets, query_offsets) = one_query(lists);
    let ones = vec![1.0; lists.len()];
    let weights = weights.unwrap_or(&ones);
    rrf_batch(&ids, &list_offsets, &query_offsets, weights, k, top_k).map(into_pairs)
}
