//! The ranking steps every fusion kernel shares: order, contribution sums, top-k cut, the
//! overflow check and the flattening of per-query results into one [`Fused`].

use std::cmp::Ordering;

use super::types::Fused;
use crate::batch::{check_len, check_offsets, check_weights, score_key};
use crate::{Error, Result};

/// Score descending, then id ascending.
#[inline]
pub(super) fn by_rank(a: &(i64, f64), b: &(i64, f64)) -> Ordering {
    score_key(b.1)
        .total_cmp(&score_key(a.1))
        .then(a.0.cmp(&b.0))
}

/// Sum every id's contributions in ascending order of value (see the module docs for why),
/// starting from `0.0`. Returns one `(id, sum)` per distinct id, sorted by id.
pub(super) fn sum_contributions(mut contributions: Vec<(i64, f64)>) -> Vec<(i64, f64)> {
    contributions.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut out: Vec<(i64, f64)> = Vec::with_capacity(contributions.len());
    for (id, value) in contributions {
        match out.last_mut() {
            Some((last, sum)) if *last == id => *sum += value,
            _ => out.push((id, 0.0 + value)),
        }
    }
    out
}

/// Keep the best `top_k` (all when `None`) and sort them by score desc, id asc.
pub(super) fn rank_and_truncate(items: &mut Vec<(i64, f64)>, top_k: Option<usize>) {
    if let Some(k) = top_k {
        if k == 0 {
            items.clear();
            return;
        }
        if k < items.len() {
            items.select_nth_unstable_by(k - 1, by_rank);
            items.truncate(k);
        }
    }
    items.sort_unstable_by(by_rank);
}

/// Keep, for every id, its largest score; result sorted by id.
pub(super) fn dedupe_max_sorted(items: &mut Vec<(i64, f64)>) {
    // Id ascending, then score descending: the first of each run is its max.
    items.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    items.dedup_by_key(|item| item.0);
}

/// Fused sums can overflow (huge weights times huge scores); report it instead of ranking
/// infinities or NaN.
pub(super) fn check_fused(query: usize, items: &[(i64, f64)]) -> Result<()> {
    match items.iter().find(|(_, s)| !s.is_finite()) {
        None => Ok(()),
        Some((id, s)) => Err(Error::query(
            query,
            format!(
                "the fused score of id {id} overflows to {s}; scale the weights or scores down"
            ),
        )),
    }
}

pub(super) fn flatten(per_query: Vec<Result<Vec<(i64, f64)>>>) -> Result<Fused> {
    let mut total = 0;
    let mut fused = Fused {
        offsets: Vec::with_capacity(per_query.len() + 1),
        ..Fused::default()
    };
    fused.offsets.push(0);
    // Errors are taken in query order, so the reported one does not depend on scheduling.
    let per_query = per_query.into_iter().collect::<Result<Vec<_>>>()?;
    for items in &per_query {
        total += items.len();
        fused.offsets.push(total);
    }
    fused.ids.reserve_exact(total);
    fused.scores.reserve_exact(total);
    for items in per_query {
        for (id, score) in items {
            fused.ids.push(id);
            fused.scores.push(score);
        }
    }
    Ok(fused)
}

/// Validate the common list layout: `list_offsets` cuts `n_ids`, `query_offsets` cuts the
/// lists, and there is one weight per list.
pub(super) fn check_lists(
    n_ids: usize,
    list_offsets: &[usize],
    query_offsets: &[usize],
    weights: &[f64],
) -> Result<usize> {
    check_offsets(list_offsets, "list_offsets", n_ids)?;
    let n_lists = list_offsets.len() - 1;
    check_offsets(query_offsets, "query_offsets", n_lists)?;
    check_len("lists", "weights", n_lists, weights.len())?;
    check_weights(weights, "weights")?;
    Ok(query_offsets.len() - 1)
}
