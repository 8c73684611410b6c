//! Rank fusion: reciprocal rank fusion, weighted linear fusion, seed 003's hybrid search merge
//! and additive merge, `dedupe_max` and `top_k`. Pyo3-free, numbers only.
//!
//! Every kernel is batched the same way: flat arrays of ids (and scores) cut into lists by
//! `list_offsets` (`n_lists + 1` entries) and lists grouped into queries by `query_offsets`
//! (`n_queries + 1` entries, in units of lists), or cut straight into queries by `offsets`.
//! Offsets start at 0, never decrease and end at the length they cut. Queries are fused in
//! parallel with rayon once a batch holds more than [`PAR_THRESHOLD`] entries.
//!
//! # Determinism
//! * Output of every query is sorted by score descending, ties by id ascending.
//! * Fused scores do not depend on the order of the input lists, bit for bit. Floating-point
//!   addition is not associative (`(a + b) + c` may differ from `(a + c) + b` in the last bit),
//!   so summing each id's contributions in list order would make its fused score, and so the
//!   ranking of near-ties, depend on the order in which the caller happened to list its
//!   retrievers. Instead every id's contributions are gathered, sorted by value and summed
//!   from `0.0` upwards in that order: the sum is a function of the multiset of contributions
//!   alone. (The hybrid merge adds exactly two terms as its source writes them,
//!   `vw * v + tw * t`: the same in either order.)
//! * Scores `-0.0` and `0.0` compare equal (then tie by id), as they do in Python.

use std::cmp::Ordering;
use std::ops::Range;

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::{Error, Result};

/// Batches with more entries than this are processed in parallel across queries (or rows).
pub const PAR_THRESHOLD: usize = 32_768;
/// Default RRF constant `k` (Cormack, Clarke and Büttcher, 2009).
pub const DEFAULT_RRF_K: f64 = 60.0;
/// Seed 003: weight of the hybrid (base) score in the additive merge.
pub const DEFAULT_ALPHA: f64 = 0.7;
/// Seed 003: weight of the graph proximity score in the additive merge.
pub const DEFAULT_BETA: f64 = 0.3;
/// Seed 003: at most this many graph-only chunks are added to the hybrid results.
pub const DEFAULT_MAX_NEW: usize = 4;

/// [`Merged::sources`] code: the id came from the base (hybrid) list only.
pub const SOURCE_BASE: u8 = 0;
/// [`Merged::sources`] code: the id came from the graph list only.
pub const SOURCE_GRAPH: u8 = 1;
/// [`Merged::sources`] code: the id is in both lists.
pub const SOURCE_BOTH: u8 = 2;

/// Fused results of a batch: query `q` owns `ids[offsets[q]..offsets[q + 1]]` and the same
/// range of `scores`, sorted by score descending, ties by id ascending.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fused {
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    /// `n_queries + 1` entries.
    pub offsets: Vec<usize>,
}

impl Fused {
    /// Number of queries in the batch.
    pub fn n_queries(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Ids and scores of query `q`, or `None` when there is no such query.
    pub fn query(&self, q: usize) -> Option<(&[i64], &[f64])> {
        let range = self.offsets.get(q).copied()?..self.offsets.get(q + 1).copied()?;
        Some((self.ids.get(range.clone())?, self.scores.get(range)?))
    }
}

/// Result of [`additive_merge_batch`]: like [`Fused`] plus, per output, where it came from
/// ([`SOURCE_BASE`], [`SOURCE_GRAPH`] or [`SOURCE_BOTH`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Merged {
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
    pub sources: Vec<u8>,
    /// `n_queries + 1` entries.
    pub offsets: Vec<usize>,
}

// ---------------------------------------------------------------------------------------------
// Shared helpers (also used by `scoring`).

/// `-0.0` and `0.0` become the same key, so that `total_cmp` orders like Python's `<` on every
/// non-NaN score while staying a total order (Rust's sorts may panic on a comparator that is
/// not one).
#[inline]
pub(crate) fn score_key(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// Score descending, then id ascending.
#[inline]
fn by_rank(a: &(i64, f64), b: &(i64, f64)) -> Ordering {
    score_key(b.1)
        .total_cmp(&score_key(a.1))
        .then(a.0.cmp(&b.0))
}

/// Check that `offsets` starts at 0, never decreases and ends at `total`.
pub(crate) fn check_offsets(offsets: &[usize], name: &'static str, total: usize) -> Result<()> {
    let Some(&first) = offsets.first() else {
        return Err(Error::param(
            name,
            "is empty; it needs n + 1 entries starting at 0",
        ));
    };
    if first != 0 {
        return Err(Error::param(name, format!("must start at 0, got {first}")));
    }
    for (i, pair) in offsets.windows(2).enumerate() {
        if pair[1] < pair[0] {
            return Err(Error::param(
                name,
                format!(
                    "must never decrease, but {name}[{}] = {} < {name}[{}] = {}",
                    i + 1,
                    pair[1],
                    i,
                    pair[0]
                ),
            ));
        }
    }
    let last = offsets.last().copied().unwrap_or(0);
    if last != total {
        return Err(Error::param(
            name,
            format!("must end at {total} (the length it cuts), got {last}"),
        ));
    }
    Ok(())
}

pub(crate) fn check_len(
    table: &'static str,
    column: &'static str,
    expected: usize,
    got: usize,
) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            table,
            column,
            expected,
            got,
        })
    }
}

/// First non-finite value of a column, as an `InvalidValue` naming table, row and column.
pub(crate) fn check_finite(
    values: &[f64],
    table: &'static str,
    column: &'static str,
) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(row) => Err(Error::InvalidValue {
            table,
            row,
            column,
            value: values.get(row).map_or_else(String::new, f64::to_string),
            problem: "not finite (NaN or infinite)".to_owned(),
        }),
    }
}

/// A weight-like parameter must be finite and non-negative.
pub(crate) fn check_weight(value: f64, name: &'static str) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            name,
            format!("{name} = {value} must be finite and >= 0"),
        ))
    }
}

fn check_weights(weights: &[f64], name: &'static str) -> Result<()> {
    match weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
        None => Ok(()),
        Some(i) => Err(Error::param(
            name,
            format!(
                "{name}[{i}] = {} must be finite and >= 0",
                weights.get(i).copied().unwrap_or(f64::NAN)
            ),
        )),
    }
}

/// Run `f` for every query, in parallel when the batch is large. Results keep query order.
pub(crate) fn per_query<T, F>(n_queries: usize, work: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync + Send,
{
    if n_queries > 1 && work > PAR_THRESHOLD {
        (0..n_queries).into_par_iter().map(f).collect()
    } else {
        (0..n_queries).map(f).collect()
    }
}

#[inline]
fn span(offsets: &[usize], i: usize) -> Range<usize> {
    // Callers validated `offsets` with `check_offsets` and `i + 1 < offsets.len()`.
    offsets[i]..offsets[i + 1]
}

/// Sum every id's contributions in ascending order of value (see the module docs for why),
/// starting from `0.0`. Returns one `(id, sum)` per distinct id, sorted by id.
fn sum_contributions(mut contributions: Vec<(i64, f64)>) -> Vec<(i64, f64)> {
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
fn rank_and_truncate(items: &mut Vec<(i64, f64)>, top_k: Option<usize>) {
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
fn dedupe_max_sorted(items: &mut Vec<(i64, f64)>) {
    // Id ascending, then score descending: the first of each run is its max.
    items.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    items.dedup_by_key(|item| item.0);
}

/// Fused sums can overflow (huge weights times huge scores); report it instead of ranking
/// infinities or NaN.
fn check_fused(query: usize, items: &[(i64, f64)]) -> Result<()> {
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

fn flatten(per_query: Vec<Result<Vec<(i64, f64)>>>) -> Result<Fused> {
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
fn check_lists(
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

// ---------------------------------------------------------------------------------------------
// Reciprocal rank fusion.

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
fn one_query<T: Copy>(lists: &[&[T]]) -> (Vec<T>, Vec<usize>, Vec<usize>) {
    let mut flat = Vec::with_capacity(lists.iter().map(|l| l.len()).sum());
    let mut offsets = Vec::with_capacity(lists.len() + 1);
    offsets.push(0);
    for list in lists {
        flat.extend_from_slice(list);
        offsets.push(flat.len());
    }
    (flat, offsets, vec![0, lists.len()])
}

fn into_pairs(fused: Fused) -> Vec<(i64, f64)> {
    fused.ids.into_iter().zip(fused.scores).collect()
}

/// [`rrf_batch`] for one query. `weights` defaults to 1 for every list.
///
/// # Errors
/// As [`rrf_batch`].
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

// ---------------------------------------------------------------------------------------------
// Weighted linear fusion.

/// Weighted linear fusion of a batch of queries: `score(d) = Σ_i w_i * s_i(d)`, a list that
/// lacks `d` contributing 0.
///
/// Within one list a repeated id keeps its largest score. With `normalize`, each list's
/// (deduplicated) scores are min-max normalised first, `(s - min) / (max - min)`, and a list
/// whose scores are all equal maps every score to 1.0. `scores` is aligned with `ids`; the
/// layout, `weights` and `top_k` are as in [`rrf_batch`].
///
/// # Errors
/// As [`rrf_batch`]; `InvalidValue` for a non-finite score (row = position in `scores`) or
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

// ---------------------------------------------------------------------------------------------
// Additive merge (seed 003).

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

// ---------------------------------------------------------------------------------------------
// Hybrid merge (seed 003's host search).

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
fn by_rank_nan_last(a: &(i64, f64), b: &(i64, f64)) -> Ordering {
    match (a.1.is_nan(), b.1.is_nan()) {
        (false, false) => by_rank(a, b),
        (true, true) => a.0.cmp(&b.0),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

/// A list's `(id, score)` pairs by id, the last of each id kept (as a dict built in order).
fn last_by_id(ids: &[i64], scores: impl Iterator<Item = f64>) -> Vec<(i64, f64)> {
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

// ---------------------------------------------------------------------------------------------
// Dedupe and top-k.

fn check_scored(ids: &[i64], scores: &[f64], offsets: &[usize]) -> Result<usize> {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bits(items: &[(i64, f64)]) -> Vec<(i64, u64)> {
        items.iter().map(|&(id, s)| (id, s.to_bits())).collect()
    }

    #[test]
    fn rrf_hand_computed() {
        let a: &[i64] = &[1, 2, 3];
        let b: &[i64] = &[3, 1];
        let out = rrf(&[a, b], None, 60.0, None).unwrap();
        let s1 = 1.0 / 62.0 + 1.0 / 61.0; // id 1: rank 1 in a, rank 2 in b
        let s3 = 1.0 / 63.0 + 1.0 / 61.0; // id 3: rank 3 in a, rank 1 in b
        let s2 = 1.0 / 62.0;
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].0, 1);
        assert!((out[0].1 - s1).abs() < 1e-15);
        assert_eq!(out[1].0, 3);
        assert!((out[1].1 - s3).abs() < 1e-15);
        assert_eq!(out[2], (2, s2));
    }

    #[test]
    fn rrf_duplicate_counts_once_at_best_rank_and_weights() {
        let a: &[i64] = &[7, 8, 7];
        let out = rrf(&[a], Some(&[2.0]), 0.0, None).unwrap();
        assert_eq!(out, vec![(7, 2.0), (8, 1.0)]);
        let out = rrf(&[a], Some(&[2.0]), 0.0, Some(1)).unwrap();
        assert_eq!(out, vec![(7, 2.0)]);
        assert_eq!(rrf(&[a], None, 60.0, Some(0)).unwrap(), vec![]);
    }

    #[test]
    fn rrf_ties_break_by_id() {
        let a: &[i64] = &[5];
        let b: &[i64] = &[4];
        let out = rrf(&[a, b], None, 60.0, None).unwrap();
        assert_eq!(out, vec![(4, 1.0 / 61.0), (5, 1.0 / 61.0)]);
    }

    #[test]
    fn rrf_validation() {
        let a: &[i64] = &[1];
        for k in [f64::NAN, -1.0, f64::INFINITY] {
            let err = rrf(&[a], None, k, None).unwrap_err();
            assert!(
                matches!(err, Error::InvalidParameter { name: "k", .. }),
                "{err}"
            );
        }
        let err = rrf(&[a], Some(&[f64::NAN]), 60.0, None).unwrap_err();
        assert!(err.to_string().contains("weights[0] = NaN"), "{err}");
        let err = rrf(&[a], Some(&[1.0, 1.0]), 60.0, None).unwrap_err();
        assert!(matches!(
            err,
            Error::LengthMismatch {
                column: "weights",
                ..
            }
        ));
        let err = rrf_batch(&[1, 2], &[0, 2, 1], &[0, 2], &[1.0, 1.0], 60.0, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("list_offsets[2] = 1 < list_offsets[1] = 2"),
            "{err}"
        );
        let err = rrf_batch(&[1, 2], &[0, 1], &[0, 1], &[1.0], 60.0, None).unwrap_err();
        assert!(err.to_string().contains("must end at 2"), "{err}");
        let err = rrf_batch(&[], &[], &[0], &[], 60.0, None).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidParameter {
                name: "list_offsets",
                ..
            }
        ));
        let err = rrf_batch(&[1], &[1, 1], &[0, 1], &[1.0], 60.0, None).unwrap_err();
        assert!(err.to_string().contains("must start at 0"), "{err}");
        let err = rrf_batch(&[1], &[0, 1], &[0, 2], &[1.0], 60.0, None).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidParameter {
                name: "query_offsets",
                ..
            }
        ));
    }

    #[test]
    fn rrf_batch_offsets_and_empty_queries() {
        // Query 0: lists [1, 2] and [2]; query 1: no lists; query 2: list [9].
        let out = rrf_batch(
            &[1, 2, 2, 9],
            &[0, 2, 3, 4],
            &[0, 2, 2, 3],
            &[1.0; 3],
            60.0,
            None,
        )
        .unwrap();
        assert_eq!(out.offsets, vec![0, 2, 2, 3]);
        assert_eq!(out.ids, vec![2, 1, 9]);
        assert_eq!(out.n_queries(), 3);
        assert_eq!(out.query(1).unwrap().0, &[] as &[i64]);
        assert!(out.query(3).is_none());
    }

    #[test]
    fn weighted_hand_computed() {
        let out = weighted(
            &[(&[1, 2], &[0.5, 0.25]), (&[2, 3], &[1.0, 4.0])],
            Some(&[2.0, 0.5]),
            false,
            None,
        )
        .unwrap();
        assert_eq!(out, vec![(3, 2.0), (1, 1.0), (2, 1.0)]);
        // Normalised: list 0 -> {1: 1.0, 2: 0.0}, list 1 -> {2: 0.0, 3: 1.0}.
        let out = weighted(
            &[(&[1, 2], &[0.5, 0.25]), (&[2, 3], &[1.0, 4.0])],
            None,
            true,
            None,
        )
        .unwrap();
        assert_eq!(out, vec![(1, 1.0), (3, 1.0), (2, 0.0)]);
        // All-equal list -> 1.0; duplicate keeps max.
        let out = weighted(&[(&[4, 5, 4], &[0.3, 0.3, 0.1])], None, true, None).unwrap();
        assert_eq!(out, vec![(4, 1.0), (5, 1.0)]);
        let out = weighted(&[(&[4, 4], &[0.1, 0.3])], None, false, None).unwrap();
        assert_eq!(out, vec![(4, 0.3)]);
    }

    #[test]
    fn weighted_validation() {
        let err = weighted(&[(&[1, 2], &[0.5, f64::NAN])], None, false, None).unwrap_err();
        assert_eq!(
            err,
            Error::InvalidValue {
                table: "lists",
                row: 1,
                column: "scores",
                value: "NaN".into(),
                problem: "not finite (NaN or infinite)".into()
            }
        );
        let err = weighted(&[(&[1, 2], &[1e308, -1e308])], None, true, None).unwrap_err();
        assert!(err.to_string().contains("too wide to normalise"), "{err}");
        let err = weighted(
            &[(&[1], &[1e308]), (&[1], &[1e308])],
            Some(&[1e308, 1.0]),
            false,
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidQuery { query: 0, .. }), "{err}");
        let err = weighted_batch(&[1], &[], &[0, 1], &[0, 1], &[1.0], false, None).unwrap_err();
        assert!(matches!(
            err,
            Error::LengthMismatch {
                column: "scores",
                ..
            }
        ));
        let err = weighted(&[(&[1], &[1.0])], Some(&[-1.0]), false, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("weights[0] = -1 must be finite and >= 0"),
            "{err}"
        );
    }

    #[test]
    fn additive_merge_seed_003() {
        // Base (hybrid) results 10, 11, 12; graph results 11, 20..26.
        let base_ids = [10, 11, 12];
        let base_scores = [0.9, 0.5, 0.01];
        let graph_ids = [11, 20, 21, 22, 23, 24, 25];
        let graph_scores = [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2];
        let out = additive_merge(
            (&base_ids, &base_scores),
            (&graph_ids, &graph_scores),
            0.7,
            0.3,
            4,
        )
        .unwrap();
        let expect = vec![
            (10, 0.7 * 0.9 + 0.3 * 0.0, SOURCE_BASE),
            (11, 0.7 * 0.5 + 0.3 * 0.8, SOURCE_BOTH),
            (20, 0.7 * 0.0 + 0.3 * 0.7, SOURCE_GRAPH),
            (21, 0.7 * 0.0 + 0.3 * 0.6, SOURCE_GRAPH),
            (22, 0.7 * 0.0 + 0.3 * 0.5, SOURCE_GRAPH),
            (23, 0.7 * 0.0 + 0.3 * 0.4, SOURCE_GRAPH),
            (12, 0.7 * 0.01 + 0.3 * 0.0, SOURCE_BASE),
        ];
        assert_eq!(out, expect);
        let out = additive_merge((&[], &[]), (&[3, 2], &[1.0, 1.0]), 0.7, 0.3, 1).unwrap();
        assert_eq!(out, vec![(2, 0.3, SOURCE_GRAPH)]);
    }

    #[test]
    fn additive_merge_validation() {
        let err = additive_merge((&[1], &[1.0]), (&[], &[]), f64::NAN, 0.3, 4).unwrap_err();
        assert!(matches!(err, Error::InvalidParameter { name: "alpha", .. }));
        let err = additive_merge((&[1], &[1.0]), (&[], &[]), 0.7, -0.3, 4).unwrap_err();
        assert!(matches!(err, Error::InvalidParameter { name: "beta", .. }));
        let err =
            additive_merge((&[1], &[1.0]), (&[2], &[f64::INFINITY]), 0.7, 0.3, 4).unwrap_err();
        assert!(
            err.to_string().starts_with("graph row 0: scores = inf"),
            "{err}"
        );
        let err = additive_merge_batch(&[1], &[1.0], &[0, 1], &[], &[], &[0, 0, 0], 0.7, 0.3, 4)
            .unwrap_err();
        assert!(matches!(
            err,
            Error::LengthMismatch {
                column: "graph_offsets",
                ..
            }
        ));
    }

    #[test]
    fn dedupe_and_top_k() {
        let ids = [3, 1, 3, 2, 5, 5];
        let scores = [0.1, 0.5, 0.7, 0.5, 1.0, 2.0];
        let out = dedupe_max_batch(&ids, &scores, &[0, 4, 6]).unwrap();
        assert_eq!(out.ids, vec![3, 1, 2, 5]);
        assert_eq!(out.scores, vec![0.7, 0.5, 0.5, 2.0]);
        assert_eq!(out.offsets, vec![0, 3, 4]);
        let out = top_k_batch(&ids, &scores, &[0, 4, 6], 2).unwrap();
        assert_eq!(out.ids, vec![3, 1, 5, 5]);
        assert_eq!(out.scores, vec![0.7, 0.5, 2.0, 1.0]);
        let err = top_k_batch(&ids, &scores[..5], &[0, 6], 2).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { .. }));
        // -0.0 and 0.0 tie, then by id.
        let out = top_k_batch(&[2, 1], &[0.0, -0.0], &[0, 2], 2).unwrap();
        assert_eq!(out.ids, vec![1, 2]);
    }

    #[test]
    fn large_batches_take_the_parallel_path_and_match_single_queries() {
        // 2000 queries x 2 lists x 10 ids = 40000 ids > PAR_THRESHOLD.
        let n_queries = 2000;
        let ids: Vec<i64> = (0..n_queries * 20)
            .map(|i| (i * 7919 % 37) as i64)
            .collect();
        let scores: Vec<f64> = (0..ids.len()).map(|i| (i % 13) as f64 - 6.0).collect();
        assert!(ids.len() > PAR_THRESHOLD);
        let list_offsets: Vec<usize> = (0..=2 * n_queries).map(|l| l * 10).collect();
        let query_offsets: Vec<usize> = (0..=n_queries).map(|q| q * 2).collect();
        let weights = [1.0, 0.5].repeat(n_queries);
        let fused =
            rrf_batch(&ids, &list_offsets, &query_offsets, &weights, 60.0, Some(5)).unwrap();
        let mixed = weighted_batch(
            &ids,
            &scores,
            &list_offsets,
            &query_offsets,
            &weights,
            true,
            None,
        )
        .unwrap();
        let query_rows: Vec<usize> = (0..=n_queries).map(|q| q * 20).collect();
        let top = top_k_batch(&ids, &scores, &query_rows, 3).unwrap();
        let merged = additive_merge_batch(
            &ids,
            &scores,
            &query_rows,
            &ids,
            &scores,
            &query_rows,
            0.7,
            0.3,
            4,
        )
        .unwrap();
        assert_eq!(fused.n_queries(), n_queries);
        for q in (0..n_queries).step_by(97) {
            let (a, b) = (&ids[q * 20..q * 20 + 10], &ids[q * 20 + 10..q * 20 + 20]);
            let (sa, sb) = (
                &scores[q * 20..q * 20 + 10],
                &scores[q * 20 + 10..q * 20 + 20],
            );
            let single = rrf(&[a, b], Some(&[1.0, 0.5]), 60.0, Some(5)).unwrap();
            let (got_ids, got_scores) = fused.query(q).unwrap();
            assert_eq!(
                bits(&single),
                bits(
                    &got_ids
                        .iter()
                        .copied()
                        .zip(got_scores.iter().copied())
                        .collect::<Vec<_>>()
                )
            );
            let single = weighted(&[(a, sa), (b, sb)], Some(&[1.0, 0.5]), true, None).unwrap();
            let (got_ids, got_scores) = mixed.query(q).unwrap();
            assert_eq!(
                bits(&single),
                bits(
                    &got_ids
                        .iter()
                        .copied()
                        .zip(got_scores.iter().copied())
                        .collect::<Vec<_>>()
                )
            );
            let rows = q * 20..q * 20 + 20;
            let single =
                top_k_batch(&ids[rows.clone()], &scores[rows.clone()], &[0, 20], 3).unwrap();
            assert_eq!(top.query(q), single.query(0));
            let single = additive_merge(
                (&ids[rows.clone()], &scores[rows.clone()]),
                (&ids[rows.clone()], &scores[rows]),
                0.7,
                0.3,
                4,
            )
            .unwrap();
            let range = merged.offsets[q]..merged.offsets[q + 1];
            assert_eq!(single.len(), range.len());
            for (i, row) in range.enumerate() {
                assert_eq!(
                    single[i],
                    (merged.ids[row], merged.scores[row], merged.sources[row])
                );
            }
        }
    }

    fn lists_strategy() -> impl Strategy<Value = Vec<Vec<(i64, f64)>>> {
        prop::collection::vec(
            prop::collection::vec((0i64..12, -1.0e3f64..1.0e3), 0..10),
            0..6,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn rrf_is_invariant_under_list_permutation(
            (lists, perm) in lists_strategy().prop_flat_map(|lists| {
                let n = lists.len();
                (Just(lists), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
            }),
            k in 0.0f64..100.0,
            weights in prop::collection::vec(0.0f64..5.0, 6),
        ) {
            let ids: Vec<Vec<i64>> =
                lists.iter().map(|l| l.iter().map(|x| x.0).collect()).collect();
            let refs: Vec<&[i64]> = ids.iter().map(Vec::as_slice).collect();
            let w = &weights[..ids.len()];
            let permuted: Vec<&[i64]> = perm.iter().map(|&i| refs[i]).collect();
            let pw: Vec<f64> = perm.iter().map(|&i| w[i]).collect();
            let a = rrf(&refs, Some(w), k, None).unwrap();
            let b = rrf(&permuted, Some(&pw), k, None).unwrap();
            prop_assert_eq!(bits(&a), bits(&b));
        }

        #[test]
        fn weighted_is_invariant_under_list_permutation(
            (lists, perm) in lists_strategy().prop_flat_map(|lists| {
                let n = lists.len();
                (Just(lists), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
            }),
            normalize in any::<bool>(),
            weights in prop::collection::vec(0.0f64..5.0, 6),
        ) {
            let ids: Vec<Vec<i64>> =
                lists.iter().map(|l| l.iter().map(|x| x.0).collect()).collect();
            let scores: Vec<Vec<f64>> =
                lists.iter().map(|l| l.iter().map(|x| x.1).collect()).collect();
            let pairs: Vec<(&[i64], &[f64])> =
                ids.iter().zip(&scores).map(|(i, s)| (i.as_slice(), s.as_slice())).collect();
            let w = &weights[..ids.len()];
            let permuted: Vec<(&[i64], &[f64])> = perm.iter().map(|&i| pairs[i]).collect();
            let pw: Vec<f64> = perm.iter().map(|&i| w[i]).collect();
            let a = weighted(&pairs, Some(w), normalize, None).unwrap();
            let b = weighted(&permuted, Some(&pw), normalize, None).unwrap();
            prop_assert_eq!(bits(&a), bits(&b));
        }

        #[test]
        fn additive_merge_keeps_every_base_id_and_adds_at_most_max_new(
            base in prop::collection::vec((0i64..20, -10.0f64..10.0), 0..12),
            graph in prop::collection::vec((0i64..20, -10.0f64..10.0), 0..12),
            max_new in 0usize..6,
            alpha in 0.0f64..2.0,
            beta in 0.0f64..2.0,
        ) {
            let (bi, bs): (Vec<i64>, Vec<f64>) = base.iter().copied().unzip();
            let (gi, gs): (Vec<i64>, Vec<f64>) = graph.iter().copied().unzip();
            let out = additive_merge((&bi, &bs), (&gi, &gs), alpha, beta, max_new).unwrap();
            let mut base_set: Vec<i64> = bi.clone();
            base_set.sort_unstable();
            base_set.dedup();
            let mut out_ids: Vec<i64> = out.iter().map(|x| x.0).collect();
            out_ids.sort_unstable();
            let before = out_ids.len();
            out_ids.dedup();
            prop_assert_eq!(before, out_ids.len(), "an id appears twice");
            for id in &base_set {
                prop_assert!(out_ids.binary_search(id).is_ok(), "base id {} dropped", id);
            }
            let new = out.iter().filter(|x| x.2 == SOURCE_GRAPH).count();
            prop_assert!(new <= max_new);
            prop_assert_eq!(out.len(), base_set.len() + new);
            for id in out.iter().filter(|x| x.2 == SOURCE_GRAPH).map(|x| x.0) {
                prop_assert!(base_set.binary_search(&id).is_err());
            }
            for pair in out.windows(2) {
                prop_assert!(by_rank(&(pair[0].0, pair[0].1), &(pair[1].0, pair[1].1)).is_lt());
            }
        }

        #[test]
        fn top_k_equals_prefix_of_full_sort(
            items in prop::collection::vec((0i64..50, prop::sample::select(vec![-1.0, -0.0, 0.0, 0.5, 1.0, 2.5])), 0..40),
            k in 0usize..45,
        ) {
            let (ids, scores): (Vec<i64>, Vec<f64>) = items.iter().copied().unzip();
            let got = top_k_batch(&ids, &scores, &[0, ids.len()], k).unwrap();
            let mut full = items.clone();
            full.sort_by(by_rank);
            full.truncate(k);
            let got: Vec<(i64, f64)> = got.ids.into_iter().zip(got.scores).collect();
            // -0.0 and 0.0 rank equal, so compare with == on scores.
            prop_assert_eq!(got.len(), full.len());
            for (g, f) in got.iter().zip(&full) {
                prop_assert_eq!(g.0, f.0);
                prop_assert!(g.1 == f.1);
            }
        }
    }

    /// The source's form: per-chunk dicts (the last score of a repeated id), the hybrid
    /// score per chunk as written, then a full sort by (score desc, NaN last, id).
    fn hybrid_reference(
        vector: &[(i64, f64)],
        text: &[(i64, f64)],
        vw: f64,
        tw: f64,
        how: TextScore,
        k: usize,
    ) -> Vec<(i64, f64)> {
        let v: std::collections::HashMap<i64, f64> = vector.iter().copied().collect();
        let top = text.first().map_or(0.0, |x| x.1);
        let t: std::collections::HashMap<i64, f64> = text
            .iter()
            .map(|&(id, s)| {
                let ts = match how {
                    TextScore::OpenClaw => 1.0,
                    TextScore::Max if top > 0.0 => s / top,
                    TextScore::Max => 0.0,
                };
                (id, ts)
            })
            .collect();
        let mut out: Vec<(i64, f64)> = v
            .iter()
            .map(|(&id, &vs)| (id, vw * vs + tw * t.get(&id).copied().unwrap_or(0.0)))
            .collect();
        for (&id, &ts) in &t {
            if !v.contains_key(&id) {
                out.push((id, vw * 0.0 + tw * ts));
            }
        }
        out.sort_by(by_rank_nan_last);
        out.truncate(k);
        out
    }

    #[test]
    fn hybrid_merge_seed_003() {
        // Vector: 1 -> 0.9, 2 -> 0.5 (then 0.4: the last wins); text (BM25 best first):
        // 2 -> 4.0, 3 -> 2.0; max-normalised: 2 -> 1.0, 3 -> 0.5.
        let run = |how, k| {
            hybrid_merge_batch(
                &[1, 2, 2],
                &[0.9, 0.5, 0.4],
                &[0, 3],
                &[2, 3],
                &[4.0, 2.0],
                &[0, 2],
                0.7,
                0.3,
                how,
                k,
            )
            .unwrap()
        };
        let got = run(TextScore::Max, 10);
        let want = [
            (1, 0.7 * 0.9 + 0.3 * 0.0),
            (2, 0.7 * 0.4 + 0.3 * 1.0),
            (3, 0.7 * 0.0 + 0.3 * 0.5),
        ];
        let mut want = want.to_vec();
        want.sort_by(by_rank_nan_last);
        assert_eq!(got.ids, want.iter().map(|x| x.0).collect::<Vec<_>>());
        assert_eq!(got.scores, want.iter().map(|x| x.1).collect::<Vec<_>>());
        assert_eq!(got.offsets, vec![0, 3]);
        assert_eq!(run(TextScore::Max, 1).ids, vec![1]);
        assert!(run(TextScore::Max, 0).ids.is_empty());
        let oc = run(TextScore::OpenClaw, 10);
        assert_eq!(oc.ids, vec![1, 2, 3]);
        assert_eq!(oc.scores[1], 0.7 * 0.4 + 0.3 * 1.0);
        assert_eq!(oc.scores[2], 0.7 * 0.0 + 0.3 * 1.0);
        // A query without BM25 scores above 0: text scores 0.0.
        let zero = hybrid_merge_batch(
            &[],
            &[],
            &[0, 0],
            &[5],
            &[0.0],
            &[0, 1],
            0.7,
            0.3,
            TextScore::Max,
            3,
        )
        .unwrap();
        assert_eq!((zero.ids, zero.scores), (vec![5], vec![0.0]));
        // NaN ranks last, as numpy's lexsort puts it.
        let nan = hybrid_merge_batch(
            &[1, 2],
            &[f64::NAN, -1.0],
            &[0, 2],
            &[],
            &[],
            &[0, 0],
            1.0,
            0.0,
            TextScore::Max,
            3,
        )
        .unwrap();
        assert_eq!(nan.ids, vec![2, 1]);
    }

    #[test]
    fn hybrid_merge_errors() {
        let err = hybrid_merge_batch(
            &[1],
            &[],
            &[0, 1],
            &[],
            &[],
            &[0, 0],
            0.7,
            0.3,
            TextScore::Max,
            3,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "vector.scores has 0 rows, expected 1");
        let err = hybrid_merge_batch(
            &[],
            &[],
            &[0],
            &[],
            &[],
            &[0, 0],
            0.7,
            0.3,
            TextScore::Max,
            3,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("text_offsets: holds 1 queries but vector_offsets holds 0"),
            "{err}"
        );
        let err = hybrid_merge_batch(
            &[],
            &[],
            &[0, 2],
            &[],
            &[],
            &[0, 0],
            0.7,
            0.3,
            TextScore::Max,
            3,
        )
        .unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidParameter {
                name: "vector_offsets",
                ..
            }
        ));
        let err = hybrid_merge_batch(
            &[],
            &[],
            &[0, 0],
            &[],
            &[],
            &[0, 0],
            f64::NAN,
            0.3,
            TextScore::Max,
            3,
        )
        .unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidParameter {
                name: "vector_weight",
                ..
            }
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The kernel equals the per-chunk dict form, bit for bit, on batches of queries.
        #[test]
        fn hybrid_merge_equals_the_dict_form(
            queries in prop::collection::vec(
                (
                    prop::collection::vec((0i64..20, prop::sample::select(vec![-0.75, -0.0, 0.0, 0.1, 0.3, 0.9, 1.0])), 0..12),
                    prop::collection::btree_map(0i64..20, prop::sample::select(vec![0.0, 1e-6, 0.5, 1.7, 3.25]), 0..12),
                ),
                0..5,
            ),
            vw in prop::sample::select(vec![0.0, 0.3, 0.7, 1.0, 2.5]),
            tw in prop::sample::select(vec![0.0, 0.3, 0.7, 1.0, 2.5]),
            openclaw in any::<bool>(),
            k in 0usize..25,
        ) {
            let how = if openclaw { TextScore::OpenClaw } else { TextScore::Max };
            let (mut vi, mut vs, mut vo, mut ti, mut ts, mut to) =
                (vec![], vec![], vec![0], vec![], vec![], vec![0]);
            let mut texts = Vec::new();
            for (vector, text) in &queries {
                for &(id, s) in vector {
                    vi.push(id);
                    vs.push(s);
                }
                vo.push(vi.len());
                // BM25 hits come best first.
                let mut t: Vec<(i64, f64)> = text.iter().map(|(&id, &s)| (id, s)).collect();
                t.sort_by(|a, b| b.1.total_cmp(&a.1));
                for &(id, s) in &t {
                    ti.push(id);
                    ts.push(s);
                }
                to.push(ti.len());
                texts.push(t);
            }
            let got = hybrid_merge_batch(&vi, &vs, &vo, &ti, &ts, &to, vw, tw, how, k).unwrap();
            prop_assert_eq!(got.n_queries(), queries.len());
            for (q, (vector, _)) in queries.iter().enumerate() {
                let want = hybrid_reference(vector, &texts[q], vw, tw, how, k);
                let (ids, scores) = got.query(q).unwrap();
                let want_ids: Vec<i64> = want.iter().map(|x| x.0).collect();
                prop_assert_eq!(ids, want_ids.as_slice());
                let to_bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let want_scores: Vec<f64> = want.iter().map(|x| x.1).collect();
                prop_assert_eq!(to_bits(scores), to_bits(&want_scores));
            }
        }
    }
}
